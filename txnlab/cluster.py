"""The ``Cluster``: the lab's front object, holding brokers, the controller and the kernel.

Owns construction from a config (Kafka's broker keys plus lab-only ``sim.*``
keys), topics, the faults a person applies (crash, a broker's controlled
shutdown, restart, drop/delay/duplicate the next matching message,
partitions, pauses), stepping and running the simulation, and read-only
views of state for pictures and tests (``partition_state``,
``transaction_state``, the trace).
"""
from __future__ import annotations

import base64
import hashlib
import itertools
import weakref
from typing import Optional, Union

from .broker.authorizer import BROKER_PRINCIPAL
from .broker.broker import Broker
from .broker.controller import Controller
from .broker.topic_config import NOT_HONOURED
from .config import BROKER, CLUSTER, TOPIC, resolve
from .errors import ConfigException, KafkaError, KafkaException
from .log.unified_log import UnifiedLog
from .protocol.errors import Errors
from .protocol.hashing import partition_for
from .kernel import attach
from .kernel.lab import Lab
from .kernel.node import Node
from .protocol.names import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, broker_name, topic_name_error

_REGISTRY: "weakref.WeakValueDictionary[str, Cluster]" = weakref.WeakValueDictionary()
_IDS = itertools.count(1)

MUTATIONS = ("no-dedup", "no-fencing", "ignore-lso", "no-marker-retry", "offsets-outside-txn",
             "no-coordinator-reload", "unclean-election", "naive-client-classic",
             # issue 18: bugs only a unit test caught before
             "lso-ignores-hw",                 # read_committed reads to the first unstable offset or the LEO, not the HW
             "no-txn-generation-check",        # TxnOffsetCommit without KIP-447's member/generation check
             "aborted-index-from-fetch-offset",  # the aborted-txn lookup misses spans that begin before the fetch offset
             "offset-fetch-unstable")          # OffsetFetch ignores require_stable

NodeRef = Union[int, str, Node, object]


def _remote_attachment(address: str) -> attach.Attachment:
    from .frontdoor.remote import RemoteAttachment   # a cluster served by cluster.serve() in another process
    return RemoteAttachment.connect(address)


attach.register_scheme("txnlab://", _remote_attachment)


def _kafka_apis() -> frozenset:
    from .protocol import messages as msgs
    return frozenset(c.API for c in vars(msgs).values() if isinstance(c, type) and hasattr(c, "API"))



def _check_contradictions(c: dict, brokers: int) -> None:
    """Broker settings that contradict each other or the cluster: a ConfigException naming the key and the rule."""
    hb, session = c["broker.heartbeat.interval.ms"], c["broker.session.timeout.ms"]
    if 2 * hb > session:
        raise ConfigException("broker.heartbeat.interval.ms", f"must be at most half of broker.session.timeout.ms "
                              f"({session}), got {hb}: the controller would fence brokers between their heartbeats "
                              f"(Kafka logs this as an error at startup)")
    if c["replica.fetch.wait.max.ms"] > c["replica.lag.time.max.ms"]:
        raise ConfigException("replica.fetch.wait.max.ms", f"must be at most replica.lag.time.max.ms "
                              f"({c['replica.lag.time.max.ms']}), got {c['replica.fetch.wait.max.ms']} (Kafka's "
                              f"KafkaConfig requires it, to prevent frequent changes in ISR)")
    if c["min.insync.replicas"] > brokers:
        raise ConfigException("min.insync.replicas", f"must not exceed the number of brokers ({brokers}), got "
                              f"{c['min.insync.replicas']}: no partition could ever have that many in-sync replicas "
                              f"(Kafka itself accepts it and quietly asks each partition for at most its replication "
                              f"factor: Partition.effectiveMinIsr)")

