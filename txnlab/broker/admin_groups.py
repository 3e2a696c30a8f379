"""A broker's group and cluster admin APIs: ListGroups, DescribeGroups, DeleteGroups, DescribeCluster.

Owns the authorization and the routing (Kafka's ``KafkaApis``): the group APIs are answered by this
broker's group coordinator (``coordinator/group_admin.py``), DescribeCluster from the metadata this broker
holds.
"""
from __future__ import annotations

from ..coordinator import group_admin
from ..protocol import messages as m
from ..protocol.errors import Errors
from .authorizer import CLUSTER_RESOURCE


class GroupAdminHandling:
    """Mixed into ``Broker`` (through ``AdminHandling``)."""

    def handle_ListGroups(self, msg):
        resp = group_admin.list_groups(self.group_coordinator, tuple(msg.payload.states_filter))
        if resp.error_code or self._allowed(msg, "CLUSTER", CLUSTER_RESOURCE, "DESCRIBE"):
            return resp
        # without DESCRIBE on the cluster, a principal sees the groups it may DESCRIBE (Kafka's KafkaApis)
        return m.ListGroupsResponse(Errors.NONE, tuple(g for g in resp.groups
                                                       if self._allowed(msg, "GROUP", g.group_id, "DESCRIBE")))

    def handle_DescribeGroups(self, msg):
        out = []
        for gid in msg.payload.groups:
            if not self._allowed(msg, "GROUP", gid, "DESCRIBE"):
                self.narrate(f"{self.cluster.principal_of(msg.src)} may not DESCRIBE group {gid!r} "
                             f"-> GROUP_AUTHORIZATION_FAILED")
                out.append(m.DescribedGroup(Errors.GROUP_AUTHORIZATION_FAILED, gid))
            else:
                out.append(group_admin.describe_group(self.group_coordinator, gid))
        return m.DescribeGroupsResponse(tuple(out))

    def handle_DeleteGroups(self, msg):
        """Answered once the coordinator's tombstones are replicated (``group_admin.delete_groups``)."""
        gids = list(msg.payload.groups_names)
        errors: list = [None] * len(gids)
        for i, gid in enumerate(gids):
            if not self._allowed(msg, "GROUP", gid, "DELETE"):
                self.narrate(f"{self.cluster.principal_of(msg.src)} may not DELETE group {gid!r} "
                             f"-> GROUP_AUTHORIZATION_FAILED")
                errors[i] = Errors.GROUP_AUTHORIZATION_FAILED
        todo = [i for i, e in enumerate(errors) if e is None]

        def answer(found: list) -> None:
            for i, err in zip(todo, found):
                errors[i] = err
            self.respond(msg, m.DeleteGroupsResponse(tuple(m.DeletableGroupResult(g, e) for g, e in zip(gids, errors))))

        group_admin.delete_groups(self.group_coordinator, [gids[i] for i in todo], answer)
        return None

    def handle_DescribeCluster(self, msg):
        live = tuple(self.metadata.live_brokers)
        # KRaft's controllers are not brokers: Kafka answers a random live broker as "controller" for old
        # clients; the lab answers the lowest live broker id (no random draw, so no other step changes).
        return m.DescribeClusterResponse(Errors.NONE, self.cluster.cluster_id, min(live) if live else -1, live)
