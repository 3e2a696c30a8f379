"""The kernel builds its events, messages and trace entries field by field (without calling the class, for
speed): every field of each must still be there to read, exactly as the class's own constructor sets it."""
from txnlab import Cluster, Producer
from txnlab.kernel.kernel import Event
from txnlab.kernel.network import Message
from txnlab.kernel.trace import TraceEvent
from helpers import open_transaction


def _fields(obj, cls):
    return {name: getattr(obj, name) for name in cls.__slots__}


def test_every_field_of_queued_events_in_flight_messages_and_trace_entries_can_be_read():
    c, p = open_transaction()
    k = c.kernel
    pending = k.pending_events()
    assert {e.kind for e in pending} >= {"deliver", "timer"}
    for e in pending:
        _fields(e, Event)                          # raises AttributeError on a field never set
    for m in k.network.in_flight():
        _fields(m, Message)
    p.commit_transaction()
    deliveries = [e for e in c.trace if e.kind == "deliver"]
    assert deliveries
    for e in deliveries:
        _fields(e, TraceEvent)
        assert e.text.startswith(f"{e.dst} got ")


def test_a_delivery_entry_reads_as_one_built_by_the_class():
    c, p = open_transaction()
    p.commit_transaction()
    e = next(e for e in c.trace if e.kind == "deliver" and e.api == "Produce")
    built = TraceEvent(e.step, e.time, "deliver", e.node, e.text, e.api, e.src, e.dst, e.msg_id, e.is_response,
                       e.background, list(e.details), list(e.sent), dict(e.attrs))
    assert e.to_dict() == built.to_dict() and str(e) == str(built)
    m = c.kernel.network.message(e.msg_id)
    fresh = Message(m.id, m.src, m.dst, m.api, m.payload, m.sent_at, m.deliver_at, m.is_response,
                    m.correlation_id, m.background, m.sent_step, m.conn)
    # (state, event and seq say where it is now: delivered, and no longer in the kernel's queue)
    assert {n: v for n, v in _fields(m, Message).items() if n not in ("state", "event", "seq")} == \
        {n: v for n, v in _fields(fresh, Message).items() if n not in ("state", "event", "seq")}
    assert m.state == "delivered" and m.event is None


def _traceless():
    """A cluster with the trace off, an observer's list of the steps it saw, and an initialized transactional
    producer of topic ``t``."""
    c = Cluster(brokers=3, seed=3, config={"sim.trace": False})
    seen = []
    c.kernel.observers.append(seen.append)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx"})
    p.init_transactions()
    return c, seen, p


def test_with_the_trace_off_an_observer_sees_delivery_entries_as_the_class_builds_them():
    c, seen, p = _traceless()
    assert len(c.trace) == 0
    deliveries = [e for e in seen if e.kind == "deliver"]
    assert deliveries
    for e in deliveries:
        built = TraceEvent(e.step, e.time, "deliver", e.dst, "", e.api, e.src, e.dst, e.msg_id, e.is_response,
                           e.background)
        got = _fields(e, TraceEvent)
        assert got.pop("_sent") is None or all(isinstance(i, int) for i in e.sent)   # what the step sent
        assert got.pop("_message").id == e.msg_id     # the delivered message (its fields are read from it)
        assert got == {n: v for n, v in _fields(built, TraceEvent).items() if n not in ("_sent", "_message")}


def test_a_line_narrated_unformatted_reads_as_the_formatted_line():
    c, p = open_transaction()
    p.commit_transaction()
    def kept(e):        # a step's lines as kept: none, one line as itself, or a list
        d = e._details
        return [] if d is None else d if isinstance(d, list) else [d]
    lazy = [e for e in c.trace if any(not isinstance(d, str) for d in kept(e))]
    assert lazy                                   # the follower's appends and HW moves are narrated so
    e = lazy[0]
    line = next(d for d in kept(e) if not isinstance(d, str))
    text = line[0] % line[1:]
    as_dict = e.to_dict()                         # reading the step writes its lines, once
    assert text in as_dict["details"] and all(isinstance(d, str) for d in e._details)
    assert e.details == as_dict["details"] and text in e.narration and text in str(e)
    assert TraceEvent.from_dict(as_dict) == e


def test_with_the_trace_off_nothing_is_narrated():
    c, seen, p = _traceless()
    p.begin_transaction()
    p.produce("t", value=b"v")
    p.commit_transaction()
    assert seen and all(e._details is None for e in seen)