class Cluster(Lab):
    """A simulated Kafka cluster running inside this Python process.

    Stepping, running and the faults (crash, shutdown, restart, pause, partitions, drop/delay/duplicate
    a message) come from ``Lab``, the face every lab on the kernel shares."""

    APIS = _kafka_apis()

    def __init__(self, brokers: int = 3, seed: int = 0, config: Optional[dict] = None,
                 mutations: tuple = ()) -> None:
        if not isinstance(brokers, int) or brokers < 1:
            raise ConfigException("brokers", f"must be a whole number of at least 1, got {brokers!r}")
        given = dict(config or {})
        sim_given = {k: v for k, v in given.items() if k.startswith("sim.")}
        broker_given = {k: v for k, v in given.items() if not k.startswith("sim.")}
        self.sim_config, _ = resolve(CLUSTER, sim_given, "lab (sim.*)")
        self.broker_config, _ = resolve(BROKER, broker_given, "broker")
        _check_contradictions(self.broker_config, brokers)
        for m in mutations:
            if m not in MUTATIONS:
                raise ConfigException("mutations", f"unknown mutation {m!r}; known: {', '.join(MUTATIONS)}")
        self.mutations: set = set(mutations)
        if "no-dedup" in self.mutations:
            # the break-it switch means "the broker appends a retried batch again": the log's duplicate cache
            # and its sequence check both go (with the check alone, a retry would become OUT_OF_ORDER instead)
            self.mutations.add("no-sequence-check")
        if "naive-client-classic" in self.mutations:
            # the classic (pre-KIP-890) world the naive client lives in: no partition verification, TV 0
            self.broker_config["transaction.version"] = 0
            self.broker_config["transaction.partition.verification.enable"] = False
        super().__init__(seed, latency_ms=self.sim_config["sim.network.latency.ms"],
                         jitter_ms=self.sim_config["sim.network.jitter.ms"])
        self.kernel.trace.enabled = self.sim_config["sim.trace"]
        # with the trace off (a sweep) nobody draws the messages afterwards: keep only those in flight
        self.kernel.network.keep_history = self.sim_config["sim.trace"]
        if self.sim_config["sim.trace.keep.steps"]:
            self.kernel.trace.set_limit(self.sim_config["sim.trace.keep.steps"])
            self.kernel.network.history_limit = self.sim_config["sim.trace.keep.steps"]
        self.id = f"cluster-{next(_IDS)}"
        _REGISTRY[self.id] = self
        # observers of the brokers' decisions (the sweep's step invariants): fn(kind, facts dict)
        self.auditors: list = []
        self.bootstrap = ",".join(f"{broker_name(i)}:9092" for i in range(brokers)) + f"@{self.id}"
        self.broker_ids = list(range(brokers))
        self.controller = Controller(self.kernel, self)
        self._brokers = {i: Broker(self.kernel, i, self.broker_config, self) for i in range(brokers)}
        for server in (self.controller, *self._brokers.values()):
            self.kernel.add_server(server)        # their role on the network: what the lab made them
        # what a client gets for cluster.bootstrap: the kernel, the brokers to dial, and the lab's client switch
        client_config = {"sim.naive.client": True} if "naive-client-classic" in self.mutations else {}
        self.attachment = attach.Attachment(self.bootstrap, self.kernel, [broker_name(i) for i in self.broker_ids],
                                            client_config)
        attach.register(self.bootstrap, self.attachment)
        self.clients: dict = self.attachment.clients          # node name -> client object (for the views)
        self.principals: dict = self.attachment.principals    # node name -> authenticated principal
        from .broker.authorizer import Authorizer
        self.authorizer = Authorizer() if self.broker_config["authorizer.class.name"] else None
        self.kernel.begin_step("admin", "cluster", f"cluster of {brokers} broker(s) starts (seed {seed})")
        for b in self._brokers.values():
            b.start()
        self.kernel.run_until_idle()

    # ------------------------------------------------------------ registry
    @staticmethod
    def lookup(bootstrap: str) -> "Cluster":
        """The in-kernel cluster behind ``bootstrap`` (for notebooks and analysis helpers; clients attach
        through ``txnlab.kernel.attach`` and never see this object)."""
        if isinstance(bootstrap, str) and bootstrap.strip().startswith("txnlab://"):
            raise ConfigException("bootstrap.servers", f"{bootstrap!r} is a cluster served to this process by "
                                  f"a front door: its Cluster object lives in the notebook's kernel")
        if not isinstance(bootstrap, str) or "@" not in bootstrap:
            raise ConfigException("bootstrap.servers", f"must be a cluster's bootstrap string (cluster.bootstrap), "
                                  f"got {bootstrap!r}")
        cid = bootstrap.rsplit("@", 1)[1]
        c = _REGISTRY.get(cid)
        if c is None:
            raise ConfigException("bootstrap.servers", f"no running cluster answers at {bootstrap!r}")
        return c

    def audit(self, kind: str, **facts) -> None:
        """A broker reports a decision to the observers in ``auditors`` (only called when there are some)."""
        for fn in self.auditors:
            fn(kind, facts)

    def serve(self, host: str = "127.0.0.1", port: int = 0, mode: str = "run", **kw) -> str:
        """Open the front door (txnlab.frontdoor): serve this cluster on loopback to other processes
        (Spark's workers).  Returns the address to use there as ``bootstrap.servers``; each remote
        request becomes a message of the simulated network.  ``self.front_door`` is the server."""
        from .frontdoor.server import serve
        return serve(self, host, port, mode=mode, **kw).address

    def listen(self, mode: str = "run", **kw):
        """Open Kafka's wire protocol for real clients (txnlab.wire): one loopback listener per broker.
        Returns the ``WireDoor`` (``.bootstrap_servers`` for confluent-kafka, kafka-python, aiokafka;
        ``.close()``, or use it as a context manager); each request a real client sends is a step."""
        from .wire.listener import listen
        return listen(self, mode=mode, **kw)

    def principal_of(self, node_name: str) -> str:
        if self.kernel.is_server(node_name):
            return BROKER_PRINCIPAL
        return self.attachment.principal_of(node_name)

    def add_acl(self, principal: str, resource_type: str, resource_name: str, operation: str,
                pattern_type: str = "LITERAL", permission: str = "ALLOW") -> None:
        """Add an ACL (needs ``authorizer.class.name`` set in the cluster config)."""
        from .broker.authorizer import AclBinding
        if self.authorizer is None:
            raise ConfigException("authorizer.class.name", "set it (e.g. 'StandardAuthorizer') to use ACLs")
        self.authorizer.add(AclBinding(principal, resource_type, resource_name, operation, pattern_type, permission))

    def new_log(self, topic: str, partition: int, topic_config: dict) -> UnifiedLog:
        seg = topic_config.get("segment.bytes") or self.broker_config["log.segment.bytes"]
        log = UnifiedLog(topic, partition, {
            "segment.bytes": seg,
            "max.message.bytes": topic_config.get("max.message.bytes") or TOPIC["max.message.bytes"].default,
            "message.timestamp.type": topic_config.get("message.timestamp.type") or "CreateTime",
            "producer.id.expiration.ms": self.broker_config["producer.id.expiration.ms"],
            # the log checks a batch's verification only with the setting on, whatever the transaction version
            # (Kafka 4.1: UnifiedLog.batchMissingRequiredVerification reads ProducerStateManagerConfig
            # .transactionVerificationEnabled, which LogManager sets from transaction.partition.verification.enable)
            "transaction.partition.verification.enable": self.broker_config["transaction.partition.verification.enable"]})
        log.mutations = self.mutations
        return log

    # -------------------------------------------------------------- topics
    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     config: Optional[dict] = None) -> None:
        topic_config, _ = resolve(TOPIC, config, "topic")
        topic_config = {k: v for k, v in topic_config.items() if v is not None and (config or {}).get(k) is not None}
        why = topic_name_error(name)
        if why is not None:
            raise ConfigException("topic", why)
        if not isinstance(partitions, int) or isinstance(partitions, bool) or not 1 <= partitions <= 10_000:
            raise ConfigException("partitions", f"must be between 1 and 10000 (Kafka creates at most 10000 "
                                  f"partitions per request), got {partitions!r}")
        if not isinstance(replication_factor, int) or not 1 <= replication_factor <= len(self.broker_ids):
            raise ConfigException("replication_factor",
                                  f"must be between 1 and the number of brokers ({len(self.broker_ids)}), "
                                  f"got {replication_factor!r}")
        misr = topic_config.get("min.insync.replicas")
        if misr is not None and misr > replication_factor:
            raise ConfigException("min.insync.replicas", f"must not exceed the replication factor "
                                  f"({replication_factor}), got {misr}")
        for k, (honoured, why) in NOT_HONOURED.items():
            if k in topic_config and topic_config[k] not in honoured:
                raise ConfigException(k, f"{topic_config[k]!r} is refused: {why}")
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

    @property
    def cluster_id(self) -> str:
        """The cluster id DescribeCluster reports: 22 URL-safe base64 characters like Kafka's, derived from the
        seed (the same lab always has the same id)."""
        digest = hashlib.sha256(f"txnlab-cluster-{self.seed}".encode()).digest()[:16]
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def topics(self) -> list[str]:
        return sorted({t for t, _ in self.controller.states})

    # ------------------------------------------------------------ accessors
    @property
    def brokers(self) -> list[int]:
        return list(self.broker_ids)

    def broker(self, broker_id: int) -> Broker:
        return self._brokers[broker_id]

    def move_leader(self, topic: str, partition: int, broker: int) -> None:
        """Fault: an operator moves the leadership of ``topic-partition`` to ``broker`` (a reassignment that
        makes it the preferred replica, then a preferred leader election).  ``broker`` must be an alive ISR
        member; otherwise KafkaException with PREFERRED_LEADER_NOT_AVAILABLE (or ELECTION_NOT_NEEDED, ...)."""
        if not self.controller.alive:
            raise KafkaException(KafkaError(Errors.NOT_CONTROLLER, "the controller is down"))
        tp, who = (topic, partition), f"{topic}-{partition}"
        err = self.controller.leader_move_error(tp, broker)
        if err != Errors.NONE:
            raise KafkaException(KafkaError(err, f"cannot move the leadership of {who} to broker {broker}: "
                                                 f"{err.description}"))
        self.kernel.begin_step("fault", "controller", f"an operator moves the leadership of {who} from broker "
                               f"{self.controller.states[tp].leader} to broker {broker}")
        self.controller.move_leader(tp, broker)

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

    # ----------------------------------------------------------------- faults
    def node(self, ref: NodeRef) -> Node:
        """A process by broker id, name ('broker-1', 'producer-2'), or client object."""
        if isinstance(ref, int) and not isinstance(ref, bool):
            if ref not in self._brokers:
                raise KeyError(f"no broker {ref}; brokers are {self.broker_ids}")
            return self._brokers[ref]
        return super().node(ref)

    _node = node
