"""The stepper: step, rewind and perturb every event of a scenario while the pictures follow.

Owns ``Stepper`` (what a notebook cell displays and a person drives: Step, Back, Run/Pause with a
speed, a slider to jump, Reset, a filter, faults at the current step, branches and their
comparison) and wires the views to the live run: for every lab the space-time diagram and the
trace; for a Kafka cluster the log strip and the coordinator view; for a RocketMQ lab the half and
op topics; for a two-phase-commit lab the participants and their durable logs.  The stepper needs
only the ``Lab`` face (kernel, trace, processes, faults), so the faults it offers are the lab's own
processes and in-flight messages.  Step goes to the next moment (``txnlab.gallery.moments``), exchange or kernel
event (a filter may skip over non-matching ones);
Back re-executes the branch deterministically from its seed to the earlier position.  A fault
forks a new branch (the old one is kept); ``compare`` says how their endings differ.
"""
from __future__ import annotations

from typing import Callable, Optional, Union

from txnlab.gallery.moments import GRANULARITIES
from txnlab.protocol.errors import Errors

from .cluster_view import in_flight_now, is_kafka
from .execution import Branch, Fault, Story
from .history import EVENT_KINDS, History, StepFilter
from .invariants import live_invariants
from .coordinator_view import CoordinatorView
from .lab_views import lab_views
from .log_strip import LogStrip
from .spacetime import SpaceTime
from .stepper_ui import StepperUI

NodeRef = Union[int, str, object]


def _check_granularity(value: str) -> str:
    if value not in GRANULARITIES:
        raise ValueError(f"granularity must be one of {', '.join(GRANULARITIES)}, not {value!r}")
    return value


