"""The history checker finds each Jepsen anomaly in a small hand-written history, and nothing in a clean one."""
from txnlab.check import (FAIL, INFO, OK, History, check, check_atomic, check_bank, check_copy, check_fencing,
                          check_offsets, explain, is_allowed)


def send(key, value, offset):
    return ["send", key, value, offset]


def poll(key, *entries):
    return ["poll", key, [list(e) for e in entries]]


def clean_history() -> History:
    h = History()
    h.add("p#1", "txn", [send("t-0", "a", 0), send("t-0", "b", 1)], OK)
    h.add("p#1", "txn", [send("t-0", "x", 3)], FAIL)           # aborted; the marker sits at 2
    h.add("p#1", "txn", [send("t-0", "c", 5)], OK)
    h.add("c#1", "assign", [["seek", "t-0", 0]])
    h.add("c#1", "poll", [poll("t-0", (0, "a"), (1, "b"))])
    h.add("c#1", "poll", [poll("t-0", (5, "c"))])
    return h


def test_a_clean_history_has_no_anomalies():
    r = check(clean_history())
    assert r.ok and r.anomalies == {}, r.explain()


def test_reading_a_value_of_an_aborted_transaction_is_g1a():
    h = clean_history()
    h.add("c#2", "poll", [poll("t-0", (3, "x"))])
    r = check(h)
    assert r.names() == ["G1a"]
    assert "did not commit" in r.violations["G1a"][0].detail
    assert "aborted read" in r.explain()


def test_reading_a_value_before_its_writer_asked_to_commit_is_an_undecided_read():
    h = History()
    h.add("p#1", "txn", [send("t-0", "a", 0)], OK, 0, 50, commit_at=40)
    h.add("c#1", "poll", [poll("t-0", (0, "a"))], OK, 10, 20)
    h.add("c#2", "poll", [poll("t-0", (0, "a"))], OK, 45, 60)      # after the commit call: fine
    r = check(h)
    assert r.names() == ["undecided-read"] and len(r.violations["undecided-read"]) == 1


def test_an_acknowledged_write_nobody_reads_below_the_highest_read_offset_is_a_lost_write():
    h = History()
    h.add("p#1", "send", [send("t-0", "a", 0), send("t-0", "b", 1), send("t-0", "c", 2)], OK)
    h.add("c#1", "poll", [poll("t-0", (0, "a"), (2, "c"))])
    r = check(h)
    assert "lost-write" in r.names()
    assert any("'b'" in a.detail for a in r.violations["lost-write"])


def test_an_acknowledged_write_missing_from_the_final_read_is_unseen():
    h = History(attrs={"final_keys": ["t-0"]})
    h.add("p#1", "send", [send("t-0", "a", 0), send("t-0", "b", 1)], OK)
    h.add("final", "final-read", [poll("t-0", (0, "a"))])
    assert check(h).names() == ["unseen"]


def test_one_value_at_two_offsets_is_a_duplicate_and_two_values_at_one_offset_are_inconsistent():
    h = History()
    h.add("p#1", "send", [send("t-0", "a", 0)], OK)
    h.add("c#1", "poll", [poll("t-0", (0, "a"), (1, "a"))])
    h.add("c#2", "poll", [poll("t-0", (0, "z"))])
    names = check(h).names()
    assert "duplicate" in names and "inconsistent-offsets" in names


def test_polls_of_one_consumer_that_skip_or_go_back_are_flagged():
    h = clean_history()
    h.add("c#9", "poll", [poll("t-0", (0, "a"))])
    h.add("c#9", "poll", [poll("t-0", (5, "c"))])              # skips b
    h.add("c#9", "poll", [poll("t-0", (1, "b"))])              # goes back
    r = check(h)
    assert {"poll-skip", "nonmonotonic-poll"} <= set(r.names())


def test_a_seek_resets_the_expected_position():
    h = clean_history()
    h.add("c#9", "poll", [poll("t-0", (0, "a"), (1, "b"))])
    h.add("c#9", "assign", [["seek", "t-0", 0]])                # rewind after an abort: allowed
    h.add("c#9", "poll", [poll("t-0", (0, "a"))])
    h.add("c#9", "assign", [["seek", "t-0", 1]])
    h.add("c#9", "poll", [poll("t-0", (5, "c"))])               # but from 1, b comes first
    r = check(h)
    assert r.names() == ["poll-skip"]


def test_skips_and_reversals_inside_one_poll_are_the_int_variants():
    h = clean_history()
    h.add("c#9", "poll", [poll("t-0", (0, "a"), (5, "c"))])
    h.add("c#8", "poll", [poll("t-0", (1, "b"), (0, "a"))])
    assert {"int-poll-skip", "int-nonmonotonic-poll"} <= set(check(h).names())


