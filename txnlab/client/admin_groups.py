"""The admin client's consumer-group calls (``kafka-consumer-groups.sh``): list_consumer_groups (ListGroups to
every broker), describe_consumer_groups (DescribeGroups), list_consumer_group_offsets (OffsetFetch),
alter_consumer_group_offsets (OffsetCommit with no member: only an Empty group accepts it) and
delete_consumer_groups (DeleteGroups), each to the group's coordinator found with FindCoordinator.
"""
from __future__ import annotations

from ..protocol import messages as m
from ..protocol.errors import Errors
from .admin_future import AdminFuture, kafka_error
from .admin_model import ConsumerGroupState, ConsumerGroupTopicPartitions, ConsumerGroupType, Node
from .admin_types import (ConsumerGroupDescription, ConsumerGroupListing, ListConsumerGroupsResult,
                          MemberAssignment, MemberDescription)
from .message import TopicPartition

PORT = 9092


def _one_request(requests, what: str) -> ConsumerGroupTopicPartitions:
    if not isinstance(requests, list):
        raise TypeError(f"Expected {what} to be a list")
    if len(requests) != 1:
        raise ValueError("Currently we support listing offsets for a single consumer group only")
    req = requests[0]
    if not isinstance(req, ConsumerGroupTopicPartitions):
        raise TypeError("Expected list of 'ConsumerGroupTopicPartitions'")
    return req


