"""Conformance with librdkafka where its mock cluster is a valid oracle: client-side state errors, config
validation and argument checks.  The same program runs on confluent-kafka (librdkafka's mock cluster) and on the
lab, and every call's outcome (exception class, error name, fatal / retriable / txn_requires_abort) is compared.
Never read_committed, fencing or transactional offsets here: the mock does not model them faithfully."""
import pytest

import txnlab

ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka (the oracle) is not installed")


def outcome(mod, fn):
    try:
        fn()
        return ("ok",)
    except mod.KafkaException as e:
        err = e.args[0]
        return ("KafkaException", err.name(), err.fatal(), err.retriable(), err.txn_requires_abort())
    except Exception as e:                       # TypeError, ValueError, RuntimeError, BufferError...
        return (type(e).__name__,)


def program(mod, base: dict) -> dict:
    """Each step one call; later steps depend on the state the earlier ones left."""
    P, C, TP = mod.Producer, mod.Consumer, mod.TopicPartition
    out = {}

    def step(name, fn):
        out[name] = outcome(mod, fn)

    step("an unknown property", lambda: P({**base, "no.such.key": 1}))
    step("acks='x'", lambda: P({**base, "acks": "x"}))
    step("idempotence with acks=1", lambda: P({**base, "enable.idempotence": True, "acks": 1}))
    step("transactional.id without idempotence", lambda: P({**base, "transactional.id": "x",
                                                            "enable.idempotence": False}))
    step("a consumer without group.id", lambda: C({**base}))
    p = P({**base, "transactional.id": "t1"})
    step("begin_transaction before init_transactions", lambda: p.begin_transaction())
    step("commit_transaction before init_transactions", lambda: p.commit_transaction(1))
    step("abort_transaction before init_transactions", lambda: p.abort_transaction(1))
    step("produce outside a transaction", lambda: p.produce("t", b"v"))
    step("init_transactions", lambda: p.init_transactions(10))
    step("init_transactions again", lambda: p.init_transactions(10))
    step("commit_transaction without begin", lambda: p.commit_transaction(1))
    step("begin_transaction", lambda: p.begin_transaction())
    step("begin_transaction again", lambda: p.begin_transaction())
    step("send_offsets_to_transaction with a bad group metadata", lambda: p.send_offsets_to_transaction([], None))
    plain = P({**base})
    step("init_transactions without transactional.id", lambda: plain.init_transactions(1))
    step("begin_transaction without transactional.id", lambda: plain.begin_transaction())
    step("a record over message.max.bytes", lambda: plain.produce("t", b"x" * 2_000_000))
    step("a value that is not bytes or str", lambda: plain.produce("t", 5))
    c = C({**base, "group.id": "g"})
    step("commit with nothing to commit", lambda: c.commit(asynchronous=False))
    step("subscribe to no topic name", lambda: c.subscribe([""]))
    step("incremental_assign before the group chose a protocol",
         lambda: (c.subscribe(["t"]), c.incremental_assign([TP("t", 0)])))
    step("incremental_assign of an assigned partition", lambda: c.incremental_assign([TP("t", 0)]))
    step("incremental_unassign of a partition not assigned", lambda: c.incremental_unassign([TP("t", 0, 5)]))
    step("consume(2_000_000)", lambda: c.consume(2_000_000, 0))
    c.close()
    step("poll after close", lambda: c.poll(0))
    step("close twice", lambda: c.close())
    return out


@pytest.fixture(scope="module")
def both():
    cl = txnlab.Cluster(brokers=1, seed=0)
    cl.create_topic("t", partitions=1, replication_factor=1)
    lab = program(txnlab, {"bootstrap.servers": cl.bootstrap})
    rdk = program(ck, {"bootstrap.servers": "", "test.mock.num.brokers": 1})
    return lab, rdk




def test_the_program_made_every_call_on_both():
    cl = txnlab.Cluster(brokers=1, seed=1)
    cl.create_topic("t", partitions=1, replication_factor=1)
    assert len(program(txnlab, {"bootstrap.servers": cl.bootstrap})) == 27


@pytest.mark.parametrize("i", range(27))
def test_each_call_ends_as_librdkafka_ends_it(both, i):
    lab, rdk = both
    name = list(rdk)[i]
    assert lab[name] == rdk[name], f"{name}: lab {lab[name]} vs librdkafka {rdk[name]}"
