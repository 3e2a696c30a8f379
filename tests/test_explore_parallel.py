"""The explorer's work side by side (``txnlab.sweep.explore_parallel``): ``--mutation all``'s explorations, one per
worker, and one exploration split into parts with ``--split K``.  What is found and every figure depend on the
explorations and on K, never on where they ran (``tests/test_sweep_spark.py`` runs the same on Spark)."""
import re

from helpers import explorer_outputs
from txnlab.sweep.explore import main, replay
from txnlab.sweep.explore_parallel import explore_row, explore_split, split


MUTATION_TABLE = ["--mutation", "all", "--brokers", "3", "--max-runs", "5", "--real-runs", "2"]


def test_the_mutation_table_is_the_same_from_worker_processes(capsys):
    (_, alone), (_, two) = explorer_outputs(capsys, MUTATION_TABLE, ["--jobs", "2"])
    assert two == alone
    assert "| `ignore-lso` | copier | 1 | read-above-lso |" in alone
    assert "| copier | 2 | none |" in alone


def test_a_split_exploration_reports_the_same_from_one_process_or_two(capsys):
    (s1, alone), (s2, two) = explorer_outputs(capsys, ["--mutation", "no-fencing", "--brokers", "3", "--split", "4"],
                                              ["--jobs", "2"])
    assert s1 == s2 == 1
    assert alone[1] == "parts: 4 (--split 4), side by side: 1 process(es)"
    assert two[1] == "parts: 4 (--split 4), side by side: 2 process(es)"
    assert two[2:] == alone[2:]
    assert "counterexample: seed 0, choices 1,1,0,0,0,0,0,0,2" in alone


def test_the_parts_find_the_counterexample_the_one_search_finds_and_it_replays():
    spec = {"mutation": "no-fencing", "brokers": 3, "max_runs": 400}
    one = explore_row(spec)
    parts = explore_split(spec, 4, jobs=2)
    assert one["found"] and parts["found"]
    assert parts["choices"] == one["choices"] == [1, 1, 0, 0, 0, 0, 0, 0, 2]
    assert parts["parts"] == 4 and parts["runs"] > one["runs"]       # each part runs to its own first counterexample
    res = replay(parts["choices"], mutation="no-fencing", brokers=3)
    assert res.outcome == "violation" and "G1a" in res.broken


def test_the_parts_add_up_to_the_whole_of_their_runs_outcomes_and_states():
    spec = {"brokers": 3, "max_runs": 60}
    head, specs = split(spec, 3)
    assert len(specs) == 3 and head["runs"] == 1
    # dealt out in search order, one prefix to each part in turn; each part starts from the states seen so far
    assert [s["indexes"][:2] for s in specs] == [[0, 3], [1, 4], [2, 5]]
    assert all(s["visited"] == head["visited"] and s["max_runs"] == -(-59 // 3) for s in specs)
    # one round: the parts as dealt, the 59 runs left shared out 20, 20, 19
    rows = [explore_row(dict(s, max_runs=n)) for s, n in zip(specs, (20, 20, 19))]
    merged = explore_split(spec, 3, round_runs=10**6)
    assert merged["runs"] == 1 + sum(r["runs"] for r in rows) == 60
    assert sum(merged["histogram"].values()) == merged["runs"]
    states = set(head["visited"]).union(*(r["new_states"] for r in rows))
    assert merged["states"] == len(states) > len(head["visited"])
    assert not merged["found"] and not merged["complete"]           # 60 runs do not finish the scenario


def test_the_parts_share_the_states_they_saw_between_rounds():
    """The whole of the copier scenario: one search, four parts in one round, four parts in rounds of five runs.
    Each visits every state; rounds prune what the other parts saw before, so they make fewer runs than one round,
    and more than one search (a part does not see the others' states of the same round)."""
    spec = {"max_runs": 100_000}
    one = explore_row(spec)
    whole = explore_split(spec, 4, jobs=2, round_runs=10**6)
    rounds = explore_split(spec, 4, jobs=2, round_runs=5)
    assert one["complete"] and whole["complete"] and rounds["complete"]
    assert one["states"] == whole["states"] == rounds["states"]
    assert one["runs"] < rounds["runs"] < whole["runs"]
    assert sum(rounds["histogram"].values()) == rounds["runs"]
    assert sum(p["max_runs"] for p in rounds["part_rows"]) >= rounds["runs"] - 1     # each round's budget, added up


def test_an_exploration_that_ends_before_its_parts_are_dealt_is_the_one_search():
    spec = {"mutation": "ignore-lso", "brokers": 3, "max_runs": 50}
    one = explore_row(spec)
    assert one["found"] and one["runs"] == 1          # the very first run reads above the LSO
    merged = explore_split(spec, 8)
    assert merged["parts"] == 0
    assert {k: merged[k] for k in one} == one


def test_explorations_and_parts_are_written_as_a_table(tmp_path, capsys):
    import pandas as pd

    from txnlab import MUTATIONS
    from txnlab.sweep.explore_scenarios import SCENARIOS
    path = str(tmp_path / "explore.parquet")
    main(["--mutation", "all", "--brokers", "3", "--max-runs", "5", "--real-runs", "2", "--table", path])
    df = pd.read_parquet(path)
    assert list(df["mutation"]) == list(MUTATIONS) + [""] * len(SCENARIOS)
    assert df[df["mutation"] == "ignore-lso"].iloc[0][["runs", "found", "broken"]].tolist() == [1, True, "read-above-lso"]
    path = str(tmp_path / "parts.csv")
    assert main(["--brokers", "3", "--max-runs", "40", "--split", "4", "--table", path]) == 0
    printed = int(re.search(r"^runs: (\d+),", capsys.readouterr().out, re.M).group(1))
    df = pd.read_csv(path)
    assert list(df["part"]) == [0, 1, 2, 3] and set(df["found"]) == {False}
    assert 1 + df["runs"].sum() == printed          # the first phase's run, then the parts'


def test_split_is_refused_where_it_has_no_meaning(capsys):
    import pytest
    for args in (["--mutation", "all", "--split", "4"], ["--split", "0"]):
        with pytest.raises(SystemExit) as e:
            main(args)
        assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--split: --mutation all runs each exploration whole" in err and "--split: at least 1 part, got 0" in err