class GroupAdmin:
    """Mixed into ``AdminClient``."""

    def list_consumer_groups(self, **kwargs) -> AdminFuture:
        """ListGroups to every live broker (each lists the groups it coordinates):
        Future(ListConsumerGroupsResult).  kwargs: states (a set of ConsumerGroupState), request_timeout."""
        names = {ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
                 ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
                 ConsumerGroupState.STABLE: "Stable", ConsumerGroupState.DEAD: "Dead",
                 ConsumerGroupState.EMPTY: "Empty"}
        states = tuple(sorted(names[s] for s in kwargs.get("states", ()) if s in names))
        f = self._future()
        valid, errors, waiting = [], [], set()

        def listed(broker, resp, err):
            waiting.discard(broker)
            if err is not None or resp.error_code:
                errors.append(self._request_error(err) if err is not None else kafka_error(resp.error_code))
            else:
                valid.extend(ConsumerGroupListing(g.group_id, g.protocol_type == "",
                                                  ConsumerGroupState.from_kafka(g.group_state),
                                                  ConsumerGroupType.CLASSIC) for g in resp.groups)
            if not waiting:
                f.resolve(ListConsumerGroupsResult(sorted(valid, key=lambda g: g.group_id), errors))

        def brokers(nodes, err):
            if err is not None:
                f.resolve(error=self._request_error(err))
                return
            waiting.update(nodes)
            for b in nodes:
                self._send(b, m.ListGroupsRequest(states), lambda r, e, b=b: listed(b, r, e))
            if not nodes:
                f.resolve(ListConsumerGroupsResult([], []))
        self._live_broker_nodes(brokers)
        return f

    def _per_group(self, group_ids, make_request, error_of, on_answer, kwargs: dict) -> dict:
        if not isinstance(group_ids, list):
            raise TypeError("Expected group ids to be a list")
        deadline = self._deadline(kwargs)
        out = {}
        for gid in group_ids:
            f = out[gid] = self._future()

            def then(resp, err, f=f, gid=gid):
                if err is not None:
                    f.resolve(error=self._request_error(err))
                else:
                    on_answer(f, gid, resp)
            self._send_to_coordinator(gid, m.COORDINATOR_GROUP, make_request(gid), error_of, then, deadline)
        return out

    def describe_consumer_groups(self, group_ids, **kwargs) -> dict:
        """DescribeGroups to each group's coordinator: {group_id: Future(ConsumerGroupDescription)}."""
        def answer(f, gid, resp):
            g = resp.groups[0]
            if g.error_code:
                f.resolve(error=kafka_error(g.error_code))
                return
            coord = self._coordinator_of(gid)
            members = [MemberDescription(mm.member_id, mm.client_id, mm.client_host, MemberAssignment(
                [TopicPartition(t, p) for t, p in mm.member_assignment]), mm.group_instance_id) for mm in g.members]
            f.resolve(ConsumerGroupDescription(gid, g.protocol_type == "", members, g.protocol_data,
                                               ConsumerGroupState.from_kafka(g.group_state), coord,
                                               type=ConsumerGroupType.CLASSIC))
        return self._per_group(group_ids, lambda gid: m.DescribeGroupsRequest((gid,)),
                               lambda r: r.groups[0].error_code, answer, kwargs)

    def _coordinator_of(self, gid: str):
        node = self._coordinators.get((gid, m.COORDINATOR_GROUP))
        return None if node is None else Node(int(node.split("-")[-1]), node, PORT)

    def delete_consumer_groups(self, group_ids, **kwargs) -> dict:
        """DeleteGroups to each group's coordinator (only an Empty group can go): {group_id: Future(None)}."""
        def answer(f, gid, resp):
            code = resp.results[0].error_code
            f.resolve(None, kafka_error(code) if code else None)
        return self._per_group(group_ids, lambda gid: m.DeleteGroupsRequest((gid,)),
                               lambda r: r.results[0].error_code, answer, kwargs)

    def list_consumer_group_offsets(self, list_consumer_group_offsets_request, **kwargs) -> dict:
        """OffsetFetch: {group_id: Future(ConsumerGroupTopicPartitions)} with each partition's committed offset
        (-1001, OFFSET_INVALID, when none).  kwargs: require_stable (KIP-447), request_timeout."""
        req = _one_request(list_consumer_group_offsets_request, "request")
        tps = None if req.topic_partitions is None else tuple((tp.topic, tp.partition) for tp in req.topic_partitions)
        fetch = m.OffsetFetchRequest(req.group_id, tps, bool(kwargs.get("require_stable", False)))

        def answer(f, gid, resp):
            if resp.error:
                f.resolve(error=kafka_error(resp.error))
                return
            out = []
            for (t, p), (off, epoch, meta, err) in sorted(resp.offsets.items()):
                tp = TopicPartition(t, p, off if off >= 0 else -1001, meta or None, epoch)
                tp.error = kafka_error(err) if err else None
                out.append(tp)
            f.resolve(ConsumerGroupTopicPartitions(gid, out))
        return self._per_group([req.group_id], lambda gid: fetch, lambda r: r.error, answer, kwargs)

    def alter_consumer_group_offsets(self, alter_consumer_group_offsets_request, **kwargs) -> dict:
        """OffsetCommit with generation -1 and no member id (what kafka-consumer-groups.sh --reset-offsets sends):
        {group_id: Future(ConsumerGroupTopicPartitions)}; a group with members refuses it per partition
        (UNKNOWN_MEMBER_ID), shown as each TopicPartition's ``error``."""
        req = _one_request(alter_consumer_group_offsets_request, "request")
        if not req.topic_partitions:
            raise ValueError("Non empty topic partition list must be present")
        offsets = {(tp.topic, tp.partition): (tp.offset, -1 if tp.leader_epoch is None else tp.leader_epoch,
                                              tp.metadata or "") for tp in req.topic_partitions}
        commit = m.OffsetCommitRequest(req.group_id, -1, "", None, offsets)

        def first_error(resp):
            errs = [e for e in resp.errors.values() if e]
            return errs[0] if errs else Errors.NONE

        def answer(f, gid, resp):
            out = []
            for (t, p), err in sorted(resp.errors.items()):
                tp = TopicPartition(t, p, offsets[(t, p)][0])
                tp.error = kafka_error(err) if err else None
                out.append(tp)
            f.resolve(ConsumerGroupTopicPartitions(gid, out))
        return self._per_group([req.group_id], lambda gid: commit, first_error, answer, kwargs)
