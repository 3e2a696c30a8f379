"""The learning loop: a prediction is answered, checked against the simulation and explained; nothing is
revealed before the learner answers or asks."""
from __future__ import annotations

import json

import pytest

from widgets import Stepper
from widgets.predict import Exercise, Predict


def _shown_text(p) -> str:
    """Everything a notebook would store or show for the widget: its display bundle and every child's state."""
    parts = [json.dumps(p._repr_mimebundle_(), default=str)]
    stack = [p.widget]
    while stack:
        w = stack.pop()
        parts.append(json.dumps(w.get_state(), default=str))
        stack.extend(getattr(w, "children", ()))
    return "\n".join(parts)


@pytest.fixture(scope="module")
def stepper():
    s = Stepper("commit-visible-atomically", skip_background=True)
    s.step_until("calls commit_transaction()")
    yield s
    s.close()


def _lso_question(s) -> Predict:
    return Predict("The records are replicated but the transaction is open. Where is the LSO of orders-0?",
                   kind="offset", check=lambda: s.cluster.partition_state("orders", 0)["lso"],
                   why="The LSO stops at the first offset of the oldest open transaction.")


def test_a_right_answer_is_told_right_with_the_explanation(stepper):
    p = _lso_question(stepper)
    assert p.answer(0) is True and p.verdict is True
    assert p.feedback.startswith("Right.")
    assert "oldest open transaction" in p.feedback and "simulation shows: 0" in p.feedback


def test_a_wrong_answer_is_told_wrong_with_the_explanation(stepper):
    p = _lso_question(stepper)
    assert p.answer(2) is False and p.verdict is False
    assert p.feedback.startswith("Not quite.")
    assert "oldest open transaction" in p.feedback and "simulation shows: 0" in p.feedback


def test_the_check_reads_the_simulation_when_the_learner_checks_not_before(stepper):
    s = Stepper("commit-visible-atomically", skip_background=True)
    try:
        p = Predict("Where is the HW of orders-0 now?", kind="offset",
                    check=lambda: s.cluster.partition_state("orders", 0)["hw"])
        s.step_until("calls commit_transaction()")          # the learner steps after the question was shown
        hw = s.cluster.partition_state("orders", 0)["hw"]
        assert hw > 0 and p.answer(hw) is True
    finally:
        s.close()


def test_choices_and_a_judging_function():
    seen = []
    p = Predict("Who finishes the transaction?", choices=["nobody", "the new coordinator"],
                check=lambda a: (seen.append(a) or a == "the new coordinator", "PrepareCommit is durable."))
    assert p.answer("nobody") is False and "PrepareCommit is durable." in p.feedback
    assert p.answer("the new coordinator") is True and seen == ["nobody", "the new coordinator"]
    with pytest.raises(ValueError, match="not one of the choices"):
        p.answer("maybe")


def test_nothing_is_revealed_before_an_answer():
    p = Predict("How many records does read_committed see?", kind="number", check=4,
                why="UNIQUE-EXPLANATION-TEXT", unit=" records")
    shown = _shown_text(p)
    assert "UNIQUE-EXPLANATION-TEXT" not in shown and "4 records" not in shown
    assert p.verdict is None and p.check() is None      # no answer: asked to answer, not told
    assert "UNIQUE-EXPLANATION-TEXT" not in _shown_text(p)
    assert "4 records" in p.reveal() and "UNIQUE-EXPLANATION-TEXT" in _shown_text(p)


def test_a_lazy_check_is_not_called_until_check():
    calls = []
    Predict("?", kind="number", check=lambda: calls.append(1) or 3)
    assert calls == []


def test_check_pressed_before_the_simulation_cell_ran_asks_to_run_it_and_keeps_the_answer():
    p = Predict("How many copies?", kind="number", check=lambda: len(not_run_yet_cluster.log), why="because")  # noqa: F821
    p._input.value = "2"
    assert p.check() is None and p.verdict is None and p.tries == 0
    assert "run the cell below" in p._out.value and p._input.value == "2"
    assert p.reveal() == "simulation not run yet" and not p.revealed
    later = Predict("Which?", choices=["a", "b"], check=lambda: {}["later"], why="because")
    assert later.answer("a") is None and later.verdict is None


def test_a_check_with_a_bug_of_its_own_says_so_instead_of_asking_to_run_a_cell():
    """Only a name, key or attribute a later cell makes means "not run yet"; any other failure of the check is the
    lab's bug, said as such, and the learner's answer is kept and not counted."""
    p = Predict("How many copies?", kind="number", check=lambda: 1 / 0, why="because")
    p._input.value = "2"
    assert p.check() is None and p.tries == 0 and p._input.value == "2"
    assert p.feedback == "the check failed" and "ZeroDivisionError" in p._out.value and "bug of the lab" in p._out.value
    assert "run the cell below" not in p._out.value
    assert p.reveal() == "the check failed" and not p.revealed