def test_sends_of_one_producer_must_get_increasing_offsets():
    h = History()
    h.add("p#1", "txn", [send("t-0", "a", 4), send("t-0", "b", 3)], OK)
    h.add("p#1", "txn", [send("t-0", "c", 1)], OK)
    h.add("c#1", "poll", [poll("t-0", (1, "c"), (3, "b"), (4, "a"))])
    names = check(h).names()
    assert "int-nonmonotonic-send" in names and "nonmonotonic-send" in names


def test_interleaved_writes_of_two_transactions_are_int_send_skip_and_g0_both_allowed():
    h = History()
    h.add("p#1", "txn", [send("t-0", "a1", 0), send("t-1", "a2", 1), send("t-0", "a3", 2)], OK)
    h.add("p#2", "txn", [send("t-0", "b1", 1), send("t-1", "b2", 0)], OK)
    h.add("c#1", "poll", [poll("t-0", (0, "a1"), (1, "b1"), (2, "a3")), poll("t-1", (0, "b2"), (1, "a2"))])
    r = check(h)
    assert r.ok
    assert {"int-send-skip", "G0"} <= set(r.anomalies)
    assert is_allowed("G0") and is_allowed("int-send-skip")


def test_a_cycle_of_reads_is_g1c_and_a_violation():
    h = History()
    h.add("t#1", "txn", [send("x-0", "x1", 0), poll("y-0", (0, "y1"))], OK)
    h.add("t#2", "txn", [send("y-0", "y1", 0), poll("x-0", (0, "x1"))], OK)
    r = check(h)
    assert "G1c" in r.violations
    assert "cycle" in r.violations["G1c"][0].detail


def test_copier_output_must_be_its_committed_input_exactly_once():
    h = History(attrs={"finished": True})
    h.add("final", "final-read", [poll("in-0", (0, "v1"), (1, "v2"), (2, "v3")),
                                  poll("out-0", (0, "v1|c.1"), (1, "v1|c.2"), (2, "v2|c.2"))])
    r = check_copy(h, "in", "out")
    assert set(r.names()) == {"duplicate", "lost-write"}
    assert "v1" in r.violations["duplicate"][0].detail and "v3" in r.violations["lost-write"][0].detail


def test_committed_offsets_must_agree_with_the_outputs():
    h = History()
    h.add("final", "final-read", [poll("in-0", (0, "v1"), (1, "v2")), poll("out-0", (0, "v1|c"))])
    h.add("g", "committed-offsets", [], OK, offsets={"in-0": 2})
    assert check_offsets(h, "in", "out").names() == ["offsets-outputs-mismatch"]


def test_bank_total_and_multi_partition_atomicity():
    h = History(attrs={"finished": True})
    h.add("final", "final-read", [poll("acc-0", (0, "t1:0:-5|x"), (1, "t2:0:-3|x")), poll("acc-1", (0, "t1:1:5|x"))])
    r = check_bank(h, "acc", initial_total=100)
    assert set(r.names()) == {"wrong-total", "torn-transaction"}
    h2 = History()
    h2.add("w#1", "txn", [send("m-0", "a", 0), send("m-1", "b", 0)], OK)
    h2.add("final", "final-read", [poll("m-0", (0, "a"))])
    assert check_atomic(h2, "m").names() == ["torn-transaction"]


def test_a_commit_after_a_newer_instance_initialised_is_a_zombie_commit():
    h = History()
    h.add("p#1", "init", [], OK, 0, 10, transactional_id="t", instance=1)
    h.add("p#2", "init", [], OK, 20, 30, transactional_id="t", instance=2)
    h.add("p#1", "txn", [send("o-0", "z", 0)], OK, 15, 50, transactional_id="t", instance=1, commit_at=40)
    assert check_fencing(h).names() == ["zombie-commit"]


def test_history_round_trips_through_json_lines():
    h = clean_history()
    h.attrs["finished"] = True
    again = History.from_jsonl(h.to_jsonl())
    assert again.attrs == h.attrs
    assert [o.to_dict() for o in again] == [o.to_dict() for o in h]


def test_every_anomaly_has_a_plain_words_explanation():
    for name in ("G1a", "lost-write", "duplicate", "poll-skip", "nonmonotonic-poll", "int-poll-skip",
                 "int-nonmonotonic-poll", "nonmonotonic-send", "int-nonmonotonic-send", "int-send-skip", "G0", "G1c"):
        assert len(explain(name).split()) > 10, name
    assert INFO != FAIL
