"""A gallery scenario: a named story with its cluster recipe, its client code and its expected ending.

Owns ``Scenario``, ``expect``/``ScenarioCheckFailed`` and the small helpers the Kafka stories share
(``producer``, ``consumer``, ``drain``, ``log_values``, ``markers`` ...).  Knows no story: the stories
(``kafka.py``, ``rocketmq.py``, ``twopc.py``) import this module, and the registry (``__init__``) imports them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from ..client.consumer import Consumer
from ..client.message import TopicPartition
from ..client.producer import Producer
from ..cluster import Cluster
from ..errors import KafkaException
from ..kernel.lab import Lab
from ..protocol.record_batch import ControlRecordType

TOPIC = "orders"
# Small internal topics and no initial rebalance delay keep the stories short to step
# through; every value is an ordinary Kafka broker key.
BASE_CONFIG = {
    "offsets.topic.num.partitions": 3,
    "transaction.state.log.num.partitions": 3,
    "group.initial.rebalance.delay.ms": 0,
}


class ScenarioCheckFailed(AssertionError):
    """A scenario did not end the way its description says."""


def expect(condition: bool, text: str) -> None:
    if not condition:
        raise ScenarioCheckFailed(text)


@dataclass(frozen=True)
class Pipeline:
    """A story's consume-transform-produce application: its consumer ``group`` reads ``input`` and writes
    ``output``; ``source(output value)`` names the input value an output record was made from (both as text).
    The stepper checks with it, at every step, that the group's committed offsets and the committed outputs
    agree (offsets atomic with outputs)."""

    group: str
    input: str
    output: str
    source: Callable[[str], str]


@dataclass(frozen=True)
class Scenario:
    """A named story: how to build the cluster, the client code to step through, and its ending.

    ``setup(cluster)`` (topics, input data) runs plainly before step 0; ``run(cluster)`` is the
    client code a person steps through and returns a dict of what the clients saw;
    ``check(cluster, result, variant)`` asserts the expected ending.  ``variants`` name extra
    cluster configs for the same story (for instance the classic protocol vs transaction.version 2).
    ``lab(seed, config)``, when given, builds another design's lab (a ``txnlab.kernel.lab.Lab``) in place
    of a Kafka ``Cluster``; ``setup`` and ``run`` then take that lab.  ``moments`` are the story's key moments
    (``txnlab.gallery.moments.KeyMoment``: a stable id, a one-line caption, a predicate over the lab and the
    trace), which the stepper shows as ticks and chapters and opens at (``Stepper(name, at=id)``).  ``pipeline``
    names a consume-transform-produce application's group and topics (``Pipeline``).
    """

    name: str
    title: str
    description: str
    expected: str
    run: Callable[[Cluster], dict]
    check: Callable[[Cluster, dict, str], None]
    setup: Optional[Callable[[Cluster], None]] = None
    config: Mapping = field(default_factory=dict)
    variants: Mapping[str, Mapping] = field(default_factory=dict)
    brokers: int = 3
    lab: Optional[Callable[[int, dict], Lab]] = None
    moments: tuple = ()            # KeyMoment(id, caption, when): the story's key moments (gallery/moments.py)
    pipeline: Optional[Pipeline] = None   # a consume-transform-produce application's group, topics and mapping

    def __call__(self, cluster: Cluster) -> dict:
        return self.run(cluster)

    @property
    def default_variant(self) -> str:
        return next(iter(self.variants), "")

    def cluster_config(self, variant: Optional[str] = None) -> dict:
        variant = self.default_variant if variant is None else variant
        if variant and variant not in self.variants:
            raise KeyError(f"scenario {self.name!r} has no variant {variant!r}; variants: {list(self.variants)}")
        base = BASE_CONFIG if self.lab is None else {}
        return {**base, **self.config, **(self.variants.get(variant, {}) if variant else {})}

    def make_cluster(self, seed: int = 0, variant: Optional[str] = None, config: Optional[dict] = None) -> Lab:
        """A new cluster (or the scenario's other lab) for this scenario, set up and ready for ``run``;
        ``config`` (e.g. ``{"sim.trace.keep.steps": 500}``) goes over the scenario's own settings."""
        if self.lab is not None:
            lab = self.lab(seed, {**self.cluster_config(variant), **(config or {})})
            if self.setup is not None:
                self.setup(lab)
            return lab
        cluster = Cluster(brokers=self.brokers, seed=seed, config={**self.cluster_config(variant), **(config or {})})
        if self.setup is not None:
            self.setup(cluster)
        else:
            cluster.create_topic(TOPIC, partitions=2, replication_factor=3)
        return cluster

    def play(self, seed: int = 0, variant: Optional[str] = None) -> tuple[Cluster, dict]:
        """Build, set up and run the scenario plainly to its end (the cluster is then idle)."""
        cluster = self.make_cluster(seed, variant)
        result = self.run(cluster)
        cluster.run_until_idle()
        return cluster, result

    def verify(self, cluster: Cluster, result: dict, variant: Optional[str] = None) -> None:
        self.check(cluster, result, self.default_variant if variant is None else variant)


# ---------------------------------------------------------------- helpers for the stories
def producer(cluster: Cluster, name: str, **config) -> Producer:
    return Producer({"bootstrap.servers": cluster.bootstrap, "client.id": name, **config})


def consumer(cluster: Cluster, name: str, isolation: str, group: Optional[str] = None, **config) -> Consumer:
    return Consumer({"bootstrap.servers": cluster.bootstrap, "client.id": name, "group.id": group or name,
                     "isolation.level": isolation, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", **config})


def assigned(cluster: Cluster, name: str, isolation: str, topic: str = TOPIC, partitions: int = 2) -> Consumer:
    c = consumer(cluster, name, isolation)
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    return c


def drain(cons: Consumer, idle_s: float = 0.5, limit: int = 10_000) -> list[str]:
    """Poll until nothing arrives for ``idle_s`` simulated seconds; the values, as text."""
    out = []
    while len(out) < limit:
        msg = cons.poll(idle_s)
        if msg is None:
            break
        if msg.error() is None:
            out.append(msg.value().decode())
    return out


def wait_for(cons: Consumer, n: int, timeout_s: float = 60.0, poll_s: float = 0.5) -> list[str]:
    """Poll until ``n`` values arrived or ``timeout_s`` simulated seconds passed."""
    out: list[str] = []
    waited = 0.0
    while len(out) < n and waited < timeout_s:
        got = drain(cons, poll_s)
        out += got
        if not got:
            waited += poll_s
    return out


def error_name(exc: KafkaException) -> str:
    return exc.args[0].name()


def log_values(cluster: Cluster, topic: str, partition: int, broker: Optional[int] = None) -> list[str]:
    """The values of the data records of a replica's log, in offset order (markers left out)."""
    out = []
    for b in cluster.log(topic, partition, broker).batches:
        if not b.is_control:
            out += [r.value.decode() for r in b.records]
    return out


def markers(cluster: Cluster, topic: str, partition: int) -> list[str]:
    """COMMIT/ABORT markers of a partition's leader log, in offset order."""
    out = []
    for b in cluster.log(topic, partition).batches:
        if b.is_control:
            out.append(ControlRecordType(b.control_type).name)
    return out


def txn_state(cluster: Cluster, tid: str) -> str:
    d = cluster.transaction_state(tid)
    return d["state"] if d else "(unknown)"