def test_an_exercise_typed_in_its_box_keeps_its_explanation_until_it_is_right():
    ex = Exercise("Fault kind?", check=lambda a: (a == "network", "caught" if a == "network" else "not caught"),
                  solution="network", why="a lost answer makes the producer resend")
    ex._input.value = "brokers"
    assert ex.check() is False and "resend" not in ex.feedback and "not caught" in ex.feedback
    ex._input.value = "network"
    assert ex.check() is True and "resend" in ex.feedback


def test_an_exercise_checks_code_the_learner_wrote_and_hides_its_solution():
    ex = Exercise("Write double(x).", kind="code", check=lambda f: (f(3) == 6, f"double(3) gave {f(3)}"),
                  solution="def double(x):\n    return 2 * x")
    assert "return 2 * x" not in _shown_text(ex)
    assert ex.submit(lambda x: x + 1) is False and "double(3) gave 4" in ex.feedback
    assert ex.submit(lambda x: 2 * x) is True and ex.feedback.startswith("Right.")
    assert "return 2 * x" in ex.reveal() and "return 2 * x" in _shown_text(ex)


def test_bad_questions_are_refused_with_the_rule():
    with pytest.raises(ValueError, match="kind must be one of"):
        Predict("?", kind="colour", check=1)
    with pytest.raises(ValueError, match="needs choices"):
        Predict("?", kind="choice", check=1)
    with pytest.raises(ValueError, match="check= is required"):
        Predict("?", kind="number")


def test_a_reopened_notebook_sees_a_run_this_cell_line():
    p = Predict("?", kind="number", check=1)
    assert p._repr_mimebundle_()["text/plain"] == "Prediction: run this cell to answer it."


def test_an_unwritten_stub_is_not_judged():
    def stub(x):
        raise NotImplementedError
    ex = Exercise("Write double(x).", kind="code", check=lambda f: f(3) == 6, solution="def double(x): ...")
    assert ex.submit(stub) is None and ex.verdict is None and ex.feedback == "" and ex.tries == 0


def test_a_question_about_a_moment_of_a_story_replays_it_only_when_checked(stepper):
    from widgets import predict as wp
    before = dict(wp._MOMENTS)
    p = wp.predict_at("Where is the LSO of orders-1 when the producer calls commit_transaction()?",
                      "commit-visible-atomically", "calls commit_transaction()", wp.partition_value("orders", 1, "lso"),
                      kind="offset", why="The open transaction's first record on orders-1 is at offset 0.")
    assert wp._MOMENTS == before                                   # nothing replayed before the learner checks
    position = stepper.position
    assert p.answer(2) is False and "The simulation shows: 0" in p.feedback
    assert p.answer(0) is True and "offset 0" in p.feedback
    assert stepper.position == position                            # the learner's own stepper never moves
    state = wp.predict_at("Which state does tx-orders have then?", "commit-visible-atomically",
                          "calls commit_transaction()", wp.txn_value("tx-orders"),
                          choices=["Ongoing", "PrepareCommit", "CompleteCommit"])
    assert state.answer("Ongoing") is True
    said = wp.predict_at("Is the transaction decided then?", "commit-visible-atomically", "calls commit_transaction()",
                         wp.narration_says("decided (PrepareCommit is durable)", "yes", "no"), choices=["yes", "no"])
    assert said.answer("no") is True


def test_a_question_about_the_end_of_a_branch_runs_it_to_its_end():
    from widgets import predict as wp
    crash = [("is now PrepareCommit", "crash", lambda st: st.cluster.transaction_coordinator("tx-orders"))]
    read = wp.at_moment("commit-visible-atomically", None, wp.txn_value("tx-orders"), faults=crash, to_end=True)
    assert read() == "CompleteCommit"                              # the new coordinator finished the commit


def test_a_question_about_a_key_moment_is_asked_where_one_click_on_its_button_lands():
    """``reached(id)``: a replay stops where the learner's key-moment button jumps (the same position), also on a
    branch with a fault, and the same id always gives the same function (replays are cached by it)."""
    from widgets import predict as wp
    assert wp.reached("first-prepare") is wp.reached("first-prepare")
    learner = Stepper("consume-transform-produce")
    learner.goto("first-prepare")
    run = wp.moment("consume-transform-produce", wp.reached("first-prepare"), skip_background=True)
    assert run.position == learner.position == run.moments.find("first-prepare")
    learner.close()
    crash = [("decided (PrepareCommit is durable)", "crash", lambda st: st.cluster.transaction_coordinator("tx-orders"))]
    branch = wp.moment("coordinator-dies-after-prepare", wp.reached("complete"), faults=crash, skip_background=True)
    assert branch.branch != "main" and branch.cluster.transaction_state("tx-orders")["state"] == "CompleteCommit"
    assert branch.position == branch.moments.find("complete") and branch.cluster.now > 9000   # after the failover
