"""Fuzzing the broker's request handlers: random and malformed requests never crash the cluster.

Well-typed requests with absurd values (negative partitions, unknown topics, huge offsets, stale epochs)
must get an answer carrying Kafka's error codes.  Ill-typed requests (None fields, wrong types) may be
refused by closing the connection, as Kafka's network layer does -- but no Python exception may escape a
simulation step, and the cluster must still serve a normal client afterwards.
"""
import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import RawClient
from txnlab import Cluster, Consumer, Producer, TopicPartition
from txnlab.protocol.record_batch import Record, RecordBatch
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors

FUZZ = settings(max_examples=200, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# Requests a client (or a buggy client) can send to a broker.
CLIENT_APIS = [m.MetadataRequest, m.ProduceRequest, m.FetchRequest, m.ListOffsetsRequest, m.FindCoordinatorRequest,
               m.InitProducerIdRequest, m.JoinGroupRequest, m.SyncGroupRequest, m.HeartbeatRequest,
               m.LeaveGroupRequest, m.OffsetCommitRequest, m.OffsetFetchRequest, m.AddPartitionsToTxnRequest,
               m.AddOffsetsToTxnRequest, m.EndTxnRequest, m.TxnOffsetCommitRequest, m.WriteTxnMarkersRequest,
               m.DescribeProducersRequest, m.DescribeTransactionsRequest, m.ListTransactionsRequest,
               m.ApiVersionsRequest]
ALL_APIS = CLIENT_APIS + [m.BrokerHeartbeatRequest, m.LeaderAndIsrRequest, m.AlterPartitionRequest,
                          m.CreateTopicsRequest, m.AllocateProducerIdsRequest]

_CLUSTER = {}


def cluster() -> Cluster:
    """One cluster for all examples of the module (requests are independent); checked healthy at the end."""
    if "c" not in _CLUSTER:
        c = Cluster(brokers=3, seed=11, config={"transaction.state.log.num.partitions": 2,
                                                "offsets.topic.num.partitions": 2, "sim.trace": False})
        c.create_topic("t", partitions=2, replication_factor=3)
        _CLUSTER["c"] = c
        _CLUSTER["raw"] = RawClient(c, "fuzz-client")
    return _CLUSTER["c"]


def send(request, broker: int = 0):
    """Send one request; step until it is answered, refused, or timed out.  Returns (response, error)."""
    c = cluster()
    raw = _CLUSTER["raw"]
    box = {}
    raw.send_request(f"broker-{broker}", request, lambda r, e: box.update(resp=r, err=e), timeout_ms=5_000)
    c.run_until(lambda: "resp" in box or "err" in box, timeout_ms=10_000)
    return box.get("resp"), box.get("err")


def error_codes(obj) -> list:
    """Every int-like error field found in a response (recursively), as Errors members."""
    found = []
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if f.name == "error" or f.name.endswith("_error"):
                found.append(Errors(v))
            else:
                found += error_codes(v)
    elif isinstance(obj, dict):
        for v in obj.values():
            found += error_codes(v)
    elif isinstance(obj, (tuple, list)):
        for v in obj:
            found += error_codes(v)
    return found


topics = st.sampled_from(["t", "nope", "", "__transaction_state", "__consumer_offsets", "x" * 300])
partitions = st.sampled_from([-7, -1, 0, 1, 2, 99, 2 ** 31])
offsets = st.sampled_from([-100, -2, -1, 0, 1, 5, 10 ** 12])
pids = st.sampled_from([-1, 0, 1, 1000, 2000, 32767, 2 ** 40])
epochs = st.sampled_from([-1, 0, 1, 5, 32767, 32768])
ids = st.one_of(st.none(), st.sampled_from(["", "tx", "copier-0", "g", "ghost"]))
tps = st.tuples(topics, partitions)


def batch(draw_pid, draw_epoch, seq, txn, control=False):
    return RecordBatch((Record(None, b"v", (), 0),), draw_pid, draw_epoch, seq, txn, control)


@st.composite
def well_typed_request(draw):
    kind = draw(st.sampled_from(["produce", "fetch", "list", "metadata", "find", "init", "add", "addoff", "end",
                                 "txnoff", "commit", "fetchoff", "join", "sync", "heartbeat", "leave"]))
    tp = draw(tps)
    if kind == "produce":
        b = batch(draw(pids), draw(epochs), draw(st.sampled_from([-1, 0, 3, 2 ** 31 - 1])), draw(st.booleans()),
                  draw(st.booleans()))
        return m.ProduceRequest(draw(ids), draw(st.sampled_from([-1, 0, 1, 2, -5])), 1_000, {tp: b})
    if kind == "fetch":
        return m.FetchRequest(draw(st.sampled_from([-1, 0, 1, 7])), 0, 1, draw(st.sampled_from([0, 1, 9])),
                              {tp: m.FetchPartition(draw(offsets), draw(st.sampled_from([0, 1, 10 ** 9])),
                                                    draw(epochs), draw(epochs))})
    if kind == "list":
        return m.ListOffsetsRequest(draw(st.sampled_from([0, 1])), {tp: draw(st.sampled_from([-2, -1, 0, 10 ** 13, -9]))})
    if kind == "metadata":
        return m.MetadataRequest(draw(st.one_of(st.none(), st.lists(topics, max_size=3).map(tuple))))
    if kind == "find":
        return m.FindCoordinatorRequest(draw(ids) or "", draw(st.sampled_from([0, 1, 7, -1])))
    if kind == "init":
        return m.InitProducerIdRequest(draw(ids), draw(st.sampled_from([-1, 0, 1, 60_000, 10 ** 9])), draw(pids), draw(epochs))
    if kind == "add":
        if draw(st.booleans()):     # a partition leader's batch (v4+): refused from a client
            return m.AddPartitionsToTxnRequest(transactions=(m.AddPartitionsToTxnTransaction(
                draw(ids) or "", draw(pids), draw(epochs), (tp,), draw(st.booleans())),))
        return m.AddPartitionsToTxnRequest(draw(ids) or "", draw(pids), draw(epochs), (tp,))
    if kind == "addoff":
        return m.AddOffsetsToTxnRequest(draw(ids) or "", draw(pids), draw(epochs), draw(ids) or "")
    if kind == "end":
        return m.EndTxnRequest(draw(ids) or "", draw(pids), draw(epochs), draw(st.booleans()))
    if kind == "txnoff":
        return m.TxnOffsetCommitRequest(draw(ids) or "", draw(ids) or "", draw(pids), draw(epochs),
                                        draw(st.sampled_from([-1, 0, 3])), draw(ids) or "", None,
                                        {tp: (draw(offsets), draw(epochs), "")})
    if kind == "commit":
        return m.OffsetCommitRequest(draw(ids) or "", draw(st.sampled_from([-1, 0, 3])), draw(ids) or "", None,
                                     {tp: (draw(offsets), draw(epochs), "")})
    if kind == "fetchoff":
        return m.OffsetFetchRequest(draw(ids) or "", (tp,), draw(st.booleans()))
    if kind == "join":
        return m.JoinGroupRequest(draw(ids) or "", draw(st.sampled_from([0, 10, 6_000, 10 ** 9])), 300_000,
                                  draw(ids) or "", None, "consumer", (("range", (tp[0],)),))
    if kind == "sync":
        return m.SyncGroupRequest(draw(ids) or "", draw(st.sampled_from([-1, 0, 5])), draw(ids) or "", None, ())
    if kind == "heartbeat":
        return m.HeartbeatRequest(draw(ids) or "", draw(st.sampled_from([-1, 0, 5])), draw(ids) or "", None)
    return m.LeaveGroupRequest(draw(ids) or "", draw(ids) or "")


junk = st.one_of(st.none(), st.integers(min_value=-2 ** 63, max_value=2 ** 63), st.text(max_size=5),
                 st.booleans(), st.floats(allow_nan=True), st.lists(st.integers(), max_size=2).map(tuple),
                 st.dictionaries(st.tuples(st.text(max_size=3), st.integers(-2, 3)), st.none(), max_size=2))


@st.composite
def malformed_request(draw):
    cls = draw(st.sampled_from(ALL_APIS))
    values = {f.name: draw(junk) for f in dataclasses.fields(cls)}
    return cls(**values)


def assert_cluster_still_serves_clients():
    c = cluster()
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 0})
    p.produce("t", value=b"still-alive", partition=0)
    assert p.flush(10) == 0
    cons = Consumer({"group.id": "lab-reader", "enable.auto.commit": False, "bootstrap.servers": c.bootstrap, "auto.offset.reset": "earliest"})
    cons.assign([TopicPartition("t", 0, 0)])
    seen = [msg.value() for msg in cons.consume(1000, 2.0) if msg.error() is None]
    assert b"still-alive" in seen


