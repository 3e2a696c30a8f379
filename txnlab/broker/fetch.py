"""The Fetch API on a partition leader: consumers, and followers with their fetch sessions.

Owns reading up to the HW (read_uncommitted) or the LSO with the aborted-transaction list
(read_committed), long-poll fetches parked until data arrives (Kafka's DelayedFetch), the
diverging-epoch answer that makes a follower truncate, and KIP-227 incremental fetch sessions.
A mixin of ``Broker``.
"""
# mypy: disable-error-code="attr-defined"
# (a mixin: what it reads of ``self`` is the broker's)
from __future__ import annotations

from typing import Optional

from .._mypyc import new as _new    # object.__new__ (compiled by mypyc: the class call)
from ..protocol import messages as m
from ..protocol.errors import Errors, ProtocolError

try:
    from mypy_extensions import mypyc_attr
except ImportError:         # the lab does not need it (see txnlab/_mypyc.py)
    from .._mypyc import mypyc_attr  # type: ignore[assignment]

# read once per answered partition: a member read through its enum class costs CPython 3.11 a call of the
# class's attribute hook each time
_NONE = Errors.NONE

# The messages of a follower's fetch (its FetchResponse and the FetchPartitionData of a partition with news) are
# built with ``object.__new__`` and their fields set one by one: calling a class with a Python ``__init__`` costs
# CPython 3.11 ~1,200 instructions more, and replication builds them on every round trip.  Every field is set
# (tests/test_fetch_messages.py compares them with what the class builds); a new field goes there too.
# (The protocol's messages are Python classes, never compiled: object.__new__, not txnlab._mypyc.new.)
_new_message = object.__new__


def _fetched(high_watermark: int, last_stable_offset: int, log_start_offset: int, aborted,
             batches) -> m.FetchPartitionData:
    """FetchPartitionData(NONE, HW, LSO, log start, aborted, batches) without the class call (every fetched
    partition of every consumer and follower fetch pays it)."""
    d: m.FetchPartitionData = _new_message(m.FetchPartitionData)
    d.error = _NONE
    d.high_watermark = high_watermark
    d.last_stable_offset = last_stable_offset
    d.log_start_offset = log_start_offset
    d.aborted_transactions = aborted
    d.records = tuple(batches) if batches else ()
    d.diverging_epoch = None
    return d


def _records_answer(tp, log, f, fp, session_id: int):
    """The answer to a follower's fetch whose one news is ``tp``, in the follower's leader epoch and the log's latest
    epoch (not diverged): the records past its position, and the HW it is sent (recorded in its FollowerState ``f``).
    What _read_replica_fetch answers for it, without its loop over partitions; None when there is nothing to send."""
    d: m.FetchPartitionData = _new_message(m.FetchPartitionData)     # _fetched(HW, LSO, log start, None, records)
    d.error = _NONE
    d.high_watermark = f.last_sent_hw = log.high_watermark
    d.last_stable_offset = log.last_stable_offset
    d.log_start_offset = log.log_start_offset
    d.aborted_transactions = None
    last = log._last_append     # log.read_to_end(offset, max bytes) -- a tuple --, its common case inlined
    d.records = last if log._online and len(last) == 1 and last[0].base_offset == fp.fetch_offset \
        else log.read_to_end(fp.fetch_offset, fp.partition_max_bytes)
    d.diverging_epoch = None
    if not d.records:
        return None
    resp: m.FetchResponse = _new_message(m.FetchResponse)  # FetchResponse({tp: d}, 0, session_id)
    resp.partitions = {tp: d}
    resp.error = 0
    resp.session_id = session_id
    return resp


def _epoch_error(fp, p) -> Errors:
    """A fetch that names another leader epoch than the partition's here (KIP-320)."""
    return Errors.FENCED_LEADER_EPOCH if fp.current_leader_epoch < p.leader_epoch else Errors.UNKNOWN_LEADER_EPOCH


