"""KafkaError, KafkaException, Message and TopicPartition behave as confluent-kafka's; every librdkafka error
code has librdkafka's number; the error classification of each client dialect is data a producer can ask."""
import inspect

import pytest

import txnlab
from txnlab import KafkaError, KafkaException, Message, TopicPartition
from txnlab.client import dialect
from txnlab.client.dialect import Action, classify, kafka_error

ck = pytest.importorskip("confluent_kafka")


def constants(cls) -> dict:
    return {n: getattr(cls, n) for n in dir(cls) if not n.startswith("__") and isinstance(getattr(cls, n), int)}


def test_every_kafka_error_constant_has_librdkafkas_number_name_and_description():
    ours, theirs = constants(KafkaError), constants(ck.KafkaError)
    assert ours == theirs
    for name, code in theirs.items():
        assert KafkaError(code).name() == ck.KafkaError(code).name() == name
        assert KafkaError(code).str() == ck.KafkaError(code).str()
    assert KafkaError._FENCED == -144 and KafkaError._CONFLICT == -173 and KafkaError._STATE == -172


def test_kafka_error_methods_equality_and_text_match_confluent_kafka():
    for args, kw in [((KafkaError._FENCED,), {}), ((-144, "reason x"), {"fatal": True}),
                     ((1, "r"), {}), ((KafkaError._TIMED_OUT,), {"retriable": True, "txn_requires_abort": True})]:
        a, b = KafkaError(*args, **kw), ck.KafkaError(*args, **kw)
        assert (a.code(), a.name(), a.str(), a.fatal(), a.txn_requires_abort()) == \
               (b.code(), b.name(), b.str(), b.fatal(), b.txn_requires_abort())
        assert repr(a) == repr(b) and str(a) == str(b)
    e = KafkaError(-144)
    assert e == -144 and -144 == e and e == KafkaError(-144, "other words") and e != -143
    assert KafkaError(1) < KafkaError(2) and hash(e) == hash(-144)
    assert {KafkaError(1): "x"}[1] == "x"
    assert KafkaError(12345).name() == ck.KafkaError(12345).name()


def test_kafka_exception_carries_the_error_as_args0():
    err = KafkaError(KafkaError._STATE, "Operation not valid in state Ready")
    exc = KafkaException(err)
    assert exc.args[0] is err and str(exc) == str(err)
    assert str(ck.KafkaException(ck.KafkaError(1))) == str(KafkaException(KafkaError(1)))


def test_txnlab_error_module_mirrors_confluent_kafka_error():
    import confluent_kafka.error as ce
    names = [n for n in dir(ce) if isinstance(getattr(ce, n), type) and not n.startswith("_")]
    for n in names:
        assert hasattr(txnlab.error, n), n
    e = txnlab.error.ValueSerializationError(ValueError("bad"))
    assert isinstance(e, txnlab.error.SerializationError) and isinstance(e, txnlab.error.ProduceError)
    assert e.code == KafkaError._VALUE_SERIALIZATION and e.name == "_VALUE_SERIALIZATION"
    m = Message(topic="t", value=b"v")
    c = txnlab.error.KeyDeserializationError(ValueError("k"), m)
    assert c.kafka_message is m and isinstance(c, txnlab.error.ConsumeError) and isinstance(c, KafkaException)


def test_message_methods_match_confluent_kafka():
    kw = dict(topic="t", partition=1, offset=5, key=b"k", value=b"v", headers=[("a", b"1")], timestamp=(1, 123),
              latency=0.5, leader_epoch=3)
    a, b = Message(**kw), ck.Message(**kw)
    for m in ("topic", "partition", "offset", "key", "value", "headers", "timestamp", "error", "latency",
              "leader_epoch", "delivery_count"):
        assert getattr(a, m)() == getattr(b, m)(), m
    assert len(a) == len(b)
    for x in (a, b):
        x.set_value(b"zz"), x.set_key(b"kk"), x.set_headers([("h", b"2")]), x.set_topic("u")
        x.set_error(KafkaError(1) if x is a else ck.KafkaError(1))
    assert (a.value(), a.key(), a.headers(), a.topic(), a.error().code()) == \
           (b.value(), b.key(), b.headers(), b.topic(), b.error().code())
    assert Message() == Message() and Message(topic="a") != Message(topic="b")
    assert Message(latency=1.0) == Message() and Message(leader_epoch=-1).leader_epoch() is None
    with pytest.raises(TypeError):
        hash(Message())
    assert txnlab.TIMESTAMP_NOT_AVAILABLE == ck.TIMESTAMP_NOT_AVAILABLE
    assert txnlab.TIMESTAMP_CREATE_TIME == ck.TIMESTAMP_CREATE_TIME
    assert txnlab.TIMESTAMP_LOG_APPEND_TIME == ck.TIMESTAMP_LOG_APPEND_TIME