@FUZZ
@given(well_typed_request(), st.integers(0, 2))
def test_well_typed_requests_with_absurd_values_get_kafka_error_codes(request, broker):
    resp, err = send(request, broker)
    assert err is None or err in (Errors.REQUEST_TIMED_OUT, Errors.NETWORK_EXCEPTION)
    if resp is not None:
        assert type(resp).__name__ == type(request).__name__.replace("Request", "Response")
        assert all(isinstance(e, Errors) for e in error_codes(resp))
    errors = [e for b in cluster().brokers for e in cluster().broker(b).handler_errors]
    assert errors == [], errors


@FUZZ
@given(malformed_request(), st.integers(0, 2))
def test_malformed_requests_never_crash_a_step(request, broker):
    resp, err = send(request, broker)         # an exception escaping a step would fail here
    assert resp is not None or err is not None, "every request is answered, refused or timed out"


def test_after_the_fuzzing_the_cluster_still_works():
    c = cluster()
    assert_cluster_still_serves_clients()
    refused = [e for b in c.brokers for e in c.broker(b).handler_errors]
    assert refused, "the malformed requests should have been refused (connection closed), not ignored"
    narrated = [e for e in c.trace.events if "it closes the connection" in e.narration]
    assert len(narrated) == len(refused) or not c.trace.enabled
