"""The ``Cluster``: the lab's front object, holding brokers, the controller and the kernel.

Owns construction from a config (Kafka's broker keys plus lab-only ``sim.*``
keys), topics, the faults a person applies (crash, restart, drop/delay/
duplicate the next matching message, partitions, pauses), stepping and
running the simulation, and read-only views of state for pictures and tests
(``partition_state``, ``transaction_state``, the trace).
"""
from __future__ import annotations

import itertools
import weakref
from typing import Callable, Optional, Union

from .broker.broker import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, Broker, broker_name
from .broker.controller import Controller
from .config import BROKER, CLUSTER, TOPIC, resolve
from .errors import ConfigException, KafkaError, KafkaException
from .log.unified_log import UnifiedLog
from .protocol.errors import Errors
from .protocol.hashing import partition_for
from .sim.kernel import Kernel
from .sim.network import FaultRule
from .sim.node import Node

_REGISTRY: "weakref.WeakValueDictionary[str, Cluster]" = weakref.WeakValueDictionary()
_IDS = itertools.count(1)

MUTATIONS = ("no-dedup", "no-fencing", "ignore-lso", "no-marker-retry", "offsets-outside-txn",
             "no-coordinator-reload", "unclean-election", "naive-client-classic")

NodeRef = Union[int, str, Node, object]


