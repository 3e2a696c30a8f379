"""ListGroups, DescribeGroups, DeleteGroups and DescribeCluster: what ``kafka-consumer-groups.sh`` and
``kafka-cluster.sh`` send.

ListGroups is asked of every broker (each lists the groups it coordinates);
DescribeGroups and DeleteGroups go to a group's coordinator; DescribeCluster to
any broker, which answers from the metadata it holds.
"""
from __future__ import annotations

from typing import Optional

from ..message_base import _err, message


# ------------------------------------------------------------------ ListGroups
@message
class ListGroupsRequest:
    API = "ListGroups"
    API_KEY = 16
    states_filter: tuple = ()          # KIP-518: only groups in these states ("Stable", ...); () = all

    def describe(self) -> str:
        return "states " + ", ".join(self.states_filter) if self.states_filter else "all groups"


@message
class ListedGroup:
    group_id: str
    protocol_type: str                 # "consumer", or "" for a group that only commits offsets
    group_state: str


@message
class ListGroupsResponse:
    error_code: int
    groups: tuple = ()                 # (ListedGroup, ...)

    def describe(self) -> str:
        return _err(self.error_code) if self.error_code else f"{len(self.groups)} group(s)"


# --------------------------------------------------------------- DescribeGroups
@message
class DescribeGroupsRequest:
    API = "DescribeGroups"
    API_KEY = 15
    groups: tuple                      # (group_id, ...)

    def describe(self) -> str:
        return ", ".join(self.groups)


@message
class DescribedGroupMember:
    member_id: str
    group_instance_id: Optional[str]
    client_id: str
    client_host: str
    member_assignment: tuple           # ((topic, partition), ...)


@message
class DescribedGroup:
    error_code: int
    group_id: str
    group_state: str = "Dead"
    protocol_type: str = ""
    protocol_data: str = ""            # the chosen assignor ("range", ...)
    members: tuple = ()                # (DescribedGroupMember, ...)


@message
class DescribeGroupsResponse:
    groups: tuple                      # (DescribedGroup, ...)

    def describe(self) -> str:
        return "; ".join(f"{g.group_id}: {_err(g.error_code) if g.error_code else g.group_state}"
                         for g in self.groups)


# ----------------------------------------------------------------- DeleteGroups
@message
class DeleteGroupsRequest:
    API = "DeleteGroups"
    API_KEY = 42
    groups_names: tuple                # (group_id, ...)

    def describe(self) -> str:
        return ", ".join(self.groups_names)


@message
class DeletableGroupResult:
    group_id: str
    error_code: int


@message
class DeleteGroupsResponse:
    results: tuple                     # (DeletableGroupResult, ...)

    def describe(self) -> str:
        return "; ".join(f"{r.group_id}: {_err(r.error_code)}" for r in self.results)


# -------------------------------------------------------------- DescribeCluster
@message
class DescribeClusterRequest:
    API = "DescribeCluster"
    API_KEY = 60

    def describe(self) -> str:
        return "brokers, controller, cluster id"


@message
class DescribeClusterResponse:
    error_code: int
    cluster_id: str = ""
    controller_id: int = -1
    brokers: tuple = ()                # (broker id, ...)

    def describe(self) -> str:
        return _err(self.error_code) if self.error_code else f"cluster {self.cluster_id}, brokers {list(self.brokers)}"
