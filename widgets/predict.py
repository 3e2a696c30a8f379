"""A prediction the learner answers, checked against the simulation: the learning loop of every chapter.

Owns ``Predict`` (a question with choices, or a number / an offset to type; Check says right or wrong and
why, in plain words) and ``Exercise`` (a task whose answer the learner writes -- code or a value -- and the
lab checks; its solution stays hidden until asked for).  Nothing here prints an answer: Run All shows the
questions only; the expected answer is computed when the learner presses Check (so it can read the
simulation as it is *then*) and is shown only after an answer or on Reveal.
"""
from __future__ import annotations

import functools
import html
import inspect
from typing import Any, Callable, Optional, Sequence

import ipywidgets as W

CSS = """<style>
.txl-q{border-left:4px solid #1c7ed6;background:#e7f5ff;padding:6px 10px;margin:4px 0;font-size:14px;line-height:1.45}
.txl-q .txl-qh{color:#1864ab;font-size:12px;font-weight:600;letter-spacing:.04em}
.txl-ok{border-left:4px solid #2b8a3e;background:#ebfbee;padding:6px 10px;margin:4px 0;font-size:14px}
.txl-no{border-left:4px solid #c92a2a;background:#fff5f5;padding:6px 10px;margin:4px 0;font-size:14px}
.txl-info{border-left:4px solid #868e96;background:#f8f9fa;padding:6px 10px;margin:4px 0;font-size:14px}
</style>"""

KINDS = ("choice", "number", "offset", "text", "code")
# Check (or Show the answer) pressed before the cell that runs the simulation: its answer cannot be read yet
class _NotRunYet(Exception):
    """The check read a name or a cluster that a later cell makes."""


NOT_RUN_YET = ("The lab has not run this part of the simulation yet: run the cell below that runs it (your answer "
               "stays), then press Check again.")
# what a check raises when it reads a name, a key or an attribute a later cell makes (anything else is a bug of the
# check itself, and is said so: it must not pass for "not run yet")
NOT_RUN_YET_ERRORS = (NameError, LookupError, AttributeError)


def _check_failed(e: Exception) -> str:
    return (f"The lab could not check this answer ({type(e).__name__}: {e}). That is a bug of the lab, not of your "
            f"answer: tell your teacher.")


def _takes_argument(fn: Callable) -> bool:
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return True
    return len(params) >= 1


def _same(answer: Any, expected: Any) -> bool:
    if isinstance(expected, (list, tuple, set, frozenset)) and not isinstance(answer, (list, tuple, set)):
        return any(_same(answer, e) for e in expected)          # several right answers
    if isinstance(expected, bool) or isinstance(answer, bool):
        return answer == expected
    if isinstance(expected, (int, float)) and isinstance(answer, (int, float)):
        return answer == expected
    return str(answer).strip().lower() == str(expected).strip().lower()


def _shown(value: Any) -> str:
    if isinstance(value, (list, tuple, set, frozenset)):
        return " or ".join(str(v) for v in value)
    return str(value)


