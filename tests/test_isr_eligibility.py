"""KIP-841: only a live broker joins an ISR.  A broker cut off from the controller is fenced when its session
expires, but it can still reach the other brokers: as a follower it keeps fetching and stays caught up.  The
leader does not ask to add it back (Partition.isReplicaIsrEligible reads the metadata: fenced); a leader that asks
all the same (its metadata is late) is refused with INELIGIBLE_REPLICA (107) and nothing changes
(ReplicationControlManager).  Once its heartbeat reaches the controller again it is unfenced (live, with the broker
epoch of its registration), and the leader adds it."""
from txnlab import Cluster, Producer
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors


def _cluster():
    c = Cluster(brokers=3, seed=2)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap})
    p.produce("t", value=b"a")
    p.flush()
    return c, p


def _asks_to_add(c, broker: int, since: int) -> list:
    """The AlterPartition requests since event ``since`` whose new ISR names ``broker``."""
    asks = [e for e in c.trace.events[since:] if e.api == "AlterPartition" and e.kind == "deliver"
            and not e.is_response and "ISR -> " in e.narration]
    return [e for e in asks if str(broker) in e.narration.split("ISR -> ")[1].split(")")[0]]


def test_a_fenced_follower_that_keeps_fetching_stays_out_of_the_isr_until_it_is_unfenced():
    c, p = _cluster()
    leader = c.leader("t", 0)
    cut = next(b for b in c.brokers if b != leader)
    c.partition([f"broker-{cut}"], ["controller"])
    c.advance(12_000)                          # its session expires (broker.session.timeout.ms 9 s): fenced
    assert cut not in c.partition_state("t", 0)["isr"]
    mark = len(c.trace.events)
    for i in range(5):                         # it still follows the leader and stays caught up
        p.produce("t", value=b"%d" % i)
        p.flush()
        c.advance(1_000)
    assert c.log("t", 0, cut).log_end_offset == c.log("t", 0, leader).log_end_offset
    assert _asks_to_add(c, cut, mark) == []    # the leader never asks for a fenced broker
    assert cut not in c.partition_state("t", 0)["isr"]
    c.heal()
    c.run_until(lambda: cut in c.partition_state("t", 0)["isr"], timeout_ms=30_000)
    assert cut in c.partition_state("t", 0)["isr"]
    # (unfenced by its heartbeat, with the broker epoch of its registration: it does not register again)
    assert any("controller unfenced broker %d" % cut in e.narration for e in c.trace.events[mark:])


def test_the_controller_refuses_a_fenced_broker_in_a_new_isr():
    c, _ = _cluster()
    leader = c.leader("t", 0)
    cut = next(b for b in c.brokers if b != leader)
    c.partition([f"broker-{cut}"], ["controller"])
    c.advance(12_000)
    before = c.controller.states[("t", 0)]
    asked = tuple(m.BrokerState(r) for r in sorted(set(before.isr) | {cut}))     # (broker epochs -1: not checked)
    req = m.AlterPartitionRequest(leader, c.broker(leader).broker_epoch, "t", 0, before.leader_epoch, asked, before.partition_epoch)

    class _Msg:
        payload = req
    resp = c.controller.handle_AlterPartition(_Msg())
    assert resp.error == Errors.INELIGIBLE_REPLICA == 107
    assert c.controller.states[("t", 0)] == before          # nothing changed
