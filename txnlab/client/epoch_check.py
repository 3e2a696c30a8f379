"""KIP-320's position check, a mixin of the consumer's ``Fetcher``: after a partition's leader epoch went up (a new
leader), the consumer asks the new leader where the leader epoch of its position ends (OffsetForLeaderEpoch) before
it fetches again, to learn whether the log it read was truncated under it.

Both clients do it, when the position carries a leader epoch (the epoch of the batch it was read from, the one
ListOffsets answered for a reset, or the one a committed offset was committed with -- when the consumer resumes
from it, see ``restored``; a seek or a committed offset without one is not checked):
- librdkafka: ``rd_kafka_toppar_leader_update`` (rdkafka_topic.c) puts a partition whose epoch increased in
  VALIDATE_EPOCH_WAIT and ``rd_kafka_offset_validate`` (rdkafka_offset.c) sends the request;
  ``rd_kafka_toppar_handle_OffsetForLeaderEpoch`` retries an error after 500 ms with the metadata refreshed, resets
  by ``auto.offset.reset`` when no epoch is found (_LOG_TRUNCATION), seeks to the end offset when it is below the
  position, and else fetches on;
- Java: ``SubscriptionState.maybeValidatePositionForCurrentLeader`` (AWAIT_VALIDATION), ``OffsetsForLeaderEpochUtils``
  and ``SubscriptionState.maybeCompleteValidation``: the same outcomes (an undefined answer requests a reset, an end
  offset below the position a seek to it), retried after retry.backoff.ms.
With clean leader elections nothing a consumer read is truncated, so the answer lets it read on; an unclean one
(``--mutation unclean-election``) can truncate it.
"""
from __future__ import annotations

from ..errors import KafkaError
from ..protocol import messages as m
from ..protocol.errors import Errors
from .config import dialect_of
from .dialect import LIBRDKAFKA

NEVER_FETCHED, CHECK_NOW = -1, -2        # PartitionState.fetched_epoch before any fetch; after a seek with an epoch

LIBRDKAFKA_RETRY_MS = 500       # rd_kafka_toppar_handle_OffsetForLeaderEpoch: rktp_validate_tmr, 500 ms


