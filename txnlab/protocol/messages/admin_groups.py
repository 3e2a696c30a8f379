"""ListGroups, DescribeGroups, DeleteGroups and DescribeCluster: what ``kafka-consumer-groups.sh`` and
``kafka-cluster.sh`` send.

ListGroups is asked of every broker (each lists the groups it coordinates);
DescribeGroups and DeleteGroups go to a group's coordinator; DescribeCluster to
any broker, which answers from the metadata it holds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..message_base import _err


# ------------------------------------------------------------------ ListGroups
@dataclass(frozen=True, slots=True)
class ListGroupsRequest:
    API = "ListGroups"
    API_KEY = 16
    states_filter: tuple = ()          # KIP-518: only groups in these states ("Stable", ...); () = all

    def describe(self) -> str:
        return "states " + ", ".join(self.states_filter) if self.states_filter else "all groups"


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str                 # "consumer", or "" for a group that only commits offsets
    group_state: str


@dataclass(frozen=True, slots=True)
class ListGroupsResponse:
    error_code: int
    groups: tuple = ()                 # (ListedGroup, ...)

    def describe(self) -> str:
        return _err(self.error_code) if self.error_code else f"{len(self.groups)} group(s)"


# --------------------------------------------------------------- DescribeGroups
@dataclass(frozen=True, slots=True)
class DescribeGroupsRequest:
    API = "DescribeGroups"
    API_KEY = 15
    groups: tuple                      # (group_id, ...)

    def describe(self) -> str:
        return ", ".join(self.groups)


@dataclass(frozen=True, slots=True)
class DescribedGroupMember:
    member_id: str
    group_instance_id: Optional[str]
    client_id: str
    client_host: str
    member_assignment: tuple           # ((topic, partition), ...)


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    error_code: int
    group_id: str
    group_state: str = "Dead"
    protocol_type: str = ""
    protocol_data: str = ""            # the chosen assignor ("range", ...)
    members: tuple = ()                # (DescribedGroupMember, ...)


@dataclass(frozen=True, slots=True)
class DescribeGroupsResponse:
    groups: tuple                      # (DescribedGroup, ...)

    def describe(self) -> str:
        return "; ".join(f"{g.group_id}: {_err(g.error_code) if g.error_code else g.group_state}"
                         for g in self.groups)


# ----------------------------------------------------------------- DeleteGroups
@dataclass(frozen=True, slots=True)
class DeleteGroupsRequest:
    API = "DeleteGroups"
    API_KEY = 42
    groups_names: tuple                # (group_id, ...)

    def describe(self) -> str:
        return ", ".join(self.groups_names)


@dataclass(frozen=True, slots=True)
class DeletableGroupResult:
    group_id: str
    error_code: int


@dataclass(frozen=True, slots=True)
class DeleteGroupsResponse:
    results: tuple                     # (DeletableGroupResult, ...)

    def describe(self) -> str:
        return "; ".join(f"{r.group_id}: {_err(r.error_code)}" for r in self.results)


# -------------------------------------------------------------- DescribeCluster
@dataclass(frozen=True, slots=True)
class DescribeClusterRequest:
    API = "DescribeCluster"
    API_KEY = 60

    def describe(self) -> str:
        return "brokers, controller, cluster id"


@dataclass(frozen=True, slots=True)
class DescribeClusterResponse:
    error_code: int
    cluster_id: str = ""
    controller_id: int = -1
    brokers: tuple = ()                # (broker id, ...)

    def describe(self) -> str:
        return _err(self.error_code) if self.error_code else f"cluster {self.cluster_id}, brokers {list(self.brokers)}"