class Predict:
    """``Predict(question, choices=[...])`` or ``Predict(question, kind="number" | "offset")``, with
    ``check=`` the expected answer, or a function of no arguments that returns it (read from the simulation
    when the learner presses Check), or a function of the answer that returns True/False (or
    ``(True/False, words)``); ``why=`` says, in plain words, why the right answer is right (a string, or a
    function of no arguments returning one, also read at Check time).

    Python face (what a click does): ``answer(value)`` sets the answer and checks it; ``check()``;
    ``reveal()``; ``verdict`` (None before an answer, then True / False); ``feedback`` (the words shown);
    ``widget``.  Displaying a ``Predict`` shows the question and the answer controls only.
    """

    why_when_wrong = True           # a prediction explains a wrong answer too

    def __init__(self, question: str, choices: Optional[Sequence[Any]] = None, *, kind: Optional[str] = None,
                 check: Any = None, why: Any = "", title: str = "Predict", unit: str = "") -> None:
        if kind is None:
            kind = "choice" if choices else "number"
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        if kind == "choice" and not choices:
            raise ValueError("a choice question needs choices=[...]")
        if check is None:
            raise ValueError("check= is required: the expected answer, or a function that finds or judges it")
        self.question, self.kind, self.title, self.unit = question, kind, title, unit
        self.choices = [str(c) for c in choices] if choices else []
        self._check, self._why = check, why
        self.verdict: Optional[bool] = None
        self.feedback = ""
        self.revealed = False
        self.tries = 0
        self._build()
        ALL.append(self)

    # ------------------------------------------------------------------ answers
    def _expected(self) -> Any:
        c = self._check
        if callable(c) and not _takes_argument(c):
            return c()
        return c

    def _why_text(self) -> str:
        return str(self._why() if callable(self._why) else self._why)

    def _judge(self, answer: Any) -> tuple[bool, str]:
        c = self._check
        if callable(c) and _takes_argument(c):
            out = c(answer)
            ok, words = (out if isinstance(out, tuple) else (bool(out), ""))
            return bool(ok), str(words)
        try:
            expected = self._expected()
        except NOT_RUN_YET_ERRORS as e:     # the answer is read from a cell the learner has not run yet
            raise _NotRunYet from e
        if self.kind in ("number", "offset") and not isinstance(answer, (int, float)):
            return False, f"{answer!r} is not a number"
        return _same(answer, expected), f"The simulation shows: {_shown(expected)}{self.unit}."

    @property
    def value(self) -> Any:
        """The learner's current answer (None when nothing is chosen or typed yet)."""
        if self.kind == "choice":
            return self._input.value
        if self.kind == "code":
            return None
        raw = self._input.value.strip()
        if self.kind == "text":
            return raw or None
        if not raw:
            return None
        try:
            return int(raw)
        except ValueError:
            try:
                return float(raw)
            except ValueError:
                return raw

    def answer(self, value: Any) -> bool:
        """Answer ``value`` (a choice, or a number / an offset) and check it, as a click on Check does."""
        if self.kind == "choice":
            if str(value) not in self.choices:
                raise ValueError(f"not one of the choices: {value!r}; choices: {self.choices}")
            self._input.value = str(value)
        else:
            self._input.value = str(value)
        return self.check()

    def check(self) -> Optional[bool]:
        answer = self.value
        if answer is None:
            self._say("txl-info", "Write your answer in the cell below and run it: it calls <code>submit(...)</code>."
                      if self.kind == "code" else "Choose or type your answer first, then press Check.")
            self.feedback = "no answer yet"
            return None
        try:
            ok, words = self._judge(answer)
        except _NotRunYet:
            self._say("txl-info", NOT_RUN_YET)
            self.feedback = "simulation not run yet"
            return None
        except Exception as e:  # noqa: BLE001 - a check with a bug of its own: said so, the answer kept
            self._say("txl-no", html.escape(_check_failed(e)))
            self.feedback = "the check failed"
            return None
        self.tries += 1
        why = self._why_text() if ok or self.why_when_wrong else ""
        self.verdict = ok
        head = "Right." if ok else "Not quite."
        body = " ".join(x for x in (words, why) if x)
        self.feedback = f"{head} {body}".strip()
        self._say("txl-ok" if ok else "txl-no", f"<b>{head}</b> {html.escape(body)}")
        return ok

    def reveal(self) -> str:
        """Show the expected answer and why (the learner asked for it)."""
        c = self._check
        if callable(c) and _takes_argument(c):
            text = self._why_text() or "See the check cell below."
        else:
            try:
                expected = self._expected()
            except NOT_RUN_YET_ERRORS:      # the answer is read from a cell the learner has not run yet
                self._say("txl-info", NOT_RUN_YET)
                self.feedback = "simulation not run yet"
                return self.feedback
            except Exception as e:  # noqa: BLE001 - a check with a bug of its own
                self._say("txl-no", html.escape(_check_failed(e)))
                self.feedback = "the check failed"
                return self.feedback
            text = f"The answer: {_shown(expected)}{self.unit}. {self._why_text()}".strip()
        self.revealed = True
        self.feedback = text
        self._say("txl-info", html.escape(text))
        return text

    # ------------------------------------------------------------------ widget
    def _build(self) -> None:
        q = (f"{CSS}<div class='txl-q'><div class='txl-qh'>{html.escape(self.title.upper())}</div>"
             f"{self.question}</div>")
        self._question = W.HTML(q)
        if self.kind == "choice":
            self._input = W.RadioButtons(options=self.choices, value=None, layout=W.Layout(width="auto"))
        elif self.kind == "code":
            self._input = W.HTML("<i>Your answer is code: write it in the next cell and run it.</i>")
        else:
            hint = {"offset": "an offset, e.g. 3", "number": "a number"}.get(self.kind, "your answer")
            self._input = W.Text(placeholder=hint, layout=W.Layout(width="220px"))
        self._check_button = W.Button(description="Check", button_style="primary", icon="check")
        self._reveal_button = W.Button(description="Show the answer", tooltip="only if you are stuck")
        self._check_button.on_click(lambda _b: self.check())
        self._reveal_button.on_click(lambda _b: self.reveal())
        self._out = W.HTML("")
        buttons = [self._reveal_button] if self.kind == "code" else [self._check_button, self._reveal_button]
        self.widget = W.VBox([self._question, self._input, W.HBox(buttons), self._out])

    def _say(self, cls: str, inner: str) -> None:
        self._out.value = f"<div class='{cls}'>{inner}</div>"

    def __repr__(self) -> str:
        state = "unanswered" if self.verdict is None else ("right" if self.verdict else "wrong")
        return f"<{type(self).__name__} {state}: {html.unescape(self.question)[:60]!r}>"

    def _repr_mimebundle_(self, **kw):
        bundle = self.widget._repr_mimebundle_(**kw)
        if isinstance(bundle, dict):     # a reopened notebook without a kernel shows this line, never the answer
            bundle["text/plain"] = "Prediction: run this cell to answer it."
        return bundle