def test_topic_partition_equality_ordering_hash_match_confluent_kafka():
    for mod in (txnlab, ck):
        TP = mod.TopicPartition
        a, b, c = TP("t", 1, 5), TP("t", 1, 6), TP("t", 2, 0)
        assert a == b and hash(a) == hash(b) and a < c and TP("s", 9) < a and not a < b
        assert TP("t", 1, 5, "meta", 7).metadata == "meta" and TP("t", 1, 5, "meta", 7).leader_epoch == 7
        assert TP("t", 1, leader_epoch=-1).leader_epoch is None and TP("t").offset == -1001
    assert repr(TopicPartition("t", 1, 5)) == repr(ck.TopicPartition("t", 1, 5))
    with pytest.raises(AttributeError):
        TopicPartition("t").leader_epoch = 3


# Differences left on purpose, with the reason.  Anything else in the public surface must match.
DELIBERATE = {
    "Producer": {
        "extra": {"transaction_manager": "the lab's view into the client's transaction state (widgets read it)",
                  "sender": "the lab's Sender, for the stepper and the views",
                  "name": "the client's node name in the trace",
                  "deliver": "the lab's hook that queues a delivery report for poll()"},
        "missing": {"set_sasl_credentials": "SASL is not modelled (credentials come from sasl.username)"},
    },
    "Consumer": {
        "extra": {"name": "the client's node name in the trace",
                  "coordinator": "the lab's ConsumerCoordinator, for the views", "fetcher": "the lab's Fetcher"},
        "missing": {"set_sasl_credentials": "SASL is not modelled"},
    },
    "KafkaException": {"extra": {"error": "lab convenience: args[0]"}, "missing": {}},
    "KafkaError": {"extra": {}, "missing": {}},
    "Message": {"extra": {}, "missing": {}},
    "TopicPartition": {"extra": {}, "missing": {}},
}


def public(cls) -> set:
    return {n for n in dir(cls) if not n.startswith("_") and not (isinstance(getattr(cls, n, None), int)
                                                                    and cls.__name__ == "KafkaError")}


@pytest.mark.parametrize("name", sorted(DELIBERATE))
def test_public_surface_matches_confluent_kafka_but_for_listed_differences(name):
    ours = public(getattr(txnlab, name)) - {"add_note", "args", "with_traceback"}
    theirs = public(getattr(ck, name)) - {"add_note", "args", "with_traceback"}
    known = DELIBERATE[name]
    assert ours - theirs <= set(known["extra"]), ours - theirs
    assert theirs - ours <= set(known["missing"]), theirs - ours


# (class, method, args, kwargs) that confluent-kafka refuses with a TypeError before doing anything: the lab refuses
# them too (positional-only timeouts of the transactional calls, assign's partitions, no-argument calls)
REFUSED = [("Producer", "init_transactions", (), {"timeout": 1}), ("Producer", "commit_transaction", (), {"timeout": 60}),
           ("Producer", "abort_transaction", (), {"timeout": 1}), ("Producer", "begin_transaction", (), {"x": 1}),
           ("Producer", "send_offsets_to_transaction", ([], None), {"timeout": 1}),
           ("Consumer", "assign", (), {"partitions": []}), ("Consumer", "incremental_assign", (), {"partitions": []}),
           ("Consumer", "incremental_unassign", (), {"partitions": []}), ("Consumer", "memberid", (), {"x": 1}),
           ("Consumer", "close", (1,), {}), ("Consumer", "consume", (1, 0.0, 3), {}),
           ("Consumer", "subscribe", (["t"],), {"on_assign": None})]
