"""The explorer on three brokers finds every mutation, each in its scenario, within a stated number of runs, and
says which mutation its counterexample catches; on the real engine the same scenarios, explored as far, show
no counterexample.

The bounds are runs of the depth-first search (seed 0, at most two faults and one reordering per run); each
mutation is found in far fewer (``python -m txnlab.sweep.explore --mutation all --brokers 3`` prints how
many).  ``TXNLAB_EXPLORE_LONG=1`` also explores the real engine much further in every scenario (minutes).
"""
import os

import pytest

from txnlab import MUTATIONS
from txnlab.sweep.counterexample import Counterexample
from txnlab.sweep.explore import BAD, Explorer, main, replay
from txnlab.sweep.explore_scenarios import SCENARIO_OF, SCENARIOS
from txnlab.sweep.recipes import recipe

BROKERS = 3
# runs within which every mutation of the scenario must be found, and the real engine must show nothing
BOUND = {"copier": 150, "rewind": 30, "aborted-input": 30, "group": 30, "late-produce": 30, "blackout": 30}
LONG_RUNS = 3_000

# mutation -> what its counterexample may break (invariants of the step checks, anomalies of the history)
BREAKS = {
    "no-dedup": {"duplicate"},
    "no-fencing": {"G1a", "duplicate", "zombie-commit", "inconsistent-offsets", "lost-write"},
    "ignore-lso": {"read-above-lso", "G1a"},
    "no-marker-retry": {"lost-write", "hanging-transaction", "unseen", "G1a", "offsets-outputs-mismatch"},
    "offsets-outside-txn": {"lost-write", "offsets-outputs-mismatch", "duplicate"},
    "no-coordinator-reload": {"hanging-transaction"},
    "unclean-election": {"lost-write", "unseen"},
    "naive-client-classic": {"G1a", "duplicate", "hanging-transaction"},
    "lso-ignores-hw": {"read-above-hw", "read-above-lso"},
    "no-txn-generation-check": {"kip447-fencing"},
    "aborted-index-from-fetch-offset": {"G1a"},
    "offset-fetch-unstable": {"require-stable"},
}


def test_every_mutation_has_a_scenario_and_a_bound():
    assert set(BREAKS) == set(MUTATIONS) == set(SCENARIO_OF)
    assert set(SCENARIO_OF.values()) == set(BOUND) == set(SCENARIOS)


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_the_explorer_finds_the_mutation_in_its_scenario(mutation):
    ex = Explorer(mutation, brokers=BROKERS)
    bound = BOUND[ex.scenario.name]
    assert not ex.explore(bound), f"{mutation}: no counterexample in {ex.runs} runs of scenario {ex.scenario.name}"
    ce = ex.counterexample
    print(f"\n{mutation}: scenario {ex.scenario.name}, {ex.runs} runs, {ce.outcome}: {ce.broken}")
    assert ce.outcome in BAD and set(ce.broken) & BREAKS[mutation], (ce.outcome, ce.broken)
    found = ex.found()
    assert found.config["mutation"] == mutation and found.config["scenario"] == ex.scenario.name
    assert Counterexample.from_json(found.to_json()) == found


@pytest.mark.parametrize("scenario", sorted(BOUND))
def test_the_real_engine_shows_no_counterexample_in_the_same_bound(scenario):
    ex = Explorer(None, brokers=BROKERS, scenario=scenario)
    ok = ex.explore(BOUND[scenario])
    assert ok, f"{ex.counterexample.outcome}: {ex.counterexample.detail}"
    assert set(ex.histogram) <= {"exactly-once", "exactly-once (after an abort)", "pruned (state seen before)"}


@pytest.mark.skipif(os.environ.get("TXNLAB_EXPLORE_LONG") != "1", reason="the long exploration: TXNLAB_EXPLORE_LONG=1")
@pytest.mark.parametrize("scenario", sorted(BOUND))
def test_long_the_real_engine_shows_no_counterexample(scenario):
    ex = Explorer(None, brokers=BROKERS, scenario=scenario)
    assert ex.explore(LONG_RUNS), f"{ex.counterexample.outcome}: {ex.counterexample.detail}"