class Stepper(StepperUI):
    """``Stepper(scenario, seed=0)``: ``scenario`` is a scenario name (the Kafka gallery, or a comparison
    lab's story such as ``"rocketmq-end-transaction-lost"`` or ``"2pc-coordinator-crash-blocks"``), a
    Scenario, or a function of a cluster (``lab=`` builds another kind of lab for it from the seed).

    Python face: ``step(n)``, ``back(n)``, ``jump(i)``, ``reset()``, ``step_until(text or fn)``,
    ``position``, ``length``, ``cluster`` / ``lab`` (the state at the current position), ``narration``,
    ``widget``; faults ``crash``, ``shutdown``, ``restart``, ``pause``, ``drop``, ``delay``, ``duplicate``,
    ``isolate``, ``heal`` (each forks a branch); ``branches``, ``switch``, ``variant``, ``compare``;
    ``save`` / ``load`` (branches to and from JSON).

    Semantic zoom: ``granularity`` ('moment' by default, 'exchange', 'event'; ``skip_background=True`` alone
    defaults to 'event', as before) says what one Step is; the position stays the kernel step, so Back, jump,
    branches and determinism are the same at every granularity.  ``key_moments`` lists the story's named
    moments, ``goto(id or caption)`` / ``Stepper(name, at=...)`` opens at one (``saved=`` + ``branch=`` first
    load a saved branch with its faults); ``invariants`` are the ✓ / ✗ checks at the current step;
    ``present()`` is presenter mode (one 1280×720 screen).

    The scenario's client code runs in a thread of its own and waits inside its blocking calls
    until Step executes the next event for it.  Read ``cluster`` freely; a blocking call made on it
    from a notebook cell runs plainly (outside the stepper) and is not replayed by Back.
    """

    def __init__(self, scenario, seed: int = 0, *, variant: Optional[str] = None, brokers: int = 3,
                 config: Optional[dict] = None, skip_background: bool = False, topics: Optional[list] = None,
                 max_steps: int = 50_000, window: Optional[int] = None, max_cells: int = 200, title: Optional[str] = None,
                 lab: Optional[Callable] = None, granularity: Optional[str] = None, at: Optional[str] = None,
                 saved: Union[dict, str, None] = None, branch: Optional[str] = None) -> None:
        story = Story.of(scenario, brokers, config, lab)
        if variant is None and story.scenario is not None and story.variants:
            variant = story.scenario.default_variant
        self.story = story
        self.seed = seed
        self.history = History(story, Branch("main", seed, variant), max_steps)
        self.filter = StepFilter(skip_background=skip_background)
        if granularity is None:      # a caller that asks to skip background events steps event by event, as before
            granularity = "event" if skip_background else "moment"
        self._granularity = _check_granularity(granularity)
        self.branch = "main"
        self._ex = self.history.execution("main")
        self.notice = ""
        self._kafka = is_kafka(self._ex.cluster)
        self._window, self._topics, self._max_cells, self._title = window, topics, max_cells, title
        # nothing of the widget is built yet: it is built when first shown (or read), and each picture when first
        # seen (stepper_ui.py); a stepper that only answers a check cell builds none of it
        self._syncing = False
        self._built: set = set()                          # the parts of the widget built so far
        self._views: dict = {}                            # the pictures built so far, by name
        self._lab_views: Optional[list] = None
        self._presenter_views: list = []                  # presenter mode's own pictures (present())
        self._stale: dict = {}                            # pictures off screen at the last redraw (stepper_ui.py)
        self._followed: dict = {}                         # pictures code read once the widget was built (on_screen.py)
        if saved is not None:
            self._add_saved(saved)
        if branch is not None and branch != "main":
            self.switch(branch, 0)
        if at is not None:
            self.goto(at)
        else:
            self.refresh()

    @property
    def log_strip(self) -> Optional[LogStrip]:
        """The partition logs (the first tab), for a Kafka cluster; None for another lab.  Built when the stepper is
        first shown or when code first reads it, drawn at the current step; once read from code it follows every
        step, wherever it is shown (on_screen.py)."""
        return self._read_by_code(self._view("log_strip")) if self._kafka else None

    @property
    def lab_views(self) -> list:
        """(title, view) of the lab's own pictures (RocketMQ's half and op topics, two-phase commit's participants;
        none for Kafka), built on first use and drawn at the current step; once read from code they follow every
        step."""
        for _, view in self._drawn_lab_views():
            self._read_by_code(view)
        return self._lab_views

    def _drawn_lab_views(self) -> list:
        """``lab_views`` as the stepper itself reads them (its tabs, presenter mode): built, drawn at this step."""
        if self._lab_views is None:
            self._lab_views = lab_views(self._ex.cluster)
            for _, view in self._lab_views:
                view.update(self._ex.cluster)
        for _, view in self._lab_views:
            self._fresh(view)
        return self._lab_views

    @property
    def coordinators(self) -> Optional[CoordinatorView]:
        """The coordinator view (its tab), for a Kafka cluster; None for another lab.  Built when its tab is first
        opened or when code first reads it, drawn at the current step; once read from code it follows every step."""
        return self._read_by_code(self._view("coordinators")) if self._kafka else None

    @property
    def messages(self) -> SpaceTime:
        """The message diagram (its tab).  Built when its tab is first opened or when code first reads it; once read
        from code it follows every step."""
        return self._read_by_code(self._view("messages"))

    def _make_view(self, name: str):
        if name == "log_strip":
            view = LogStrip(topics=self._topics, max_cells=self._max_cells)
            view.on_row_click(self.select_node)
            return view
        if name == "coordinators":
            return CoordinatorView()
        view = SpaceTime(window=self._window)
        self._follow(view)
        view.on_message_click(self.select_message)
        view.on_node_click(self.select_node)
        return view

    def _follow(self, view: SpaceTime) -> None:
        """Make a message diagram draw as this stepper's does: the filter's messages, numbered by its steps."""
        view.match = lambda m: self.filter.message_matches(m, self._ex.cluster)
        view.position_of = self._position_of

    def _position_of(self, kernel_step: int) -> int:
        """The step number (position) at which kernel event ``kernel_step`` happened: the one numbering."""
        from bisect import bisect_left
        steps = self._ex.kernel_steps
        return min(bisect_left(steps, kernel_step), len(steps) - 1)

    # ------------------------------------------------------------- semantic zoom
    @property
    def granularity(self) -> str:
        """What one Step is: 'moment' (one change a picture shows; plumbing folded in), 'exchange' (a request
        and its response) or 'event' (one kernel event).  The position stays the kernel step at every one."""
        return self._granularity

    @granularity.setter
    def granularity(self, value: str) -> None:
        self._granularity = _check_granularity(value)
        self.refresh()

    @property
    def moments(self):
        """The current branch's stops and key moments (``txnlab.gallery.moments.Moments``)."""
        return self.history.moments(self.branch)

    @property
    def key_moments(self) -> list:
        """(id, caption, position) of the story's key moments that happen in the current branch, in step order."""
        m = self.moments
        return sorted(((km.id, km.caption, m.found[km.id]) for km in m.key_moments if km.id in m.found),
                      key=lambda t: t[2])

    def goto(self, moment: str) -> int:
        """Jump to a key moment of the current branch, by id or caption (``Stepper(name, at=...)`` does this)."""
        return self.jump(self.moments.find(moment))

    @property
    def stop(self):
        """The stop of the current granularity at the current position (None between stops)."""
        return self.moments.stop_at(self.position, self._granularity)

    def _add_saved(self, saved: Union[dict, str]) -> None:
        """Add saved branches: a branch file (``save()``'s, or its path) or a history's ``to_dict()``."""
        from .branch_file import FORMAT, read
        if not isinstance(saved, dict):
            saved = read(saved)
        self.history.load(saved["history"] if saved.get("format") == FORMAT else saved)
        self.refresh()

    # ----------------------------------------------------------- counterexamples
    @classmethod
    def open(cls, counterexample, **kw) -> "Stepper":
        """Open a sweep's or the explorer's ``Counterexample``: the run re-executed from its seed, shown at the
        step after which its first invariant breaks (at the last step when only the end-of-run checks see it).
        Step, Back and faults work from there as for any scenario."""
        kw.setdefault("title", f"counterexample: {counterexample.describe()}")
        kw.setdefault("granularity", "event")     # a counterexample is read event by event (switch it in the UI)
        s = cls(counterexample, seed=counterexample.seed, **kw)
        k = counterexample.step
        if k is None:
            s.jump(s.length)
            where = f"at the end of the run (step {s.position}): the checks at the end see it"
        else:
            s.step_until(lambda st: st.execution.kernel.step_count >= k)
            where = f"at step {s.position} (kernel event #{k})"
        s.notice = f"{counterexample.invariant} ✗ {where}: {counterexample.detail.splitlines()[0] if counterexample.detail else ''}"
        s.refresh()
        return s

    @property
    def counterexample(self):
        """The ``Counterexample`` this stepper opened (None for a scenario)."""
        return self.story.counterexample

    @property
    def invariants(self) -> list:
        """(name, True / False / None when not yet known, words) at the current step: a counterexample's own checks
        (the sweep's or the explorer's), else the invariants a Kafka cluster shows now (``widgets.invariants``)."""
        ex = self._ex
        if self.story.checks is None:
            sc = self.story.scenario
            return live_invariants(ex.cluster, sc.pipeline if sc is not None else None)
        return self.story.checks(ex.cluster, ex.result, ex.done)

    # ------------------------------------------------------------------ state
    @property
    def position(self) -> int:
        return self._ex.position

    @property
    def length(self) -> int:
        """The step at which the current branch ends."""
        return self.history.length(self.branch)

    @property
    def cluster(self):
        """The cluster as it is at the current position (read it; change it only through faults)."""
        return self._ex.cluster

    @property
    def lab(self):
        """The same as ``cluster``: the lab (Kafka, RocketMQ, two-phase commit) at the current position."""
        return self._ex.cluster

    @property
    def execution(self):
        return self._ex

    @property
    def at_end(self) -> bool:
        return self._ex.at_end

    @property
    def result(self):
        """What the scenario's client code returned (once it has finished)."""
        return self._ex.result

    @property
    def branches(self) -> dict:
        return dict(self.history.labels)

    def entries(self, position: Optional[int] = None) -> list:
        """The trace entries of one position (default: the current one)."""
        return self._ex.entries(position)

    @property
    def narration(self) -> str:
        """The current step in plain words: the event's narration, then what the client code did."""
        es = self.entries()
        if not es:
            return "the scenario is about to start" if self.position == 0 else "nothing happened"
        events = [e for e in es if e.kind in EVENT_KINDS]
        rest = [e for e in es if e.kind not in EVENT_KINDS]
        lines = [e.narration for e in events] + [f"then {e.narration}" if events else e.narration for e in rest]
        return "\n".join(lines)

    def trace_text(self, n: int = 20) -> str:
        """The last ``n`` trace entries up to the current position (filtered)."""
        return "\n".join(str(e) for e in self._recent(n))

    def _recent(self, n: int) -> list:
        trace = self._ex.kernel.trace
        events = trace.events
        upto = self._ex.marks[self.position]
        out = []
        i = upto - 1
        while i >= trace.first_position and len(out) < n:     # a bounded trace keeps only its last steps
            e = events[i]
            if not self.filter.active or self.filter.matches([e], self._ex.cluster):
                out.append(e)
            i -= 1
        return out[::-1]

    # --------------------------------------------------------------- stepping
    def step(self, n: int = 1) -> int:
        """Execute ``n`` steps (each one kernel event, or up to the next matching one under a filter)."""
        self.notice = ""
        for _ in range(max(0, int(n))):
            if not self._step_once():
                break
        self.refresh()
        return self.position

    def _step_once(self) -> bool:
        ex = self._ex
        if self._granularity != "event" and not self.filter.narrows:
            stop = self.moments.next_stop(self.position, self._granularity)
            if stop is None:
                return False
            ex.run_to(stop.position)
            return True
        if not ex.step():
            return False
        if self.filter.active:
            while not self.filter.matches(ex.entries(), ex.cluster) and ex.step():
                pass
        return True

    def back(self, n: int = 1) -> int:
        """Go back ``n`` steps (to earlier matching steps under a filter) by re-executing the branch."""
        target = self.position
        for _ in range(max(0, int(n))):
            target = self._previous(target)
        return self.jump(target)

    def _previous(self, pos: int) -> int:
        if pos <= 0:
            return 0
        if self._granularity != "event" and not self.filter.narrows:
            return self.moments.previous_stop(pos, self._granularity)
        if not self.filter.active:
            return pos - 1
        for j in range(pos - 1, 0, -1):
            if self.filter.matches(self._ex.entries(j), self._ex.cluster):
                return j
        return 0

    def jump(self, i: int) -> int:
        """Go to step ``i`` of the current branch (forward: step; backward: re-execute from the seed)."""
        i = max(0, min(int(i), self.length))
        self.notice = ""
        if i >= self.position:
            self._ex.run_to(i)
        else:
            self._reexecute(i)
        self.refresh()
        return self.position

    def reset(self) -> int:
        return self.jump(0)

    def run_to_end(self) -> int:
        return self.jump(self.length)

    def step_until(self, what: Union[str, Callable[["Stepper"], bool]], max_steps: int = 100_000) -> bool:
        """Step one event at a time until ``what`` -- a text in the step's narration, or a function of
        the stepper -- holds.  Returns whether it did (False at the end of the branch)."""
        test = (lambda s: what in s.narration) if isinstance(what, str) else what
        self.notice = ""
        ex = self._ex
        found = False
        for _ in range(max_steps):
            if not ex.step():
                break
            if test(self):
                found = True
                break
        self.refresh()
        return found

    def _reexecute(self, position: int) -> None:
        old = self._ex
        self._ex = self.history.execution(self.branch, position)
        old.close()

    # ------------------------------------------------------------------ faults
    def _node_name(self, ref: NodeRef) -> str:
        if isinstance(ref, bool):
            raise ValueError(f"not a process: {ref!r}")
        if isinstance(ref, int):
            return f"broker-{ref}"
        if isinstance(ref, str):
            return ref
        name = getattr(ref, "name", None)
        if isinstance(name, str):
            return name
        raise ValueError(f"not a process: {ref!r}")

    def _check(self, fault: Fault) -> None:
        nodes = self._ex.kernel.nodes
        if fault.node and fault.node not in nodes:
            raise ValueError(f"no process named {fault.node!r}; processes: {', '.join(nodes)}")
        node = nodes.get(fault.node) if fault.node else None
        alive = node is not None and node.alive and not getattr(node, "crashed", False)
        if fault.kind in ("crash", "pause", "isolate") and not alive:
            raise ValueError(f"{fault.node} is down")
        if fault.kind == "shutdown":
            state = getattr(node, "lifecycle_state", None)
            if state is None:
                raise ValueError(f"{fault.node} is not a broker: only a broker has a controlled shutdown")
            if not alive or state in ("PENDING_CONTROLLED_SHUTDOWN", "SHUTTING_DOWN"):
                raise ValueError(f"{fault.node} is {'down' if not alive else 'already shutting down'}")
        if fault.kind == "crash" and not getattr(node, "crashable", True):
            raise ValueError(f"{fault.node} cannot be crashed here"
                             + (" (it stands for the whole controller quorum)" if fault.node == "controller" else ""))
        if fault.kind == "restart":
            if alive:
                raise ValueError(f"{fault.node} is running; crash it first")
            if not getattr(node, "restartable", False):
                raise ValueError(f"{fault.node} is a client: a crashed client stays down "
                                 f"(its code may start a new instance)")
        if fault.kind == "move-leader":
            c = self._ex.cluster
            if not is_kafka(c):
                raise ValueError("only a Kafka cluster has partition leaders to move")
            topic, partition = fault.topic, fault.partition
            tp, name = (topic, int(partition)), f"{topic}-{partition}"
            bid = int(fault.node.rsplit("-", 1)[1]) if fault.node.startswith("broker-") else -1
            err = c.controller.leader_move_error(tp, bid)
            why = {Errors.UNKNOWN_TOPIC_OR_PARTITION: f"no partition {name}",
                   Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE: f"{fault.node} holds no replica of {name}",
                   Errors.ELECTION_NOT_NEEDED: f"{fault.node} already leads {name}",
                   Errors.PREFERRED_LEADER_NOT_AVAILABLE: f"{fault.node} is not an alive in-sync replica of "
                                                          f"{name}: it cannot take over"}
            if err != Errors.NONE:
                raise ValueError(why[err])
        if fault.kind in ("drop", "delay", "duplicate") and fault.msg_id is not None:
            try:
                m = self._ex.kernel.network.message(fault.msg_id)
            except KeyError:
                m = None
            if m is None or m.state != "in-flight":
                raise ValueError(f"message #{fault.msg_id} is not in flight now")

    def apply(self, fault: Fault) -> str:
        """Apply ``fault`` at the current step; a new branch continues from here.  Returns its name."""
        self._check(fault)
        branch = self.history.fork(self.branch, self.position, fault)
        self._ex.branch = branch
        self._ex.apply(fault, record=False)
        self.branch = branch.name
        self.notice = f"applied: {fault.describe()} at step {self.position} → new branch {branch.name}"
        self.refresh()
        return branch.name

    def crash(self, node: NodeRef, clean: bool = False) -> str:
        return self.apply(Fault("crash", self._node_name(node), clean=bool(clean)))

    def shutdown(self, node: NodeRef) -> str:
        """Stop a broker as an operator does (``Cluster.shutdown``): its controlled shutdown and exit are the next
        steps."""
        return self.apply(Fault("shutdown", self._node_name(node)))

    def restart(self, node: NodeRef) -> str:
        return self.apply(Fault("restart", self._node_name(node)))

    def pause(self, node: NodeRef, ms: int = 5000) -> str:
        return self.apply(Fault("pause", self._node_name(node), ms=int(ms)))

    def isolate(self, node: NodeRef) -> str:
        return self.apply(Fault("isolate", self._node_name(node)))

    def partition(self, node: NodeRef, others: list) -> str:
        return self.apply(Fault("partition", self._node_name(node), others=tuple(self._node_name(o) for o in others)))

    def heal(self) -> str:
        return self.apply(Fault("heal"))

    def move_leader(self, topic: str, partition: int, broker) -> str:
        """An operator moves the leadership of ``topic-partition`` to ``broker`` (an id or ``broker-N``), which
        must be an alive in-sync replica (a reassignment, then a preferred leader election)."""
        node = broker if isinstance(broker, str) else f"broker-{int(broker)}"
        return self.apply(Fault("move-leader", node, topic=topic, partition=int(partition)))

    def drop(self, msg_id: int) -> str:
        return self.apply(Fault("drop", msg_id=int(msg_id)))

    def delay(self, msg_id: int, ms: int = 1000) -> str:
        return self.apply(Fault("delay", msg_id=int(msg_id), ms=int(ms)))

    def duplicate(self, msg_id: int) -> str:
        return self.apply(Fault("duplicate", msg_id=int(msg_id)))

    def in_flight(self) -> list:
        """Messages on the wire now (the ones drop / delay / duplicate can pick)."""
        return in_flight_now(self._ex.cluster)

    # ---------------------------------------------------------------- branches
    def switch(self, name: str, position: Optional[int] = None) -> int:
        """Show branch ``name`` at ``position`` (default: the same step number, or its end)."""
        if name not in self.history.branches:
            raise KeyError(f"no branch {name!r}; branches: {', '.join(self.history.branches)}")
        self.branch = name
        self.notice = ""
        target = self.position if position is None else position
        self._reexecute(max(0, min(int(target), self.history.length(name))))
        self.refresh()
        return self.position

    def variant(self, variant: str) -> str:
        """Add a branch that runs the scenario's ``variant`` (e.g. 'v2') and switch to it."""
        sc = self.story.scenario
        if sc is None or variant not in sc.variants:
            raise KeyError(f"variants: {list(sc.variants) if sc else []}")
        branch = self.history.add_variant(variant, self.seed)
        self.switch(branch.name, 0)
        return branch.name

    def outcome(self, name: Optional[str] = None) -> dict:
        return self.history.outcome(name or self.branch)

    def compare(self, a: str = "main", b: Optional[str] = None) -> dict:
        """How branch ``b`` (default: the current one) ends differently from ``a``."""
        return self.history.compare(a, b or self.branch)

    def compare_html(self, a: str = "main", b: Optional[str] = None) -> str:
        return self.history.compare_html(a, b or self.branch)

    # ------------------------------------------------------------ saved branches (widgets/branch_file.py)
    def save(self, path, branch: Optional[str] = None, position: Optional[int] = None):
        """Save every branch to a JSON file, to be opened on ``branch`` (default: this one) at ``position``."""
        from .branch_file import save
        return save(self, path, branch, position)

    @classmethod
    def load(cls, path, **kw) -> "Stepper":
        """Open a saved branch file: the same scenario, branches and faults, on the saved step."""
        from .branch_file import load
        return load(path, cls, **kw)

    # ------------------------------------------------------------------- close
    def close(self) -> None:
        """Stop the client-code thread of the live run."""
        self._ex.close()

    def __repr__(self) -> str:
        return f"<Stepper {self.story.name} branch {self.branch} step {self.position}/{self.length}>"

    def _repr_mimebundle_(self, **kw):
        return self.widget._repr_mimebundle_(**kw)
