"""The application side of a simulation run: client processes, their supervisor, and the history.

Owns ``Runtime``: workload processes are Python generators that call the
ordinary Producer/Consumer API and ``yield`` between calls; the runtime picks
which process runs next with its own seeded RNG, restarts a crashed process as a
new instance (same transactional.id, a new producer and consumer), lets a
"zombie" fault start a replacement while the old instance is merely stalled, and
records every operation into a ``History`` for the checker.  Blocking client calls
drive the simulation as usual; nothing here reads the wall clock.
"""
from __future__ import annotations

from random import Random
from typing import Callable, Iterator, Optional

from ..check.history import FAIL, INFO, OK, History, key_of
from ..client.consumer import Consumer
from ..client.message import TopicPartition
from ..client.producer import Producer
from ..client.transaction_manager import State
from ..errors import KafkaException

ProcessFn = Callable[["Ctx"], Iterator]


class Ctx:
    """What one instance of a process sees: its clients, the history, the run's RNG and flags."""

    def __init__(self, runtime: "Runtime", proc: "Proc") -> None:
        self.rt = runtime
        self.proc = proc
        self.cluster = runtime.cluster
        self.rng = runtime.rng
        self.history = runtime.history
        self.producers: list[Producer] = []
        self.consumers: list[Consumer] = []

    @property
    def name(self) -> str:
        return self.proc.name

    @property
    def instance(self) -> int:
        return self.proc.instance

    @property
    def process(self) -> str:
        return f"{self.proc.name}#{self.proc.instance}"

    @property
    def now(self) -> int:
        return self.cluster.kernel.now

    @property
    def dead(self) -> bool:
        """Crashed, or told to stop (the run is over)."""
        return self.proc.crashed or self.rt.stopping

    def producer(self, transactional_id: Optional[str] = None, **extra) -> Producer:
        conf = {"bootstrap.servers": self.cluster.bootstrap, "client.id": f"{self.name}.{self.instance}",
                **self.rt.producer_config, **extra}
        if transactional_id is not None:
            conf["transactional.id"] = transactional_id
        p = Producer(conf)
        self.producers.append(p)
        return p

    def consumer(self, **extra) -> Consumer:
        conf = {"bootstrap.servers": self.cluster.bootstrap, "client.id": f"{self.name}.{self.instance}-c",
                "group.id": f"{self.name}-reader",      # librdkafka refuses a consumer without one
                "isolation.level": "read_committed", "enable.auto.commit": False,
                "auto.offset.reset": "earliest", **self.rt.consumer_config, **extra}
        c = Consumer(conf)
        self.consumers.append(c)
        return c

    def record(self, f: str, mops: list, outcome: str = OK, start: Optional[int] = None, **attrs):
        return self.history.add(self.process, f, mops, outcome, self.now if start is None else start, self.now,
                                **attrs)

    # ------------------------------------------------------------- helpers
    def init_transactions(self, p: Producer, tid: str) -> Iterator:
        """init_transactions(), retried on timeouts; records an ``init`` op."""
        start = self.now
        while True:
            try:
                p.init_transactions(5.0)
                break
            except KafkaException as e:
                if self.dead or not e.args[0].retriable():
                    self.record("init", [], FAIL, start, transactional_id=tid, instance=self.instance)
                    raise
            yield
            if p.transaction_manager.state == State.READY:
                break       # it finished while we were away (librdkafka would say so on the next call)
        self.record("init", [], OK, start, transactional_id=tid, instance=self.instance)

    def committed(self, c: Consumer, tps: list) -> Iterator:
        """The group's committed offsets (waits out open transactions); records seek micro-ops."""
        while True:
            try:
                got = c.committed(tps, timeout=5.0)
                break
            except KafkaException:
                if self.dead:
                    raise
            yield
        out = {}
        for tp in got:
            off = tp.offset if tp.offset >= 0 else 0
            out[(tp.topic, tp.partition)] = off
        return out

    def seek_to(self, c: Consumer, offsets: dict, start: int) -> None:
        for (t, p), off in sorted(offsets.items()):
            c.seek(TopicPartition(t, p, off))
        self.record("assign", [["seek", key_of(t, p), off] for (t, p), off in sorted(offsets.items())], OK, start)


class Proc:
    def __init__(self, name: str, fn: ProcessFn, instance: int, supervised: bool) -> None:
        self.name = name
        self.fn = fn
        self.instance = instance
        self.supervised = supervised
        self.gen: Optional[Iterator] = None
        self.ctx: Optional[Ctx] = None
        self.done = False
        self.crashed = False
        self.stalled_until = 0
        self.start_at = 0