class EpochCheck:
    """Mixed into ``Fetcher`` (which owns ``states``, ``node``, ``narrate``, ``_backoff``, ``send_fetches``).  A
    partition's position is checked before it is fetched again when it carries an epoch and was last fetched (or
    checked) under an older leader epoch than its leader's now (``Fetcher.send_fetches`` asks, in its loop)."""

    def restored(self, tp: tuple, st, epoch: int) -> None:
        """``st``'s position was just set to its committed offset, committed with leader ``epoch`` (-1: none).
        Java checks it before fetching from it (ConsumerUtils.refreshCommittedOffsets -> SubscriptionState
        .seekUnvalidated: AWAIT_VALIDATION when the position has an epoch and the leader's is known);
        librdkafka fetches from it at once (rd_kafka_assignment_apply_offsets -> rd_kafka_toppar_fetch_start:
        FETCH_ACTIVE at that position and epoch) and checks it only if the partition's leader epoch goes up
        after that (rd_kafka_toppar_leader_update), as a position it fetched from -- which it does at the first
        metadata that names an epoch when it knew none yet (rktp_leader_epoch -1: any epoch is higher, and
        rd_kafka_offset_validate, in FETCH_ACTIVE, asks before the next Fetch)."""
        name = f"{self.c.name} resumes {tp[0]}-{tp[1]} at its committed offset {st.position}"
        st.position_epoch = epoch if epoch >= 0 else None
        if epoch < 0:
            self.narrate(name)
        elif dialect_of(self.cfg) == LIBRDKAFKA:
            known = self.node.leader_epoch_for(tp)                 # (rktp_leader_epoch; -1: none known yet)
            if known >= 0:
                st.fetched_epoch = known
                self.narrate(f"{name} (leader epoch {epoch}): it fetches from there and checks the position only if "
                             f"the leader epoch goes up")
            else:
                st.fetched_epoch = CHECK_NOW
                self.narrate(f"{name} (leader epoch {epoch}); it knows no leader epoch of {tp[0]}-{tp[1]} yet: the "
                             f"metadata that brings one is an epoch going up, and it checks the position then")
        else:
            st.fetched_epoch = CHECK_NOW
            self.narrate(f"{name} (leader epoch {epoch}): it checks that position before fetching from it")

    def check_positions(self, asks: dict) -> None:
        """One OffsetForLeaderEpoch per leader: ``asks`` {leader: {tp: current leader epoch}}."""
        for leader, parts in sorted(asks.items()):
            todo = {}
            for tp, epoch in parts.items():
                st = self.states[tp]
                if st.checking:
                    continue
                st.checking = True
                todo[tp] = (epoch, st.position_epoch)
                why = f"was seeked to offset {st.position} in leader epoch {st.position_epoch}; before fetching from it" \
                    if st.fetched_epoch < 0 else f"has a new leader (epoch {st.fetched_epoch} -> {epoch}); before " \
                    f"fetching from offset {st.position} again"
                self.narrate(f"{self.c.name}: {tp[0]}-{tp[1]} {why} it asks where leader epoch {st.position_epoch} ends "
                             f"there (OffsetForLeaderEpoch, KIP-320)")
            if todo:
                self.node.send_request(leader, m.OffsetForLeaderEpochRequest(m.CONSUMER_REPLICA_ID, todo),
                                       self._on_checked(todo, {tp: self.states[tp].position for tp in todo}),
                                       background=True)

    def _on_checked(self, asked: dict, positions: dict):
        def cb(resp, err):
            retry = []
            for tp in asked:
                st = self.states.get(tp)
                if st is not None:
                    st.checking = False
            if err is not None:
                retry = list(asked)
            else:
                for tp, (e, end_epoch, end_offset) in sorted(resp.partitions.items()):
                    st = self.states.get(tp)
                    if st is None or tp not in asked or st.position != positions[tp]:
                        continue            # unassigned or seeked meanwhile: the answer is outdated
                    if e != Errors.NONE:
                        retry.append(tp)
                    else:
                        self._checked(tp, st, asked[tp][0], end_epoch, end_offset)
            if retry:
                self.narrate(f"{self.c.name}: the position check of {', '.join(f'{t}-{p}' for t, p in retry)} "
                             f"failed ({(err or Errors(resp.partitions[retry[0]][0])).name}); it refreshes metadata "
                             f"and asks again")
                self._backoff(retry, LIBRDKAFKA_RETRY_MS if dialect_of(self.cfg) == LIBRDKAFKA else None)
                self.node.request_metadata(tuple(sorted({t for t, _ in retry})))
            self._wake()            # (a reset asks ListOffsets; the others fetch)
        return cb

    def _checked(self, tp: tuple, st, epoch: int, end_epoch: int, end_offset: int) -> None:
        name = f"{tp[0]}-{tp[1]}"
        if end_offset < 0 or end_epoch < 0:
            policy = self.cfg["auto.offset.reset"]
            self.narrate(f"{self.c.name}: the leader knows no epoch at or below {st.position_epoch} for {name}: its "
                         f"log was truncated under offset {st.position} -> auto.offset.reset={policy}")
            if policy == "error":
                self.events.append(self._error_message(tp, KafkaError(
                    KafkaError._LOG_TRUNCATION, f"{name}: log truncation detected at offset {st.position}"),
                    st.position))
                st.position = None
            else:
                st.position = None
                st.reset_strategy = policy
            return
        st.fetched_epoch = epoch
        if end_offset < st.position:
            policy = self.cfg["auto.offset.reset"]
            self.narrate(f"{self.c.name}: leader epoch {end_epoch} of {name} ends at {end_offset}, below its position "
                         f"{st.position}: the log was truncated" + (
                             f"; it goes on from {end_offset}" if policy != "error" else " (auto.offset.reset=error)"))
            if policy == "error":
                self.events.append(self._error_message(tp, KafkaError(
                    KafkaError._LOG_TRUNCATION, f"{name}: log truncation detected at offset {st.position}"),
                    st.position))
                st.position = None
                return
            st.position = end_offset
            st.position_epoch = end_epoch
        else:
            self.narrate(f"{self.c.name}: leader epoch {st.position_epoch} of {name} ends at {end_offset}, at or "
                         f"after its position {st.position}: nothing it read was truncated; it fetches on")
