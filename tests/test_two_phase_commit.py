"""Classic two-phase commit on the deterministic kernel, and Kafka's roll-forward for the same crash:
a prepared participant blocks while the one coordinator is down; Kafka's PrepareCommit is in a replicated
log, so another broker finishes the transaction."""
from txnlab import Cluster, Producer
from txnlab.client.message import TopicPartition
from txnlab.client.consumer import Consumer
from txnlab.protocol.names import broker_name
from txnlab.twopc import KeyLocked, TwoPhaseCommitLab

import pytest

ACCOUNTS = {"bank-a": {"alice": 100}, "bank-b": {"bob": 20}}
TRANSFER = {"bank-a": {"alice": -30}, "bank-b": {"bob": +30}}


def bank(seed=1, **config):
    return TwoPhaseCommitLab(ACCOUNTS, seed=seed, config=config or None)


def all_voted(lab, tx_id):
    tx = lab.coordinator.txs.get(tx_id)
    return tx is not None and len(tx.votes) == len(lab.participants)


def test_every_vote_commit_gives_global_commit_and_both_writes_apply():
    lab = bank()
    assert lab.run_transaction("T1", TRANSFER) == "COMMIT"
    assert lab.balances() == {"bank-a": {"alice": 70}, "bank-b": {"bob": 50}}
    assert lab.locks() == {"bank-a": {}, "bank-b": {}}
    apis = [m.api for m in lab.network_messages()]
    assert apis.count("PREPARE") == 2 and apis.count("VOTE_COMMIT") == 2
    assert apis.count("GLOBAL_COMMIT") == 2 and apis.count("ACK") == 2
    assert [r.kind for r in lab.coordinator.log.records] == ["START_2PC", "GLOBAL_COMMIT", "END"]


def test_one_vote_abort_aborts_everywhere_and_releases_the_locks():
    lab = bank()
    assert lab.run_transaction("T1", {"bank-a": {"alice": -500}, "bank-b": {"bob": +500}}) == "ABORT"
    assert lab.balances() == {"bank-a": {"alice": 100}, "bank-b": {"bob": 20}}
    assert lab.locks() == {"bank-a": {}, "bank-b": {}}
    assert lab.participant_states("T1") == {"bank-a": "ABORT", "bank-b": "ABORT"}


def test_a_participant_that_never_votes_makes_the_coordinator_abort_after_the_vote_timeout():
    lab = bank()
    lab.crash("bank-b")
    lab.begin_transaction("T1", TRANSFER)
    lab.advance(6_000)                             # vote.timeout.ms = 5000
    assert lab.outcome("T1") == "ABORT"
    assert lab.participant_states("T1")["bank-a"] == "ABORT" and lab.locks()["bank-a"] == {}
    lab.restart("bank-b")
    lab.advance(4_000)                             # the coordinator resends GLOBAL_ABORT until bank-b acknowledges
    assert lab.coordinator.state_of("T1") == "DONE"
    assert lab.balances() == {"bank-a": {"alice": 100}, "bank-b": {"bob": 20}}


def test_coordinator_crash_after_participants_prepared_blocks_them_until_it_restarts_and_reads_its_log():
    lab = bank()
    lab.begin_transaction("T1", TRANSFER)
    lab.run_until(lambda: all_voted(lab, "T1"))    # both are prepared; the decision is not on disk yet
    lab.crash(lab.coordinator)
    lab.advance(60_000)
    assert lab.blocked("T1") == ["bank-a", "bank-b"]
    assert lab.locks() == {"bank-a": {"alice": "T1"}, "bank-b": {"bob": "T1"}}
    with pytest.raises(KeyLocked):
        lab.participants["bank-a"].read("alice")
    assert lab.trace.filter(contains="cannot help")             # asking each other does not help
    assert lab.balances() == {"bank-a": {"alice": 100}, "bank-b": {"bob": 20}}
    lab.restart(lab.coordinator)
    lab.run_until_idle()
    assert lab.outcome("T1") == "ABORT"            # no decision in its log: presumed abort
    assert lab.blocked("T1") == [] and lab.locks() == {"bank-a": {}, "bank-b": {}}
    assert lab.participants["bank-a"].read("alice") == 100