class ParkedFetch:
    """A long-poll fetch waiting for news (Kafka's DelayedFetch).

    ``seen``: for a follower's session fetch, the broker's ``isr_version`` when it last looked at every partition
    of its answer (``parts`` and the session's ``dirty``) and found nothing new, with nothing of its session
    changed since; -1 when that is not known (a consumer's fetch, or a session changed while its fetch was read).
    What a follower's fetch finds new in a partition (no leader here, another leader epoch, a diverging epoch, an
    offset other than the LEO) changes only with an append (followed by ``_complete_parked_for`` of that partition,
    which looks at every fetch parked on it), with a partition's leader or epoch (each bumps ``isr_version``; a log
    is truncated only once it follows) or when a partition is dropped (StopReplica, again followed by
    ``_complete_parked_for``).  So while ``seen`` is the ``isr_version``, a wake-up for ``tp`` finds news only if
    ``tp`` has some: one partition to look at, not every one of the answer (most wake-ups are the HW moves of a
    partition, which bring a follower nothing new: its fetch stays parked, as Kafka's DelayedFetch.tryComplete
    finds it)."""
    __slots__ = ("msg", "timer", "tps", "parts", "session", "seen")

    def __init__(self, msg=None, timer=None, tps=None, parts=None, session=None, seen=-1):
        self.msg = msg
        self.timer = timer
        self.tps = tps
        self.parts = parts
        self.session = session
        self.seen = seen


class FetchSession:
    """A follower's incremental fetch session (KIP-227): the leader remembers every partition's
    fetch position, so each request carries only what changed and each response only what is new."""

    __slots__ = ("session_id", "replica_id", "epoch", "partitions", "dirty", "isr_seen")

    def __init__(self, session_id: int, replica_id: int) -> None:
        self.session_id = session_id
        self.replica_id = replica_id
        self.epoch = 1
        self.partitions: dict = {}
        self.dirty: dict = {}      # an ordered set (tp -> None): iteration order must not depend on hashing
        self.isr_seen = -1         # the broker's isr_version when this follower was last in every ISR

    def view(self, changed: dict) -> dict:
        """The partitions worth looking at now: those the request changed, and those with news.  (``changed``
        itself when the news adds nothing to it: neither a request's partitions nor a view are changed once made,
        so a view is copied only when it grows.)"""
        parts = changed
        for tp in self.dirty:
            if tp not in parts:
                fp = self.partitions.get(tp)
                if fp is not None:
                    if parts is changed:
                        parts = changed.copy()
                    parts[tp] = fp
        self.dirty.clear()
        return parts