class Exercise(Predict):
    """A task whose answer the learner writes -- a value typed in the box, or code in the cell above that
    they pass to ``submit(...)`` -- and the lab checks.  ``check`` judges the submission (a function of it
    returning True/False or ``(True/False, words)``); ``solution`` is shown only on Reveal.

        ex = Exercise("Make the LSO stop at 4 ...", check=lambda answer: ..., solution="...")
        ex                       # shows the task, a box for a value, Check and Show the solution
        ex.submit(my_function)   # or: check code the learner wrote in a cell
    """

    why_when_wrong = False          # an exercise's explanation is its answer: shown once it is right, as submit() does

    def __init__(self, task: str, *, check: Callable, solution: str, kind: str = "text", why: Any = "",
                 title: str = "Exercise") -> None:
        self.solution = solution
        super().__init__(task, kind=kind, check=check, why=why, title=title)
        self._reveal_button.description = "Show the solution"

    def submit(self, answer: Any) -> Optional[bool]:
        """Check ``answer`` (code the learner wrote: a function, a value, ...) and show the verdict.  A stub that
        still raises ``NotImplementedError`` is not an answer yet: nothing is judged."""
        try:
            ok, words = self._judge(answer)
        except NotImplementedError:
            self.feedback = ""
            self._say("txl-info", "Not answered yet: replace the <code>raise NotImplementedError</code> with your "
                                  "code and run the cell again.")
            return None
        self.tries += 1
        self.verdict = ok
        head = "Right." if ok else "Not yet."
        body = " ".join(x for x in (words, self._why_text() if ok else "") if x)
        self.feedback = f"{head} {body}".strip()
        self._say("txl-ok" if ok else "txl-no", f"<b>{head}</b> {html.escape(body)}")
        return ok

    def answer(self, value: Any) -> Optional[bool]:
        if self.kind == "code":
            return self.submit(value)
        self._input.value = str(value)
        return self.check()

    def reveal(self) -> str:
        self.revealed = True
        self.feedback = self.solution
        self._say("txl-info", f"<b>A solution</b><pre>{html.escape(self.solution)}</pre>")
        return self.solution