class Cluster:
    """A simulated Kafka cluster running inside this Python process."""

    def __init__(self, brokers: int = 3, seed: int = 0, config: Optional[dict] = None,
                 mutations: tuple = ()) -> None:
        if not isinstance(brokers, int) or brokers < 1:
            raise ConfigException("brokers", f"must be a whole number of at least 1, got {brokers!r}")
        given = dict(config or {})
        sim_given = {k: v for k, v in given.items() if k.startswith("sim.")}
        broker_given = {k: v for k, v in given.items() if not k.startswith("sim.")}
        self.sim_config, _ = resolve(CLUSTER, sim_given, "lab (sim.*)")
        self.broker_config, _ = resolve(BROKER, broker_given, "broker")
        for m in mutations:
            if m not in MUTATIONS:
                raise ConfigException("mutations", f"unknown mutation {m!r}; known: {', '.join(MUTATIONS)}")
        self.mutations: set = set(mutations)
        self.seed = seed
        self.kernel = Kernel(seed, latency_ms=self.sim_config["sim.network.latency.ms"],
                             jitter_ms=self.sim_config["sim.network.jitter.ms"])
        self.kernel.trace.enabled = self.sim_config["sim.trace"]
        self.id = f"cluster-{next(_IDS)}"
        _REGISTRY[self.id] = self
        self.bootstrap = ",".join(f"{broker_name(i)}:9092" for i in range(brokers)) + f"@{self.id}"
        self.broker_ids = list(range(brokers))
        self.controller = Controller(self.kernel, self)
        self._brokers = {i: Broker(self.kernel, i, self.broker_config, self) for i in range(brokers)}
        self._client_counts: dict = {}
        self.clients: dict = {}
        self.principals: dict = {}
        from .broker.authorizer import Authorizer
        self.authorizer = Authorizer() if self.broker_config["authorizer.class.name"] else None
        self.kernel.begin_step("admin", "cluster", f"cluster of {brokers} broker(s) starts (seed {seed})")
        for b in self._brokers.values():
            b.start()
        self.kernel.run_until_idle()

    # ------------------------------------------------------------ registry
    @staticmethod
    def lookup(bootstrap: str) -> "Cluster":
        if isinstance(bootstrap, str) and bootstrap.strip().startswith("txnlab://"):
            from .frontdoor.remote import RemoteCluster   # a cluster served by cluster.serve() elsewhere
            return RemoteCluster.connect(bootstrap)
        if not isinstance(bootstrap, str) or "@" not in bootstrap:
            raise ConfigException("bootstrap.servers", f"must be a cluster's bootstrap string (cluster.bootstrap), "
                                  f"got {bootstrap!r}")
        cid = bootstrap.rsplit("@", 1)[1]
        c = _REGISTRY.get(cid)
        if c is None:
            raise ConfigException("bootstrap.servers", f"no running cluster answers at {bootstrap!r}")
        return c

    def serve(self, host: str = "127.0.0.1", port: int = 0, mode: str = "run", **kw) -> str:
        """Open the front door (txnlab.frontdoor): serve this cluster on loopback to other processes
        (Spark's workers).  Returns the address to use there as ``bootstrap.servers``; each remote
        request becomes a message of the simulated network.  ``self.front_door`` is the server."""
        from .frontdoor.server import serve
        return serve(self, host, port, mode=mode, **kw).address

    def next_client_name(self, kind: str) -> str:
        n = self._client_counts.get(kind, 0) + 1
        self._client_counts[kind] = n
        return f"{kind}-{n}"

    def principal_of(self, node_name: str) -> str:
        return self.principals.get(node_name, "User:ANONYMOUS")

    def add_acl(self, principal: str, resource_type: str, resource_name: str, operation: str,
                pattern_type: str = "LITERAL", permission: str = "ALLOW") -> None:
        """Add an ACL (needs ``authorizer.class.name`` set in the cluster config)."""
        from .broker.authorizer import AclBinding
        if self.authorizer is None:
            raise ConfigException("authorizer.class.name", "set it (e.g. 'StandardAuthorizer') to use ACLs")
        self.authorizer.add(AclBinding(principal, resource_type, resource_name, operation, pattern_type, permission))

    def new_client_node(self, name: str, owner, principal: Optional[str] = None):
        from .client.network_client import ClientNode
        if name in self.kernel.nodes:
            old = self.kernel.nodes[name]
            if getattr(old, "crashed", False) or not old.alive:
                del self.kernel.nodes[name]
            else:
                name = self.next_client_name(name)
        node = ClientNode(self.kernel, name, [broker_name(i) for i in self.broker_ids], owner)
        self.clients[name] = owner
        if principal:
            self.principals[name] = principal
        return node

    def new_log(self, topic: str, partition: int, topic_config: dict) -> UnifiedLog:
        seg = topic_config.get("segment.bytes") or self.broker_config["log.segment.bytes"]
        log = UnifiedLog(topic, partition, {
            "segment.bytes": seg,
            "producer.id.expiration.ms": self.broker_config["producer.id.expiration.ms"],
            "transaction.partition.verification.enable":
                self.broker_config["transaction.partition.verification.enable"]
                or self.broker_config["transaction.version"] >= 2})
        log.mutations = self.mutations
        return log

    # -------------------------------------------------------------- topics
    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     config: Optional[dict] = None) -> None:
        topic_config, _ = resolve(TOPIC, config, "topic")
        topic_config = {k: v for k, v in topic_config.items() if v is not None and (config or {}).get(k) is not None}
        if not isinstance(name, str) or not name or len(name) > 249 or any(
                c not in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-" for c in name):
            raise ConfigException("topic", f"{name!r} is not a legal topic name (letters, digits, '.', '_', '-')")
        if not isinstance(partitions, int) or partitions < 1:
            raise ConfigException("partitions", f"must be at least 1, got {partitions!r}")
        if not isinstance(replication_factor, int) or not 1 <= replication_factor <= len(self.broker_ids):
            raise ConfigException("replication_factor",
                                  f"must be between 1 and the number of brokers ({len(self.broker_ids)}), "
                                  f"got {replication_factor!r}")
        misr = topic_config.get("min.insync.replicas")
        if misr is not None and misr > replication_factor:
            raise ConfigException("min.insync.replicas", f"must not exceed the replication factor "
                                  f"({replication_factor}), got {misr}")
        self.kernel.begin_step("admin", "controller", f"create topic {name}")
        err = self.controller.create_topic(name, partitions, replication_factor, topic_config)
        if err != Errors.NONE:
            raise KafkaException(KafkaError(err, f"cannot create topic {name!r}: {err.name}"))
        self.kernel.run_until_idle()

    def ensure_internal_topic(self, broker: Broker, topic: str) -> None:
        c = self.broker_config
        if topic == TRANSACTION_STATE_TOPIC:
            n, rf = c["transaction.state.log.num.partitions"], c["transaction.state.log.replication.factor"]
            rf = min(rf, len(self.broker_ids))
            cfg = (("cleanup.policy", "compact"), ("min.insync.replicas", min(c["transaction.state.log.min.isr"], rf)),
                   ("segment.bytes", c["transaction.state.log.segment.bytes"]), ("unclean.leader.election.enable", False))
        else:
            n, rf = c["offsets.topic.num.partitions"], min(c["offsets.topic.replication.factor"], len(self.broker_ids))
            cfg = (("cleanup.policy", "compact"),)
        broker._create_topic(topic, n, rf, cfg)

    def topics(self) -> list[str]:
        return sorted({t for t, _ in self.controller.states})

    # ------------------------------------------------------------ accessors
    @property
    def brokers(self) -> list[int]:
        return list(self.broker_ids)

    def broker(self, broker_id: int) -> Broker:
        return self._brokers[broker_id]

    @property
    def trace(self):
        return self.kernel.trace

    @property
    def clock(self) -> int:
        return self.kernel.now

    @property
    def now(self) -> int:
        return self.kernel.now

    def leader(self, topic: str, partition: int = 0) -> int:
        s = self.controller.states.get((topic, partition))
        if s is None:
            raise KeyError(f"no partition {topic}-{partition}")
        return s.leader

    def log(self, topic: str, partition: int = 0, broker: Optional[int] = None) -> UnifiedLog:
        """A replica's log (the leader's by default), for reading."""
        if broker is None:
            broker = self.leader(topic, partition)
            if broker < 0:
                broker = self.controller.states[(topic, partition)].replicas[0]
        return self._brokers[broker].logs[(topic, partition)]

    def partition_state(self, topic: str, partition: int = 0) -> dict:
        s = self.controller.states.get((topic, partition))
        if s is None:
            raise KeyError(f"no partition {topic}-{partition}")
        replicas = {}
        for r in s.replicas:
            b = self._brokers[r]
            log = b.logs.get((topic, partition))
            replicas[r] = {
                "alive": b.alive,
                "leo": log.log_end_offset if log else 0,
                "hw": log.high_watermark if log else 0,
                "log_start_offset": log.log_start_offset if log else 0,
            }
        lead = self._brokers[s.leader].logs.get((topic, partition)) if s.leader >= 0 and self._brokers[s.leader].alive else None
        return {
            "topic": topic, "partition": partition, "leader": s.leader, "leader_epoch": s.leader_epoch,
            "isr": list(s.isr), "replicas": replicas,
            "leo": lead.log_end_offset if lead else None,
            "hw": lead.high_watermark if lead else None,
            "lso": lead.last_stable_offset if lead else None,
            "log_start_offset": lead.log_start_offset if lead else None,
        }

    def transaction_coordinator(self, transactional_id: str) -> int:
        n = self.broker_config["transaction.state.log.num.partitions"]
        tp = (TRANSACTION_STATE_TOPIC, partition_for(transactional_id, n))
        s = self.controller.states.get(tp)
        return s.leader if s else -1

    def group_coordinator(self, group_id: str) -> int:
        n = self.broker_config["offsets.topic.num.partitions"]
        tp = (OFFSETS_TOPIC, partition_for(group_id, n))
        s = self.controller.states.get(tp)
        return s.leader if s else -1

    def group_state(self, group_id: str) -> Optional[dict]:
        """The group as its coordinator sees it: state, generation, members, committed and pending offsets."""
        b = self.group_coordinator(group_id)
        if b < 0 or not self._brokers[b].alive:
            return None
        return self._brokers[b].group_coordinator.describe_group(group_id)

    def transaction_state(self, transactional_id: str) -> Optional[dict]:
        b = self.transaction_coordinator(transactional_id)
        if b < 0 or not self._brokers[b].alive:
            return None
        return self._brokers[b].txn_coordinator.describe(transactional_id)

    # ---------------------------------------------------------------- running
    def step(self):
        return self.kernel.step()

    def run_until_idle(self, max_steps: int = 5_000_000) -> int:
        return self.kernel.run_until_idle(max_steps)

    def run_until(self, predicate: Callable[[], bool], timeout_ms: Optional[int] = None) -> bool:
        return self.kernel.run_until(predicate, timeout_ms)

    def advance(self, ms: int) -> None:
        """Let ``ms`` simulated milliseconds pass, handling everything due."""
        self.kernel.advance(ms)

    def in_flight(self):
        """Messages on the wire now, soonest first."""
        return self.kernel.network.in_flight()

    def network_messages(self):
        """Every message sent so far (delivered, dropped or in flight), in send order."""
        return [self.kernel.network.messages[i] for i in sorted(self.kernel.network.messages)]

    def drop_message(self, msg_id: int) -> None:
        """Drop one chosen message that is in flight now."""
        msg = self.kernel.network.messages[msg_id]
        self.kernel.begin_step("fault", "network", f"the network drops {msg.api} {msg.kind} #{msg_id} "
                               f"({msg.src} -> {msg.dst})")
        self.kernel.network.drop(msg, "dropped by a fault")

    def delay_message(self, msg_id: int, ms: int) -> None:
        """Delay one chosen message that is in flight now by ``ms``."""
        msg = self.kernel.network.messages[msg_id]
        self.kernel.begin_step("fault", "network", f"the network delays {msg.api} {msg.kind} #{msg_id} by {ms}ms")
        self.kernel.network.delay(msg, ms)

    def duplicate_message(self, msg_id: int) -> int:
        """Deliver a chosen in-flight message twice; returns the id of the copy."""
        msg = self.kernel.network.messages[msg_id]
        self.kernel.begin_step("fault", "network", f"the network duplicates {msg.api} {msg.kind} #{msg_id} "
                               f"({msg.src} -> {msg.dst})")
        return self.kernel.network.duplicate(msg).id

    # ----------------------------------------------------------------- faults
    def _node(self, ref: NodeRef) -> Node:
        if isinstance(ref, Node):
            return ref
        if isinstance(ref, bool):
            raise KeyError(f"not a node: {ref!r}")
        if isinstance(ref, int):
            if ref not in self._brokers:
                raise KeyError(f"no broker {ref}; brokers are {self.broker_ids}")
            return self._brokers[ref]
        if isinstance(ref, str):
            node = self.kernel.nodes.get(ref)
            if node is None:
                raise KeyError(f"no node named {ref!r}")
            return node
        node = getattr(ref, "_node", None)
        if isinstance(node, Node):
            return node
        raise KeyError(f"not a node: {ref!r}")

    def _name(self, ref: NodeRef) -> str:
        return self._node(ref).name

    def crash(self, node: NodeRef, clean: bool = False) -> None:
        """Crash a broker or a client: its memory is lost; a broker keeps its log on disk.
        ``clean=True`` is a clean shutdown instead (producer snapshots are written first)."""
        n = self._node(node)
        if not n.alive:
            raise KafkaException(KafkaError(KafkaError._STATE, f"{n.name} is already down"))
        if n.name == "controller":
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG, "the controller quorum cannot be crashed here"))
        verb = "shuts down cleanly" if clean else "crashes"
        self.kernel.begin_step("fault", n.name, f"{n.name} {verb}")
        if clean and isinstance(n, Broker):
            n.shutdown_cleanly()
        n.crash()
        for other in list(self.kernel.nodes.values()):
            if other is not n and other.alive:
                other.disconnected(n.name)

    def restart(self, node: NodeRef) -> None:
        n = self._node(node)
        if n.alive:
            raise KafkaException(KafkaError(KafkaError._STATE, f"{n.name} is running; crash it first"))
        if not isinstance(n, Broker):
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG,
                                            f"{n.name} is a client: create a new client to restart it"))
        self.kernel.begin_step("fault", n.name, f"{n.name} restarts")
        n.restart()

    def _rule(self, action: str, api: str, response: bool, src, dst, ms: int = 0, count: int = 1) -> FaultRule:
        from .protocol import messages as msgs
        known = {getattr(c, "API") for c in vars(msgs).values() if isinstance(c, type) and hasattr(c, "API")}
        if api != "*" and api not in known:
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG, f"unknown API {api!r}; known: {sorted(known)}"))
        rule = FaultRule(action, api, response, self._name(src) if src is not None else None,
                         self._name(dst) if dst is not None else None, ms, count)
        self.kernel.network.add_rule(rule)
        self.kernel.record("fault", "network", f"armed: {rule.describe()}")
        return rule

    def drop_next(self, api: str, response: bool = False, src: NodeRef = None, dst: NodeRef = None,
                  count: int = 1) -> FaultRule:
        return self._rule("drop", api, response, src, dst, count=count)

    def delay_next(self, api: str, ms: int, response: bool = False, src: NodeRef = None, dst: NodeRef = None,
                   count: int = 1) -> FaultRule:
        return self._rule("delay", api, response, src, dst, ms=ms, count=count)

    def duplicate_next(self, api: str, response: bool = False, src: NodeRef = None, dst: NodeRef = None,
                       count: int = 1) -> FaultRule:
        return self._rule("duplicate", api, response, src, dst, count=count)

    def partition(self, nodes_a, nodes_b) -> None:
        a = [self._name(x) for x in nodes_a]
        b = [self._name(x) for x in nodes_b]
        self.kernel.begin_step("fault", "network", f"network partition: {a} cannot reach {b}")
        self.kernel.network.partition(a, b)

    def heal(self) -> None:
        self.kernel.begin_step("fault", "network", "network healed: every node can reach every other")
        self.kernel.network.heal()

    def pause(self, client: NodeRef, ms: int) -> None:
        """Freeze a process for ``ms`` (a long GC pause): it handles nothing until then."""
        n = self._node(client)
        self.kernel.begin_step("fault", n.name, f"{n.name} is paused for {ms}ms")
        n.paused_until = self.kernel.now + int(ms)