@mypyc_attr(native_class=False, allow_interpreted_subclasses=True)    # a mixin of Broker (a Python class)
class FetchHandling:
    parked: list        # the broker's ParkedFetches (set in Broker.__init__; _complete_parked_for replaces the list)

    # ---------------------------------------------------------------- fetch
    def handle_Fetch(self, msg):
        req = msg.payload
        sess = None
        parts = req.partitions
        replica = req.replica_id
        wait = req.max_wait_ms
        if replica >= 0:
            self.replica_last_fetch[replica] = self.kernel.now
            session_id = req.session_id
            if session_id >= 0:
                sess = self.fetch_sessions.get(session_id) if session_id > 0 else None
                if sess is not None and sess.replica_id == replica and req.session_epoch == sess.epoch \
                        and not req.forgotten:
                    # (_fetch_session's common case: the next request of a known session, forgetting nothing)
                    sess.epoch += 1
                    if parts:
                        sess.partitions.update(parts)
                else:
                    sess, err = self._fetch_session(req)
                    if err is not None:
                        self.narrate(f"follower {replica}'s fetch session {req.session_id} -> {err.name}; "
                                     f"it must open a new one")
                        return m.FetchResponse({}, err)
                if sess.dirty:
                    parts = sess.view(parts)    # (without news: the request's partitions, as view() answers)
                if sess.isr_seen != self.isr_version:     # (else nothing to look at; isr_version is never negative)
                    self._session_followers_caught_up(replica, sess, parts, req.replica_epoch)
                if len(parts) == 1 and wait > 0:
                    # A follower's long-poll of one partition (after each answer, as every replicated write is
                    # followed).  In the common case -- this broker leads it in the follower's epoch, the follower's
                    # log has not diverged (it fetches in the log's latest epoch), its fetch is not stale and moved its
                    # position (so it is not left out as having nothing new) -- the fetch is recorded and read here:
                    # _read_replica_fetch(req, parts, True, sess, True) without its loop over partitions (nor a call).
                    has_data = False
                    read = True         # (whether _read_replica_fetch reads it: any other case)
                    for tp, fp in parts.items():    # (its one partition)
                        break
                    p = self.partitions.get(tp)
                    f = p.followers.get(replica) if p is not None and p.is_leader else None
                    if f is not None and (fp.current_leader_epoch < 0 or fp.current_leader_epoch == p.leader_epoch):
                        log = p.log
                        offset = fp.fetch_offset
                        last_epoch = fp.last_fetched_epoch
                        entries = log.epoch_entries
                        replica_epoch = req.replica_epoch
                        epochs = self.metadata.broker_epochs
                        if offset <= log.log_end_offset and f.leo != offset \
                                and (last_epoch < 0 or (entries and last_epoch == entries[-1].epoch)) \
                                and (replica_epoch == -1 or replica not in epochs or epochs[replica] <= replica_epoch):
                            read = False
                            p.update_follower(replica, offset, self.kernel.now, replica_epoch)  # (may move the HW)
                            if offset < log.log_end_offset:     # (else a quiet partition, not sent: it parks)
                                resp = _records_answer(tp, log, f, fp, sess.session_id)
                                if resp is not None:
                                    return resp
                    if read:
                        resp, has_data = self._read_replica_fetch(req, parts, True, sess, True)
                else:
                    resp, has_data = self._read_replica_fetch(req, parts, True, sess, wait > 0)
            else:
                resp, has_data = self._read_replica_fetch(req, parts, True, sess, wait > 0)
        else:
            resp, has_data = self._read_fetch(req, parts, True, None, wait > 0)
        if has_data or wait <= 0:
            return resp
        # most long-polls are answered by news before they expire: a timeout lane, no closure per fetch
        timer = self.kernel.schedule_timeout(wait, self.name, ("Fetch long-poll expiry (#%d)", msg.id),
                                             self._expire_parked, msg, self.incarnation)
        pf: ParkedFetch = _new(ParkedFetch)     # ParkedFetch(msg, timer, tps, parts, sess), without the class call
        pf.msg = msg
        pf.timer = timer
        pf.tps = sess.partitions if sess is not None else set(parts)    # a session's fetch waits on all of it
        pf.parts = parts
        pf.session = sess
        # (no news in any partition read, and none marked since in the session: the read may have moved a HW, whose
        # consequences -- a coordinator's next write -- mark what they change)
        pf.seen = self.isr_version if sess is not None and not sess.dirty else -1
        self.parked.append(pf)
        return None

    def _session_followers_caught_up(self, replica: int, sess, parts: dict, replica_epoch: int) -> None:
        """Every partition of a session is fetched by each request, named or not (Kafka rebuilds the full
        request from the session cache): a caught-up follower of an idle partition rejoins the ISR too, on the
        word of this request's broker epoch (KIP-903: each partition's fetch state records it)."""
        if sess.isr_seen == self.isr_version and sess.isr_seen >= 0:
            return      # no ISR changed here since this follower was found in all of them
        get = self.partitions.get
        out = False
        for tp in sess.partitions:
            p = get(tp)
            if p is not None and replica not in p.isr and p.is_leader and replica in p.followers:
                out = True
                if tp not in parts:
                    f = p.followers[replica]
                    if f.broker_epoch != replica_epoch:
                        if self._stale_replica_epoch(replica, replica_epoch):
                            p.stale_broker_epoch(replica, replica_epoch)
                            continue
                        f.broker_epoch = replica_epoch
                    p.maybe_expand_isr(replica, self.kernel.now)
        sess.isr_seen = -1 if out else self.isr_version

    def _stale_replica_epoch(self, replica: int, replica_epoch: int) -> bool:
        """Whether a follower's fetch was sent with an older broker epoch than the registration of that broker this
        broker knows (Replica.updateFetchStateOrThrow, KIP-903): an earlier incarnation's.  -1 is never stale."""
        if replica_epoch == -1:
            return False
        cached = self.metadata.broker_epochs.get(replica)     # (alive_broker_epoch, without the call)
        return cached is not None and cached > replica_epoch

    def _fetch_session(self, req) -> tuple:
        if req.session_id == 0:
            # a follower opens a new session after any error: its old one is evicted
            for sid in [sid for sid, s in self.fetch_sessions.items() if s.replica_id == req.replica_id]:
                del self.fetch_sessions[sid]
            self._next_session_id += 1
            sess = FetchSession(self._next_session_id, req.replica_id)
            self.fetch_sessions[sess.session_id] = sess
            sess.partitions.update(req.partitions)
            return sess, None
        sess = self.fetch_sessions.get(req.session_id)
        if sess is None or sess.replica_id != req.replica_id:
            return None, Errors.FETCH_SESSION_ID_NOT_FOUND
        if req.session_epoch != sess.epoch:
            return None, Errors.INVALID_FETCH_SESSION_EPOCH
        sess.epoch += 1
        sess.partitions.update(req.partitions)
        for tp in req.forgotten:
            sess.partitions.pop(tp, None)
        return sess, None

    def _parked_parts(self, pf) -> dict:
        if pf.session is None:
            return pf.parts
        return pf.session.view(pf.parts)

    def _expire_parked(self, msg) -> None:
        for pf in self.parked:
            if pf.msg is msg:
                self.parked.remove(pf)
                resp, _ = self._read_fetch(msg.payload, self._parked_parts(pf), session=pf.session)
                # an empty answer to a background long-poll stays background (run_until_idle ignores it)
                self.respond(msg, resp, background=msg.background and self._quiet(resp))
                return

    def _complete_parked_for(self, tp) -> None:
        for sess in self.fetch_sessions.values():
            if tp in sess.partitions:
                sess.dirty[tp] = None
        if not self.parked:
            return
        p = self.partitions.get(tp)
        leo = p.log.log_end_offset if p is not None and p.is_leader else None
        if leo is not None:
            entries = p.log.epoch_entries
            latest_epoch = entries[-1].epoch if entries else -1     # (no fetched epoch, >= 0, is -1)
        version = self.isr_version
        # the fetches that stay parked, collected in one pass (reading a parked fetch parks or answers no other)
        waiting = []
        for pf in self.parked:
            if tp in pf.tps:
                if pf.seen == version and leo is not None:
                    # Nothing else of its answer changed since it looked (see ParkedFetch): tp decides.  A follower
                    # fetching tp at its LEO, in this leader's epoch and in the log's latest epoch finds nothing new
                    # there (what _read_replica_fetch would find).
                    fp = pf.parts.get(tp)
                    if fp is None:
                        fp = pf.session.partitions.get(tp)      # (where the session's view finds it)
                    if fp is not None and fp.fetch_offset == leo \
                            and (fp.current_leader_epoch < 0 or fp.current_leader_epoch == p.leader_epoch):
                        epoch = fp.last_fetched_epoch
                        entries = p.log.epoch_entries
                        if epoch < 0 or (entries and entries[-1].epoch == epoch):
                            waiting.append(pf)
                            continue
                req = pf.msg.payload
                if req.replica_id >= 0:
                    sess = pf.session
                    parts = pf.parts
                    if sess is not None:        # _parked_parts(pf)
                        dirty = sess.dirty
                        if tp in parts and tp in dirty and len(dirty) == 1:
                            dirty.clear()       # (the view of news of tp alone, which the fetch names: its parts)
                        else:
                            parts = sess.view(parts)
                    fp = parts.get(tp) if leo is not None and len(parts) == 1 else None
                    f = p.followers.get(req.replica_id) if fp is not None and fp.fetch_offset < leo else None
                    if f is not None and (fp.current_leader_epoch < 0 or fp.current_leader_epoch == p.leader_epoch) \
                            and (fp.last_fetched_epoch < 0 or fp.last_fetched_epoch == latest_epoch):
                        # The common wake-up: tp alone has news for this follower, the records past its position in
                        # the epoch it fetches in.  _read_replica_fetch's answer for it, without the loop (and the
                        # call) over the partitions of an answer.
                        resp = _records_answer(tp, p.log, f, fp, sess.session_id if sess is not None else 0)
                        has_data = resp is not None
                    else:
                        resp, has_data = self._read_replica_fetch(req, parts, False, sess, True)
                else:
                    resp, has_data = self._read_fetch(req, pf.parts, False, None, True)
                if has_data:
                    timer = pf.timer        # Kernel.cancel, inlined: a timeout lane's timer is background
                    if timer is not None and not timer.cancelled:
                        timer.cancelled = True
                        timer.fn = timer.arg = None
                    msg = pf.msg            # self.respond(msg, resp), inlined (once per replicated write; by position)
                    self.kernel.network.send(self.name, msg.src, msg.api, resp, True, msg.correlation_id, False, "",
                                             msg)
                    continue
                if pf.session is not None:
                    pf.parts = parts           # keep what was looked at for the next wake-up
                    pf.seen = version          # (a parked fetch's read moves no HW: it changed nothing)
            waiting.append(pf)
        self.parked = waiting

    def _read_fetch(self, req, parts: Optional[dict] = None, initial: bool = False, session=None,
                    news_only: bool = False) -> tuple:
        """(the FetchResponse, whether it carries news).  ``news_only``: the caller answers only with news (a
        long-poll parks otherwise), so an answer without any is not built: (None, False).  A follower's fetch is
        read by _read_replica_fetch."""
        if req.replica_id >= 0:
            return self._read_replica_fetch(req, req.partitions if parts is None else parts, initial, session,
                                            news_only)
        out: dict = {}      # tp -> FetchPartitionData
        has_data = False
        for tp, fp in (req.partitions if parts is None else parts).items():
            p = self.partitions.get(tp)
            if p is None or not p.is_leader:
                out[tp] = m.FetchPartitionData(self._not_led_error(tp))
                has_data = True
                continue
            if fp.current_leader_epoch >= 0 and fp.current_leader_epoch != p.leader_epoch:
                out[tp] = m.FetchPartitionData(_epoch_error(fp, p))
                has_data = True
                continue
            log = p.log
            committed = req.isolation_level == m.READ_COMMITTED and "ignore-lso" not in self.mutations
            max_offset = log.last_stable_offset if committed else log.high_watermark
            if committed and "lso-ignores-hw" in self.mutations:
                fu = log.first_unstable_offset      # the bug: an LSO that forgets min(.., HW)
                max_offset = fu if fu is not None else log.log_end_offset
            try:
                batches = log.read(fp.fetch_offset, max_offset, fp.partition_max_bytes) if fp.fetch_offset < max_offset else []
            except ProtocolError as e:
                out[tp] = m.FetchPartitionData(e.error, log.high_watermark, log.last_stable_offset, log.log_start_offset)
                has_data = True
                continue
            if fp.fetch_offset > log.log_end_offset or fp.fetch_offset < log.log_start_offset:
                out[tp] = m.FetchPartitionData(Errors.OFFSET_OUT_OF_RANGE, log.high_watermark,
                                               log.last_stable_offset, log.log_start_offset)
                has_data = True
                continue
            aborted = None
            if committed:
                upper = batches[-1].next_offset if batches else fp.fetch_offset
                aborted = tuple(log.collect_aborted_transactions(fp.fetch_offset, min(upper, max_offset)))
            if batches:
                has_data = True
                if self.cluster.auditors:
                    self.cluster.audit("fetch", broker=self.broker_id, tp=tp, isolation=req.isolation_level,
                                       fetch_offset=fp.fetch_offset, last=batches[-1].last_offset,
                                       hw=log.high_watermark, lso=log.last_stable_offset)
            out[tp] = _fetched(log.high_watermark, log.last_stable_offset, log.log_start_offset, aborted, batches)
        if news_only and not has_data:
            return None, False
        resp: m.FetchResponse = _new_message(m.FetchResponse)  # FetchResponse(out, 0, session id or 0)
        resp.partitions = out
        resp.error = 0
        resp.session_id = session.session_id if session is not None else 0
        return resp, has_data

    def _not_led_error(self, tp) -> Errors:
        return Errors.NOT_LEADER_OR_FOLLOWER if tp in self.metadata.partitions else Errors.UNKNOWN_TOPIC_OR_PARTITION

    def _read_replica_fetch(self, req, parts: dict, initial: bool, session, news_only: bool) -> tuple:
        """_read_fetch for a follower (``replica_id`` >= 0): each partition read up to the LEO, after a check that the
        follower's log has not diverged (its last fetched epoch ends at or after its offset here, KIP-320); its
        fetch offset is where its log ends (``initial``: the request's first read, which updates its FollowerState
        and so may move the HW).  A partition with nothing new since the follower's last answer is left out
        (KIP-227); one with nothing to send (no record past its offset, no divergence) in an answer sent only with
        news is written only if the answer is sent: most such reads (a follower's fetch that will park) send
        nothing.

        Only news completes a follower's fetch (Kafka's DelayedFetch: bytes, a diverging epoch or an error); a
        changed HW rides along in the answer but does not wake a parked fetch, so a follower learns the HW one
        fetch later, or when its long-poll expires.  Every answer built is sent (without ``news_only`` it always
        is; with it, only news is built), so the follower's FollowerState learns here which HW it is sent
        (``last_sent_hw``, read by the 'nothing new' test): at once for news, at the end for a quiet entry."""
        # tp -> FetchPartitionData, or for a quiet partition (HW, LSO, log start, FollowerState) as read then, its
        # entry written at the end if the answer is sent
        out: dict = {}
        has_data = False
        replica = req.replica_id
        replica_epoch = req.replica_epoch
        # whether it is a stale fetch (_stale_replica_epoch, inlined): the same for every partition, looked at once
        # per request, by the read that records the fetch
        stale = False
        if initial and replica_epoch != -1:
            epochs = self.metadata.broker_epochs
            stale = replica in epochs and epochs[replica] > replica_epoch     # (no method call: cheaper than get)
        now = self.kernel.now
        get = self.partitions.get
        quiet = False       # whether out holds a quiet partition
        for tp, fp in parts.items():
            p = get(tp)
            if p is None or not p.is_leader:
                out[tp] = m.FetchPartitionData(self._not_led_error(tp))
                has_data = True
                continue
            f = p.followers.get(replica)
            if fp.current_leader_epoch >= 0 and fp.current_leader_epoch != p.leader_epoch:
                out[tp] = m.FetchPartitionData(_epoch_error(fp, p))
                has_data = True
                if f is not None:
                    f.last_sent_hw = -1     # (the HW of that answer: none)
                continue
            log = p.log
            offset = fp.fetch_offset
            leo = log.log_end_offset
            # (a fetch with another broker epoch than the last one recorded is checked by update_follower: an ISR
            # member's fetch whose epoch is the recorded one is not stale -- a fenced broker leaves the ISR before
            # the leader learns of its next registration)
            if f is not None and offset == leo and f.leo == leo and f.last_sent_hw == log.high_watermark \
                    and f.broker_epoch == replica_epoch and replica in p.isr:
                if initial:
                    f.last_caught_up_ms = f.last_fetch_ms = now
                continue        # nothing new here: left out of the response (an incremental fetch, KIP-227)
            last_epoch = fp.last_fetched_epoch
            if last_epoch >= 0:
                entries = log.epoch_entries     # (log.latest_epoch without the property's call)
                if entries and last_epoch == entries[-1].epoch:
                    # the common case: the follower fetched in this leader's latest epoch, which ends at the LEO
                    # (what end_offset_for_epoch answers for it, without the look-up)
                    if offset > leo:
                        out[tp] = self._diverged(p, replica, fp, last_epoch, leo)
                        has_data = True
                        if f is not None:
                            f.last_sent_hw = log.high_watermark
                        continue
                else:
                    epoch, end = log.end_offset_for_epoch(last_epoch)
                    if epoch != last_epoch or end < offset:
                        out[tp] = self._diverged(p, replica, fp, epoch, end)
                        has_data = True
                        if f is not None:
                            f.last_sent_hw = log.high_watermark
                        continue
            if offset > leo:
                out[tp] = m.FetchPartitionData(Errors.OFFSET_OUT_OF_RANGE, log.high_watermark)
                has_data = True
                if f is not None:
                    f.last_sent_hw = log.high_watermark
                continue
            if initial:
                if stale:
                    # a fetch sent by an earlier registration of this broker (KIP-903): nothing recorded or read
                    p.stale_broker_epoch(replica, replica_epoch)
                    out[tp] = m.FetchPartitionData(Errors.NOT_LEADER_OR_FOLLOWER)
                    has_data = True
                    if f is not None:
                        f.last_sent_hw = -1
                    continue
                p.update_follower(replica, offset, now, replica_epoch)  # (may move the HW, and append elsewhere)
                if f is None:
                    f = p.followers.get(replica)            # (its first fetch made it)
                leo = log.log_end_offset
            if offset < leo:
                d = _fetched(log.high_watermark, log.last_stable_offset, log.log_start_offset, None,
                             log.read_to_end(offset, fp.partition_max_bytes))
                if d.records:
                    has_data = True
            elif news_only:
                out[tp] = (log.high_watermark, log.last_stable_offset, log.log_start_offset, f)    # (see quiet)
                quiet = True
                continue
            else:
                d = _fetched(log.high_watermark, log.last_stable_offset, log.log_start_offset, None, ())
            if f is not None:
                f.last_sent_hw = d.high_watermark
            out[tp] = d
        if news_only and not has_data:
            return None, False
        if quiet:
            for tp, e in out.items():
                if e.__class__ is tuple:
                    hw, lso, log_start, f = e
                    out[tp] = _fetched(hw, lso, log_start, None, ())
                    if f is not None:
                        f.last_sent_hw = hw
        resp: m.FetchResponse = _new_message(m.FetchResponse)  # FetchResponse(out, 0, session id or 0)
        resp.partitions = out
        resp.error = 0
        resp.session_id = session.session_id if session is not None else 0
        return resp, has_data

    def _diverged(self, p, replica: int, fp, epoch: int, end: int) -> m.FetchPartitionData:
        """The answer to a follower whose log has diverged from the leader's: where its epoch ends here."""
        log = p.log
        self.narrate(f"{p.name}: follower {replica} has diverged (its epoch {fp.last_fetched_epoch} "
                     f"ends at {end} here); it must truncate")
        return m.FetchPartitionData(_NONE, log.high_watermark, log.last_stable_offset, log.log_start_offset, None,
                                    (), (epoch, end))