def test_coordinator_crash_after_logging_global_commit_participants_commit_when_it_restarts():
    lab = bank()
    lab.drop_next("GLOBAL_COMMIT", count=2)        # the decision is durable but nobody hears it
    lab.begin_transaction("T1", TRANSFER)
    lab.run_until(lambda: lab.outcome("T1") == "COMMIT")
    lab.crash(lab.coordinator)
    lab.advance(30_000)
    assert lab.blocked("T1") == ["bank-a", "bank-b"]
    lab.restart(lab.coordinator)
    lab.run_until_idle()
    assert lab.participant_states("T1") == {"bank-a": "COMMIT", "bank-b": "COMMIT"}
    assert lab.balances() == {"bank-a": {"alice": 70}, "bank-b": {"bob": 50}}


def test_cooperative_termination_a_peer_that_heard_the_decision_unblocks_the_other():
    lab = bank()
    lab.drop_next("GLOBAL_COMMIT", dst="bank-b")
    lab.begin_transaction("T1", TRANSFER)
    lab.run_until(lambda: lab.participant_states("T1")["bank-a"] == "COMMIT")
    lab.crash(lab.coordinator)
    lab.advance(5_000)                             # bank-b asks bank-a, which knows
    assert lab.participant_states("T1") == {"bank-a": "COMMIT", "bank-b": "COMMIT"}
    assert lab.blocked("T1") == []


def test_without_cooperative_termination_the_same_participant_stays_blocked():
    lab = bank(**{"cooperative.termination": False})
    lab.drop_next("GLOBAL_COMMIT", dst="bank-b")
    lab.begin_transaction("T1", TRANSFER)
    lab.run_until(lambda: lab.participant_states("T1")["bank-a"] == "COMMIT")
    lab.crash(lab.coordinator)
    lab.advance(30_000)
    assert lab.blocked("T1") == ["bank-b"]


def test_a_prepared_participant_that_crashes_takes_its_locks_again_from_its_log():
    lab = bank()
    lab.begin_transaction("T1", TRANSFER)
    lab.run_until(lambda: all_voted(lab, "T1"))
    lab.crash(lab.coordinator)
    lab.crash("bank-a")
    lab.restart("bank-a")
    assert lab.locks()["bank-a"] == {"alice": "T1"}
    lab.restart(lab.coordinator)
    lab.run_until_idle()
    assert lab.locks()["bank-a"] == {} and lab.outcome("T1") == "ABORT"


def test_same_seed_same_trace():
    def run():
        lab = bank(seed=5)
        lab.begin_transaction("T1", TRANSFER)
        lab.run_until(lambda: all_voted(lab, "T1"))
        lab.crash(lab.coordinator)
        lab.advance(10_000)
        lab.restart(lab.coordinator)
        lab.run_until_idle()
        return lab.trace.to_jsonl()
    assert run() == run()


# ------------------------------------------------------------- Kafka, the same crash
def read_committed(cluster, topics):
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "audit", "isolation.level": "read_committed",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(t, 0) for t in topics])
    out, empty = [], 0
    while empty < 2:
        m = c.poll(0.5)
        if m is None:
            empty += 1
        elif m.error() is None:
            out.append(m.value())
    return sorted(out)


def test_kafka_coordinator_crash_after_prepare_commit_is_rolled_forward_by_the_new_coordinator():
    c = Cluster(brokers=3, seed=7)
    for t in ("debits", "credits"):
        c.create_topic(t, partitions=1, replication_factor=3)
    tid = "transfer"
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": tid})
    p.init_transactions()
    p.begin_transaction()
    p.produce("debits", value=b"alice -30")
    p.produce("credits", value=b"bob +30")
    p.flush()
    p.sender.begin_end_txn(True)                   # commit_transaction(), driven step by step
    assert c.run_until(lambda: (c.transaction_state(tid) or {}).get("state") == "PrepareCommit")
    old = c.transaction_coordinator(tid)
    for m in c.in_flight():                        # its markers die with it
        if m.api == "WriteTxnMarkers" and m.src == broker_name(old):
            c.drop_message(m.id)
    crashed_at = c.clock
    c.crash(old)
    assert read_committed(c, ["debits", "credits"]) == []      # no markers yet: read_committed waits too
    assert c.run_until(lambda: (c.transaction_state(tid) or {}).get("state") == "CompleteCommit", 60_000)
    new = c.transaction_coordinator(tid)
    assert new != old and not c.broker(old).alive
    assert c.clock - crashed_at < 30_000           # seconds, not "until the machine comes back"
    print(f"rolled forward {c.clock - crashed_at} ms after the crash by broker {new}")
    assert read_committed(c, ["debits", "credits"]) == [b"alice -30", b"bob +30"]
