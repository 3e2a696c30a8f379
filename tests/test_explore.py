"""Exhaustive exploration of the small scenario (one copier: a read_committed consumer and a transactional
producer, two output partitions): every interleaving it enumerates and every placement of up to two faults
ends exactly once, and with no-fencing the explorer finds a counterexample that replays step for step."""
from txnlab.sweep.explore import Explorer, main, replay
from txnlab.kernel.kernel import Kernel


def test_kernel_choices_offer_the_oldest_message_of_each_connection():
    k = Kernel(seed=1)
    from txnlab.kernel.node import Node

    class Echo(Node):
        def handle_request(self, msg):
            return None

    a, c = Echo(k, "a"), Echo(k, "c")
    Echo(k, "b")
    for api in ("Produce", "Fetch"):
        req = type("R", (), {"API": api, "describe": lambda self: ""})()
        a.send_request("b", req, lambda r, e: None)
    req = type("R", (), {"API": "EndTxn", "describe": lambda self: ""})()
    c.send_request("b", req, lambda r, e: None)
    choices = k.choices()
    assert [(e.msg.src, e.msg.api) for e in choices] == [("a", "Produce"), ("c", "EndTxn")]
    k.step(choice=1)                                   # EndTxn overtakes Produce (another connection)
    assert k.trace[-1].api == "EndTxn" and [e.msg.api for e in k.choices()] == ["Produce"]


def test_without_faults_every_interleaving_is_exactly_once():
    ex = Explorer(max_faults=0, max_reorderings=-1)
    assert ex.explore()
    assert set(ex.histogram) <= {"exactly-once", "pruned (state seen before)"}
    assert ex.histogram["exactly-once"] >= 2


def test_every_placement_of_up_to_two_faults_stays_exactly_once(capsys):
    code = main([])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "no violation" in out and "runs:" in out and "states visited:" in out
    assert "(run limit reached)" not in out
    assert "exactly-once" in out and "duplicate" not in out and "stuck" not in out


def test_with_no_fencing_the_explorer_finds_a_counterexample_that_replays(capsys):
    code = main(["--mutation", "no-fencing"])
    out = capsys.readouterr().out
    assert code == 1 and "VIOLATION" in out
    choices_line = next(line for line in out.splitlines() if line.startswith("counterexample:"))
    choices = [int(x) for x in choices_line.split("choices ")[1].split(",")]
    first = replay(choices, "no-fencing")
    second = replay(choices, "no-fencing")
    assert first.outcome in ("violation", "duplicate", "loss", "stuck")
    assert first.cluster.trace.to_jsonl() == second.cluster.trace.to_jsonl()


def test_the_three_broker_scenario_finds_a_mutation_and_replays_it(capsys):
    """Replicated topics, replica fetches as choice points, and broker crashes among the faults."""
    code = main(["--brokers", "3", "--mutation", "no-dedup", "--max-runs", "400"])
    out = capsys.readouterr().out
    assert code == 1 and "VIOLATION" in out and "--brokers 3" in out
    choices_line = next(line for line in out.splitlines() if line.startswith("counterexample:"))
    choices = [int(x) for x in choices_line.split("choices ")[1].split(",")]
    first = replay(choices, "no-dedup", brokers=3)
    second = replay(choices, "no-dedup", brokers=3)
    assert first.outcome in ("violation", "duplicate", "loss", "stuck")
    assert len(first.cluster.brokers) == 3
    assert first.cluster.trace.to_jsonl() == second.cluster.trace.to_jsonl()


def test_a_run_waits_for_the_restarts_its_faults_schedule_while_they_play_out():
    """Two blackouts: the second's followers find their brokers down already, and the first's last broker goes
    down at 9.3 s, scheduling its restart at 16.1 s.  The run's end used to read the time the last fault plays
    out once, before that crash, and did the final read at 15 s with the broker still down: its partition's
    acknowledged records were 'unseen'.  It waits for the restart now."""
    r = replay([1, 1, 0, 1], None, brokers=3, scenario="blackout")
    restarts = [e.time for e in r.cluster.trace.events if e.kind == "timer" and "restart broker-" in e.narration]
    assert len(restarts) == 3
    assert r.outcome == "exactly-once", r.detail
    assert all(r.cluster.kernel.nodes[f"broker-{b}"].alive for b in range(3))