class Runtime:
    """Runs the processes of one workload until they finish or the simulated deadline passes."""

    def __init__(self, cluster, seed: int, deadline_ms: int, producer_config: Optional[dict] = None,
                 consumer_config: Optional[dict] = None) -> None:
        self.cluster = cluster
        self.rng = Random(f"txnlab-workload-{seed}")
        self.history = History()
        self.deadline_ms = deadline_ms
        self.producer_config = dict(producer_config or {})
        self.consumer_config = dict(consumer_config or {})
        self.procs: list[Proc] = []
        self.instances: dict[str, int] = {}
        self.stopping = False
        self.restart_delay_ms = 500

    @property
    def now(self) -> int:
        return self.cluster.kernel.now

    def spawn(self, name: str, fn: ProcessFn, supervised: bool = True, delay_ms: int = 0) -> Proc:
        n = self.instances.get(name, 0) + 1
        self.instances[name] = n
        proc = Proc(name, fn, n, supervised)
        proc.start_at = self.now + delay_ms
        self.procs.append(proc)
        return proc

    def current(self, name: str) -> Optional[Proc]:
        live = [p for p in self.procs if p.name == name and not p.done and not p.crashed]
        return live[-1] if live else None

    # ------------------------------------------------------------- faults
    def crash(self, name: str) -> bool:
        """Kill the newest instance of a process: its clients' memory is gone; the supervisor restarts it."""
        proc = self.current(name)
        if proc is None or proc.ctx is None:
            return False
        proc.crashed = True
        for client in proc.ctx.producers + proc.ctx.consumers:
            if client._node.alive:
                self.cluster.crash(client)
        return True

    def stall(self, name: str, ms: int, replace: bool) -> bool:
        """The application stops calling the client for ``ms`` (a GC pause); with ``replace``, the supervisor
        wrongly declares it dead and starts a new instance at once, so the old one comes back as a zombie."""
        proc = self.current(name)
        if proc is None or proc.ctx is None:
            return False
        proc.stalled_until = self.now + ms
        if not replace:
            for client in proc.ctx.producers + proc.ctx.consumers:
                if client._node.alive:
                    self.cluster.pause(client, ms)
        if replace and proc.supervised:
            self.spawn(proc.name, proc.fn, True)
        return True

    # ---------------------------------------------------------------- run
    def runnable(self) -> list[Proc]:
        now = self.now
        return [p for p in self.procs if not p.done and p.stalled_until <= now and p.start_at <= now]

    def workers_done(self) -> bool:
        """Every supervised process (the workload's workers) has finished; observers may stop."""
        return all(p.done for p in self.procs if p.supervised)

    def pending(self) -> bool:
        return any(not p.done for p in self.procs)

    def run(self) -> bool:
        """Run until every process is done (True) or the deadline passes (False)."""
        k = self.cluster.kernel
        procs = self.procs
        while True:
            for p in procs:                 # (pending(), inlined: once per process step)
                if not p.done:
                    break
            else:
                return True
            if k.now >= self.deadline_ms:
                return False
            ready = self.runnable()
            if not ready:
                waits = [max(p.stalled_until, p.start_at) for p in self.procs if not p.done]
                k.advance(max(1, min(waits) - k.now))
                continue
            proc = ready[self.rng.randrange(len(ready))]
            self._step(proc)

    def _step(self, proc: Proc) -> None:
        if proc.gen is None:
            proc.ctx = Ctx(self, proc)
            proc.gen = proc.fn(proc.ctx)
        try:
            next(proc.gen)
            if proc.crashed:
                raise StopIteration
        except StopIteration as stop:
            self._finish(proc, restart=stop.value == "restart")
        except KafkaException:
            if not proc.crashed:
                raise
            self._finish(proc)

    def _finish(self, proc: Proc, restart: bool = False) -> None:
        """A process ended.  A crashed one, or one that asks for a restart (its producer was fenced or hit a
        fatal error) while no newer instance runs, is started again as a new instance."""
        if proc.gen is not None:
            proc.gen.close()
        proc.done = True
        newest = max((p.instance for p in self.procs if p.name == proc.name), default=0) == proc.instance
        if restart and not proc.crashed and proc.ctx is not None:
            for client in proc.ctx.producers + proc.ctx.consumers:
                if client._node.alive:          # the process exits: its clients go with it
                    self.cluster.crash(client)
        if (proc.crashed or restart) and newest and proc.supervised and not self.stopping:
            self.spawn(proc.name, proc.fn, True, delay_ms=self.restart_delay_ms)

    def stop(self) -> None:
        """The run is over: close every generator (recording what was in progress)."""
        self.stopping = True
        for p in self.procs:
            if not p.done and p.gen is not None:
                p.gen.close()
            p.done = True


__all__ = ["Runtime", "Ctx", "Proc", "OK", "FAIL", "INFO"]