@pytest.mark.parametrize("mutation", ["unclean-election", "no-txn-generation-check"])
def test_a_new_scenario_s_counterexample_replays_and_opens_in_the_stepper_recipe(mutation):
    ex = Explorer(mutation, brokers=BROKERS)
    assert not ex.explore(BOUND[ex.scenario.name])
    choices = ex.counterexample.choices
    first = replay(choices, mutation, brokers=BROKERS)
    second = replay(choices, mutation, brokers=BROKERS)
    assert first.outcome in BAD and first.broken == ex.counterexample.broken
    assert first.cluster.trace.to_jsonl() == second.cluster.trace.to_jsonl()
    again = recipe(ex.found())._explorer()
    assert (again.scenario, again.mutation, again.brokers) == (ex.scenario, mutation, BROKERS)


def test_the_command_line_says_which_mutation_the_counterexample_catches(capsys):
    code = main(["--brokers", "3", "--mutation", "no-txn-generation-check", "--max-runs", "30"])
    out = capsys.readouterr().out
    assert code == 1 and "scenario group:" in out
    assert "the counterexample catches mutation no-txn-generation-check in scenario 'group'" in out
    assert "kip447-fencing" in out and "--mutation no-txn-generation-check" in out


def test_a_scenario_the_brokers_cannot_run_is_refused_with_the_rule():
    with pytest.raises(ValueError, match="scenario 'blackout' runs with 3 brokers, got 1"):
        Explorer("unclean-election", brokers=1)
    with pytest.raises(ValueError, match="unknown scenario 'nope'"):
        Explorer(scenario="nope")


def test_the_stepper_opens_a_counterexample_that_holds_the_copier_s_own_choice():
    """rewind: the copier chose to abort (a choice point of the application, made on the stepper's client thread)
    and its OffsetFetch then raced the ABORT markers; the stepper's run is the explorer's, step for step."""
    from widgets import Stepper

    ex = Explorer("offset-fetch-unstable", brokers=BROKERS)
    assert not ex.explore(BOUND["rewind"])
    plain = replay(ex.counterexample.choices, "offset-fetch-unstable", brokers=BROKERS)
    assert "copier.1 calls abort_transaction()" in plain.cluster.trace.text()
    s = Stepper.open(Counterexample.from_json(ex.found().to_json()))
    stepped = [line for line in s.cluster.trace.text().splitlines() if "scenario's client code" not in line]
    assert stepped == plain.cluster.trace.text().splitlines()
    assert [ok for _, ok, _ in s.invariants] == [False]
    s.close()


def test_the_readme_table_is_the_one_the_saved_figures_give():
    """README's explorer table is generated from bench/explorer_mutations.json (``--mutation all --json``):
    every mutation found, the real engine clean in every scenario."""
    import json
    import pathlib

    from txnlab.sweep.explore_report import BEGIN, END, note, table

    root = pathlib.Path(__file__).resolve().parent.parent
    d = json.loads((root / "bench" / "explorer_mutations.json").read_text())
    assert [r["mutation"] for r in d["mutations"]] == list(MUTATIONS)
    assert all(r["found"] for r in d["mutations"]) and not any(r["found"] for r in d["real"])
    assert {r["scenario"] for r in d["real"]} == set(SCENARIOS)
    readme = (root / "README.md").read_text()
    block = readme.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert block == note(d["brokers"], d["max_runs"], d["real_runs"], d["faults"], d["reorderings"]) + "\n\n" + \
        table(d["mutations"], d["real"])


def test_the_report_explores_mutations_then_the_real_engine_in_every_scenario():
    from txnlab.sweep.explore_report import measure, table

    got = list(measure(5, 2, mutations=["ignore-lso"], brokers=BROKERS))
    assert [(k, r["mutation"], r["scenario"]) for k, r in got] == \
        [("mutation", "ignore-lso", "copier")] + [("real", "", s) for s in SCENARIOS]
    rows = [r for k, r in got if k == "mutation"]
    assert rows[0]["found"] and "read-above-lso" in rows[0]["broken"]
    assert "| `ignore-lso` | copier | 1 | read-above-lso |" in table(rows, [r for k, r in got if k == "real"])
