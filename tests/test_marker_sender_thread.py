"""When the transaction coordinator's marker sender (Kafka's TxnMarkerSenderThread, an InterBrokerSendThread) sends
a marker again: a marker whose partition has no available leader waits in markersQueueForUnknownBroker while the
thread loops without pausing, so it goes out in the loop right after the coordinator's metadata cache names a
leader; a retriable error is sent again on the thread's next loop, at once; a request that got no answer is
retried after the sender's reconnect backoff (50 ms)."""
from __future__ import annotations

from txnlab import Cluster, Producer


def _marker_requests(c, tp):
    return [msg for msg in c.network_messages() if msg.api == "WriteTxnMarkers" and not msg.is_response
            and any(tp in entry.partitions for entry in msg.payload.markers)]


def _leaderless_commit():
    """A transaction over orders-0 and an audit partition whose only replica's broker crashes before the commit."""
    c = Cluster(brokers=3, seed=4)
    c.create_topic("orders", partitions=1, replication_factor=3)
    c.create_topic("audit", partitions=3, replication_factor=1)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "auditor"})
    p.init_transactions()
    coord = c.transaction_coordinator("auditor")
    audit_p = [i for i in range(3) if c.leader("audit", i) not in (coord, c.leader("orders", 0))][0]
    audit_broker = c.leader("audit", audit_p)
    p.begin_transaction()
    p.produce("orders", value=b"order 7", partition=0)
    p.produce("audit", value=b"order 7 audited", partition=audit_p)
    p.flush()
    c.crash(audit_broker)
    p.commit_transaction()
    return c, coord, ("audit", audit_p), audit_broker


def test_a_leaderless_marker_is_sent_in_the_loop_right_after_the_metadata_names_its_leader():
    c, coord, tp, audit_broker = _leaderless_commit()
    c.advance(20_000)
    markers = c.broker(coord).txn_coordinator.markers
    assert [tps for _, tps in markers.queue_for_unknown_broker] == [(tp,)]
    assert c.transaction_state("auditor")["state"] == "PrepareCommit"
    sent_while_down = len(_marker_requests(c, tp))
    restarted_at = c.now
    c.restart(audit_broker)
    c.run_until(lambda: c.transaction_state("auditor")["state"] == "CompleteCommit", timeout_ms=60_000)
    # the LeaderAndIsr that told the coordinator's broker the partition's new leader
    told = [e for e in c.trace.filter(include_background=True) if e.time >= restarted_at and e.api == "LeaderAndIsr"
            and not e.is_response and e.node == f"broker-{coord}" and f"{tp[0]}-{tp[1]} leader {audit_broker}" in e.text]
    resent = _marker_requests(c, tp)[sent_while_down:]
    assert told and resent
    assert resent[0].sent_at == told[0].time       # no wait: the spinning thread saw the new metadata at once
    loop = [e for e in c.trace.filter(include_background=True) if e.step == resent[0].sent_step]
    assert "spinning while markersQueueForUnknownBroker holds markers" in loop[0].text
    assert not markers.queue_for_unknown_broker
    assert [b.describe() for b in c.log(*tp).batches if b.is_control][-1].startswith("COMMIT")


def test_no_marker_request_goes_out_while_the_partition_has_no_leader():
    c, coord, tp, audit_broker = _leaderless_commit()
    c.advance(1_000)
    before = len(_marker_requests(c, tp))
    c.advance(20_000)
    assert len(_marker_requests(c, tp)) == before       # it waits in the unknown-broker queue, nothing is sent
    said = [line for e in c.trace.events for line in e.details]
    assert any(f"{tp[0]}-{tp[1]} has no available leader; its markers wait in markersQueueForUnknownBroker" in line
               for line in said)


def test_a_retriable_error_is_sent_again_on_the_next_loop_without_backoff():
    c = Cluster(brokers=3, seed=2)
    c.create_topic("t", partitions=1, replication_factor=2, config={"min.insync.replicas": 2})
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"v", partition=0)
    p.flush()
    leader = c.leader("t", 0)
    follower = [b for b in c.partition_state("t", 0)["isr"] if b != leader][0]
    c.crash(follower)
    c.advance(15_000)                                   # fenced: the ISR is the leader alone, below min.insync
    assert c.partition_state("t", 0)["isr"] == [leader]
    p.commit_transaction()
    c.advance(300)
    reqs = _marker_requests(c, ("t", 0))
    resps = {msg.correlation_id: msg for msg in c.network_messages()
             if msg.api == "WriteTxnMarkers" and msg.is_response and msg.src == f"broker-{leader}"}
    assert len(reqs) > 20                               # a request per round trip, for as long as it fails
    for prev, nxt in zip(reqs, reqs[1:]):
        answer = resps[prev.correlation_id]
        assert answer.payload.markers[prev.payload.markers[0].producer_id][("t", 0)] == 19   # NOT_ENOUGH_REPLICAS
        assert nxt.sent_at == answer.deliver_at         # sent again when the answer arrived: no backoff
    assert not [b for b in c.log("t", 0).batches if b.is_control]
    c.restart(follower)
    assert c.run_until(lambda: c.transaction_state("tx")["state"] == "CompleteCommit", timeout_ms=60_000)