# ------------------------------------------------------------------------------ moments
_MOMENTS: dict = {}
ALL: list = []          # every Predict made in this kernel (the notebook tests read them after Run All)


def moment(scenario: str, until=None, *, seed: int = 0, variant: Optional[str] = None, faults: Sequence = (),
           **kw):
    """A fresh run of ``scenario`` stopped where ``until`` (a narration text, or a function of the stepper)
    first holds, after applying ``faults`` -- ``[(until, method, args...)]``, e.g. ``[("is now
    PrepareCommit", "crash", 0)]``, an argument may be a function of the stepper -- as a learner would.  For the check cells and the lazy checks of
    predictions: it never touches the learner's own stepper.  The same arguments give the same (cached) run."""
    from .stepper import Stepper
    key = (scenario, until if isinstance(until, str) else id(until), seed, variant, repr(faults),
           tuple(sorted(kw.items())))
    if key not in _MOMENTS:
        s = Stepper(scenario, seed=seed, variant=variant, **kw)
        for where, method, *args in faults:
            if where is not None and not s.step_until(where):
                raise ValueError(f"{scenario}: never reached {where!r}")
            getattr(s, method)(*(a(s) if callable(a) else a for a in args))     # an argument may read the run
        if until is not None and not s.step_until(until):
            raise ValueError(f"{scenario}: never reached {until!r}")
        _MOMENTS[key] = s
    return _MOMENTS[key]


@functools.lru_cache(maxsize=None)          # one function per id: ``moment`` caches replays by the function's identity
def reached(key_moment: str) -> Callable:
    """``until`` for ``moment`` / ``predict_at``: the run stands at (or past) the story's key moment ``key_moment``
    (its id), where one click on that key moment's button takes the learner."""
    def at_key_moment(stepper) -> bool:
        return stepper.position >= stepper.moments.find(key_moment)
    at_key_moment.__name__ = f"reached_{key_moment}"
    return at_key_moment


def at_moment(scenario: str, until, read: Callable, *, faults: Sequence = (), to_end: bool = False,
              skip_background: bool = True, **kw) -> Callable[[], Any]:
    """A function of no arguments -- for ``check=`` or ``why=`` -- that returns ``read(run)``, ``run`` being the
    replay ``moment(scenario, until, faults=...)`` (run on to its end first when ``to_end``).  Read when the
    learner presses Check, never before; never the learner's own stepper."""
    def value():
        run = moment(scenario, until, faults=faults, skip_background=skip_background, **kw)
        if to_end and not run.execution.done:
            run.run_to_end()
        return read(run)
    return value


def predict_at(question: str, scenario: str, until, read: Callable, *, choices: Optional[Sequence[Any]] = None,
               kind: Optional[str] = None, why: Any = "", unit: str = "", **moment_kw) -> Predict:
    """A ``Predict`` whose expected answer is read from a replay of ``scenario`` stopped where ``until`` first holds
    (``at_moment``): ``read(run)`` returns it -- a value, or one of ``choices``.  The chapters' one way to ask
    "what will the lab show at that moment?"::

        predict_at("Where is the LSO of orders-0?", "commit-visible-atomically", "calls commit_transaction()",
                   partition_value("orders", 0, "lso"), kind="offset", why="...")
    """
    return Predict(question, choices, kind=kind, check=at_moment(scenario, until, read, **moment_kw), why=why,
                   unit=unit)


def partition_value(topic: str, partition: int, key: str) -> Callable:
    """``read`` for ``predict_at``: the leader's ``key`` ('lso', 'hw', 'leo') of ``topic-partition`` in the run."""
    return lambda run: run.cluster.partition_state(topic, partition)[key]


def txn_value(transactional_id: str, key: str = "state") -> Callable:
    """``read`` for ``predict_at``: what the coordinator holds for ``transactional_id`` ('state', 'producer_epoch')."""
    return lambda run: run.cluster.transaction_state(transactional_id)[key]


def narration_says(text: str, yes: str, no: str) -> Callable:
    """``read`` for ``predict_at``: choice ``yes`` when the run's narration at that moment says ``text``, else ``no``."""
    return lambda run: yes if text in run.narration else no
