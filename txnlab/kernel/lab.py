"""A lab face over one ``Kernel`` for systems built from plain ``Node`` processes.

Owns what ``Cluster`` offers the Kafka side, for the comparison labs (RocketMQ's
half messages, classic two-phase commit): stepping and running, the faults a
person applies (crash, restart, pause, drop/delay/duplicate the next matching
message, partitions, a chosen in-flight message), and ``send_oneway`` for
requests that expect no response (RocketMQ's ``invokeOneway``, 2PC's votes).
Faults are steps of the same kernel, so they land in the same trace.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Union

from .kernel import Kernel
from .network import FaultRule, Message
from .node import Node

NodeRef = Union[str, Node, object]


def send_oneway(node: Node, dst: str, request: Any, background: bool = False) -> Message:
    """Send a request that expects no response (no correlation id, no timeout).
    A one-way request to a dead process is simply lost: the sender never learns."""
    return node.kernel.network.send(node.name, dst, request.API, request, False, 0, background)


class Lab:
    """Kernel + named processes + faults.  Subclasses list their API names in ``APIS``."""

    APIS: frozenset = frozenset()

    def __init__(self, seed: int = 0, latency_ms: int = 1, jitter_ms: int = 0) -> None:
        self.seed = seed
        self.kernel = Kernel(seed, latency_ms=latency_ms, jitter_ms=jitter_ms)

    # ------------------------------------------------------------ accessors
    @property
    def trace(self):
        return self.kernel.trace

    @property
    def clock(self) -> int:
        return self.kernel.now

    @property
    def now(self) -> int:
        return self.kernel.now

    def node(self, ref: NodeRef) -> Node:
        if isinstance(ref, Node):
            return ref
        if isinstance(ref, str):
            n = self.kernel.nodes.get(ref)
            if n is None:
                raise KeyError(f"no process named {ref!r}; processes are {sorted(self.kernel.nodes)}")
            return n
        n = getattr(ref, "node", None) or getattr(ref, "_node", None)
        if isinstance(n, Node):
            return n
        raise KeyError(f"not a process: {ref!r}")

    def summary(self) -> dict:
        """What a person compares between two runs of this lab (a stepper's branches): plain, comparable
        facts keyed by a label a person reads ("order-topic: what consumers can read", "bank-a: T1").
        Subclasses say what matters in their design; the base has nothing to add."""
        return {}

    def note(self, node: str, text: str) -> None:
        """Record a call made by a person or an application (not a step)."""
        self.kernel.record("call", node, text)

    # -------------------------------------------------------------- running
    def step(self):
        return self.kernel.step()

    def run_until_idle(self, max_steps: int = 1_000_000) -> int:
        return self.kernel.run_until_idle(max_steps)

    def run_until(self, predicate: Callable[[], bool], timeout_ms: Optional[int] = None) -> bool:
        return self.kernel.run_until(predicate, timeout_ms)

    def advance(self, ms: int) -> None:
        """Let ``ms`` simulated milliseconds pass, handling everything due (timers too)."""
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not 0 <= ms < float("inf"):
            raise ValueError(f"advance(ms={ms!r}): ms is how many simulated milliseconds to let pass, a number "
                             f">= 0 (time never runs backwards)")
        self.kernel.advance(int(ms))

    def in_flight(self) -> list[Message]:
        return self.kernel.network.in_flight()

    def network_messages(self) -> list[Message]:
        msgs = self.kernel.network.messages
        return [msgs[i] for i in sorted(msgs)]

    # --------------------------------------------------------------- faults
    def crash(self, ref: NodeRef, clean: bool = False) -> None:
        """Crash a process: its memory is lost (what it wrote to its disk stays).
        ``clean=True`` is an orderly shutdown instead (the process may write to disk first)."""
        n = self.node(ref)
        if not n.alive:
            raise RuntimeError(f"{n.name} is already down")
        if not getattr(n, "crashable", True):
            raise RuntimeError(f"{n.name} cannot be crashed in this lab")
        self.kernel.begin_step("fault", n.name, f"{n.name} {'shuts down cleanly' if clean else 'crashes'}")
        n.go_down(clean)

    def shutdown(self, ref: NodeRef, then: Optional[Callable[[], None]] = None) -> None:
        """Stop a broker the way ``kafka-server-stop.sh`` does.  With ``controlled.shutdown.enable`` (Kafka's
        default) it first asks the controller, in its heartbeats, to move its leaderships away (controlled
        shutdown), and exits cleanly once the controller lets it; without, it exits cleanly at once.  This call
        only starts it: the shutdown is steps of the simulation.  ``then()`` runs when the process has gone down."""
        n = self.node(ref)
        begin = getattr(n, "begin_controlled_shutdown", None)
        if begin is None:
            raise RuntimeError(f"{n.name} is not a broker: only a broker has a controlled shutdown (crash it, or "
                               f"close a client)")
        if not n.alive:
            raise RuntimeError(f"{n.name} is already down")
        self.kernel.begin_step("fault", n.name, f"{n.name} is asked to shut down")
        begin(then)

    def restart(self, ref: NodeRef) -> None:
        n = self.node(ref)
        if n.alive:
            raise RuntimeError(f"{n.name} is running; crash it first")
        if not getattr(n, "restartable", False):
            raise RuntimeError(f"{n.name} is a client process: start a new instance instead")
        self.kernel.begin_step("fault", n.name, f"{n.name} restarts")
        n.restart()

    def pause(self, ref: NodeRef, ms: int) -> None:
        """Freeze a process for ``ms`` (a long GC pause, a stuck thread): it handles nothing until then."""
        n = self.node(ref)
        self.kernel.begin_step("fault", n.name, f"{n.name} is paused for {ms}ms")
        n.paused_until = self.kernel.now + int(ms)

    def partition(self, nodes_a: Iterable[NodeRef], nodes_b: Iterable[NodeRef]) -> None:
        a = [self.node(x).name for x in nodes_a]
        b = [self.node(x).name for x in nodes_b]
        self.kernel.begin_step("fault", "network", f"network partition: {a} cannot reach {b}")
        self.kernel.network.partition(a, b)

    def heal(self) -> None:
        self.kernel.begin_step("fault", "network", "network healed: every process can reach every other")
        self.kernel.network.heal()

    def heal_between(self, a: NodeRef, b: NodeRef) -> None:
        """Heal the cut between two processes only (other partitions stay)."""
        a, b = self.node(a).name if not isinstance(a, str) else a, self.node(b).name if not isinstance(b, str) else b
        self.kernel.begin_step("fault", "network", f"network heals between {a} and {b}")
        self.kernel.network.heal_between(a, b)

    def _rule(self, action: str, api: str, response: bool, src, dst, ms: int = 0, count: int = 1) -> FaultRule:
        if api != "*" and self.APIS and api not in self.APIS:
            raise ValueError(f"unknown API {api!r}; known: {sorted(self.APIS)}")
        rule = FaultRule(action, api, response, self.node(src).name if src is not None else None,
                         self.node(dst).name if dst is not None else None, ms, count)
        self.kernel.network.add_rule(rule)
        self.kernel.record("fault", "network", f"armed: {rule.describe()}")
        return rule

    def drop_next(self, api: str, response: bool = False, src: NodeRef = None, dst: NodeRef = None,
                  count: int = 1) -> FaultRule:
        """Lose the next matching message: its connection breaks, and what is in flight on it fails at the
        client (a disconnect), which reconnects and retries by its own rules."""
        return self._rule("drop", api, response, src, dst, count=count)

    def delay_next(self, api: str, ms: int, response: bool = False, src: NodeRef = None, dst: NodeRef = None,
                   count: int = 1) -> FaultRule:
        return self._rule("delay", api, response, src, dst, ms=ms, count=count)

    def duplicate_next(self, api: str, response: bool = False, src: NodeRef = None, dst: NodeRef = None,
                       count: int = 1) -> FaultRule:
        """Make the next matching request be seen twice, as TCP allows it: its answer is lost (the connection
        breaks) and the client sends it again on a new connection."""
        return self._rule("duplicate", api, response, src, dst, count=count)

    def drop_message(self, msg_id: int) -> None:
        """Lose one chosen message that is in flight now: its connection breaks (what else is in flight on it
        fails at the client, which reconnects and retries by its own rules)."""
        msg = self.kernel.network.message(msg_id)
        self.kernel.begin_step("fault", "network", f"the network drops {msg.api} {msg.kind} #{msg_id} "
                               f"({msg.src} -> {msg.dst})")
        self.kernel.network.drop(msg, "dropped by a fault")

    def delay_message(self, msg_id: int, ms: int) -> None:
        """Delay one chosen message by ``ms``, and its connection behind it (nothing overtakes)."""
        msg = self.kernel.network.message(msg_id)
        self.kernel.begin_step("fault", "network", f"the network delays {msg.api} {msg.kind} #{msg_id} by {ms}ms")
        self.kernel.network.delay(msg, ms)

    def duplicate_message(self, msg_id: int) -> int:
        """Make a chosen request be seen twice, the way it happens on TCP: it arrives, its answer is lost, the
        connection breaks and the client sends it again on a new one (a response chosen here is lost).
        Returns the message's id."""
        msg = self.kernel.network.message(msg_id)
        self.kernel.begin_step("fault", "network", f"the answer to {msg.api} request #{msg_id} ({msg.src} -> "
                               f"{msg.dst}) will be lost: the client will send it again" if not msg.is_response else
                               f"the {msg.api} response #{msg_id} is lost: the client will send its request again")
        return self.kernel.network.duplicate(msg).id