def test_a_marker_request_that_got_no_answer_is_retried_after_the_reconnect_backoff():
    c = Cluster(brokers=3, seed=1)
    c.create_topic("t", partitions=2, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx"})
    p.init_transactions()
    coord = c.transaction_coordinator("tx")
    part = [i for i in range(2) if c.leader("t", i) != coord][0]
    p.begin_transaction()
    p.produce("t", value=b"v", partition=part)
    p.flush()
    c.drop_next("WriteTxnMarkers", src=coord, dst=c.leader("t", part))
    p.commit_transaction()
    c.run_until(lambda: c.transaction_state("tx")["state"] == "CompleteCommit", timeout_ms=10_000)
    failed = [e for e in c.trace.events if any("got no answer (NETWORK_EXCEPTION)" in d for d in e.details)]
    reqs = _marker_requests(c, ("t", part))
    assert len(failed) == 1 and len(reqs) == 2
    assert reqs[1].sent_at - failed[0].time == 50       # reconnect.backoff.ms of the marker sender's NetworkClient
    wake = [e for e in c.trace.events if e.step == reqs[1].sent_step][0]
    assert "reconnect backoff to broker-" in wake.text


def _complete_write_fails():
    """The markers of 'tx' are acknowledged 20 s late, after __transaction_state-0's only follower crashed: the
    CompleteCommit write finds the ISR below transaction.state.log.min.isr and fails (COORDINATOR_NOT_AVAILABLE)."""
    c = Cluster(brokers=3, seed=3, config={"transaction.state.log.num.partitions": 1,
                                           "transaction.state.log.replication.factor": 2})
    c.create_topic("t", partitions=3, replication_factor=1)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx"})
    p.init_transactions()
    coord = c.transaction_coordinator("tx")
    follower = [b for b in c.partition_state("__transaction_state", 0)["isr"] if b != coord][0]
    part = [i for i in range(3) if c.leader("t", i) != follower][0]
    p.begin_transaction()
    p.produce("t", value=b"v", partition=part)
    p.flush()
    c.delay_next("WriteTxnMarkers", 20_000, response=True, src=c.leader("t", part), dst=coord)
    p.commit_transaction()
    c.crash(follower)
    c.advance(22_000)
    failed = [e for e in c.trace.events
              if any("writing CompleteCommit for 'tx' failed (COORDINATOR_NOT_AVAILABLE)" in d for d in e.details)]
    assert failed and c.transaction_state("tx")["state"] == "PrepareCommit"
    c.restart(follower)
    assert c.run_until(lambda: c.partition_state("__transaction_state", 0)["isr"] == sorted([coord, follower]),
                       timeout_ms=10_000)
    return c, part, failed[0].time


def _completed_at(c):
    return [e for e in c.trace.events if any("'tx' is now CompleteCommit" in d for d in e.details)][0]


def test_a_failed_complete_write_waits_for_the_poll_timeout_when_nothing_wakes_the_thread():
    c, _, failed_at = _complete_write_fails()
    back_at = c.now
    c.run_until(lambda: c.transaction_state("tx")["state"] == "CompleteCommit", timeout_ms=60_000)
    retry = [e for e in c.trace.events if e.time > back_at and "wakes up: poll timeout" in e.text]
    assert retry and retry[0].time == failed_at + 30_000     # request.timeout.ms after the thread's last loop
    assert _completed_at(c).time >= retry[0].time > back_at  # the ISR was whole again long before


def test_new_markers_of_another_transaction_wake_the_thread_and_retry_the_complete_write():
    c, part, failed_at = _complete_write_fails()
    other = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx2"})
    other.init_transactions()
    other.begin_transaction()
    other.produce("t", value=b"w", partition=part)
    other.flush()
    other.commit_transaction()          # its markers wake the sender thread, which retries the queued append
    c.run_until(lambda: c.transaction_state("tx")["state"] == "CompleteCommit", timeout_ms=60_000)
    assert _completed_at(c).time < failed_at + 30_000
    assert not [e for e in c.trace.events if "wakes up: poll timeout" in e.text]