ACCEPTED = [("Producer", "produce", ("t",), {"value": b"v", "key": b"k", "partition": 0, "on_delivery": None,
                                             "timestamp": 0, "headers": None}),
            ("Producer", "produce", ("t", b"v", b"k", 0, None, None, 0, None), {}),
            ("Producer", "flush", (), {"timeout": 0}), ("Producer", "poll", (), {"timeout": 0}),
            ("Producer", "purge", (), {"in_queue": True, "in_flight": True, "blocking": False}),
            ("Producer", "close", (1,), {"x": 2}),
            ("Consumer", "consume", (), {"num_messages": 1, "timeout": 0}),
            ("Consumer", "get_watermark_offsets", (), {"partition": None, "timeout": 0.01, "cached": True}),
            ("Consumer", "committed", (), {"partitions": [], "timeout": 0.01}),
            ("Consumer", "offsets_for_times", (), {"partitions": [], "timeout": 0.01}),
            ("Consumer", "commit", (), {"message": None, "offsets": [], "asynchronous": True}),
            ("Consumer", "list_topics", (), {"topic": "t", "timeout": 0.01})]


def _call(mod, cls, method, args, kwargs, bootstrap):
    conf = {"bootstrap.servers": bootstrap}
    if cls == "Consumer":
        conf["group.id"] = "g"
    if mod is ck:
        conf["test.mock.num.brokers"] = 1
    obj = getattr(mod, cls)(conf)
    args = tuple(mod.TopicPartition("t", 0) if a is None and method == "get_watermark_offsets" else a for a in args)
    kwargs = {k: (mod.TopicPartition("t", 0) if k == "partition" and v is None else v) for k, v in kwargs.items()}
    try:
        getattr(obj, method)(*args, **kwargs)
        return "ok"
    except TypeError as e:
        return f"TypeError: {e}"
    except Exception:                    # refused later, for another reason: the arguments were accepted
        return "ok"


@pytest.mark.parametrize("cls,method,args,kwargs", REFUSED + ACCEPTED)
def test_calls_accept_exactly_what_confluent_kafka_accepts(cls, method, args, kwargs):
    c = txnlab.Cluster(brokers=1, seed=0)
    c.create_topic("t", partitions=1, replication_factor=1)
    ours = _call(txnlab, cls, method, args, kwargs, c.bootstrap)
    theirs = _call(ck, cls, method, args, kwargs, "")
    assert ours.startswith("TypeError") == theirs.startswith("TypeError"), (ours, theirs)


@pytest.mark.parametrize("name,method", [("Message", n) for n in ("set_headers", "set_value", "set_key")]
                         + [("Producer", n) for n in ("produce", "flush", "poll", "init_transactions")])
def test_methods_take_confluent_kafkas_first_arguments(name, method):
    fn = getattr(getattr(txnlab, name), method)
    params = [p for p in inspect.signature(fn).parameters if p != "self"]
    assert params or method in ("flush", "poll")


# -------------------------------------------------------------------- classification as data
def test_librdkafka_raises_fatal_fenced_where_java_aborts():
    e = kafka_error(dialect.LIBRDKAFKA, "Produce", txnlab.Errors.INVALID_PRODUCER_EPOCH)
    assert e.code() == KafkaError._FENCED and e.fatal() and not e.txn_requires_abort()
    j = kafka_error(dialect.JAVA, "Produce", txnlab.Errors.INVALID_PRODUCER_EPOCH)
    assert j.code() == txnlab.Errors.INVALID_PRODUCER_EPOCH and j.txn_requires_abort() and not j.fatal()
    f = kafka_error(dialect.LIBRDKAFKA, "EndTxn", txnlab.Errors.PRODUCER_FENCED)
    assert f.code() == KafkaError._FENCED and f.fatal()


@pytest.mark.parametrize("d", dialect.DIALECTS)
def test_every_transactional_request_classifies_every_kafka_error(d):
    for api in dialect.TABLES[d]:
        for err in txnlab.Errors:
            assert isinstance(classify(d, api, err), Action)
        assert classify(d, api, txnlab.Errors.COORDINATOR_LOAD_IN_PROGRESS) is Action.RETRY or api == "Produce"
    assert classify(d, "EndTxn", txnlab.Errors.CONCURRENT_TRANSACTIONS) is Action.RETRY
    assert classify(d, "TxnOffsetCommit", txnlab.Errors.UNKNOWN_MEMBER_ID) is Action.ABORTABLE
