"""The two sides of the differential suite: a scenario gets a ``Backend`` and writes confluent-kafka code against
``b.Producer`` / ``b.Consumer`` / ``b.AdminClient``; the backend also offers what a test harness does beside a
program (kill a broker, let time pass, the transaction admin calls of kafka-transactions.sh).

- ``KafkaBackend``: confluent_kafka (librdkafka) on a real Apache Kafka cluster (tests/reference/kafka.py); the
  admin calls confluent-kafka's Python AdminClient lacks go through Kafka's own Admin client (reference/TxnTool).
- ``LabBackend``: txnlab's Producer / Consumer / AdminClient on a txnlab Cluster in this process; time passes
  in simulated milliseconds."""
from __future__ import annotations

import contextlib
import itertools
import json
import time
import uuid

import confluent_kafka
import confluent_kafka.admin

import txnlab
import txnlab.admin
from txnlab.protocol.names import broker_name
from txnlab.protocol.record_batch import ControlRecordType

from .kafka import KafkaCluster, shared_broker_config

_RUN = itertools.count(1)


class Backend:
    name = ""
    brokers = 1
    transaction_version = 2

    def __init__(self) -> None:
        self.run_id = f"{next(_RUN)}{uuid.uuid4().hex[:6]}"

    def use(self, mod, admin) -> None:
        """The client library scenarios get: ``confluent_kafka`` or ``txnlab`` (and its admin module)."""
        self.mod, self.admin = mod, admin
        self.Producer, self.Consumer, self.AdminClient = mod.Producer, mod.Consumer, admin.AdminClient
        self.TopicPartition, self.KafkaException, self.KafkaError = mod.TopicPartition, mod.KafkaException, \
            mod.KafkaError

    def unique(self, base: str) -> str:
        """A topic / transactional id / group name no earlier scenario on this cluster used."""
        return f"{base}-{self.run_id}"

    # ---- what every scenario may use beside the clients
    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 0,
                     config: dict | None = None) -> None:
        """CreateTopics; ``config``: the topic's overrides (values as text, e.g. {"max.message.bytes": "1024"})."""
        rf = replication_factor or self.brokers
        admin = self.AdminClient({"bootstrap.servers": self.bootstrap})
        fs = admin.create_topics([self.admin.NewTopic(name, num_partitions=partitions, replication_factor=rf,
                                                      config=dict(config or {}))], operation_timeout=30)
        for f in fs.values():
            f.result(30)
        self.wait_topic(name, partitions)

    def wait_topic(self, name: str, partitions: int) -> None:
        pass

    def alter_topic_config(self, name: str, key: str, value: str | None) -> None:
        """IncrementalAlterConfigs of one topic's ``key`` (kafka-configs.sh --alter): SET ``value``, or DELETE the
        override when None."""
        self._alter_topic_config(self.AdminClient({"bootstrap.servers": self.bootstrap}), self.admin, name, key,
                                 value)

    @staticmethod
    def _alter_topic_config(admin, types, name: str, key: str, value: str | None) -> None:
        op = types.AlterConfigOpType.SET if value is not None else types.AlterConfigOpType.DELETE
        res = types.ConfigResource(types.ResourceType.TOPIC, name)
        res.add_incremental_config(types.ConfigEntry(key, value if value is not None else "",
                                                     incremental_operation=op))
        admin.incremental_alter_configs([res])[res].result(30)

    def leader(self, topic: str, partition: int = 0) -> int:
        admin = self.AdminClient({"bootstrap.servers": self.bootstrap})
        md = admin.list_topics(topic, timeout=10)
        return md.topics[topic].partitions[partition].leader

    def _group_admin(self):
        return self.AdminClient({"bootstrap.servers": self.bootstrap})

    def delete_group(self, group: str) -> None:
        """DeleteGroups (kafka-consumer-groups.sh --delete): raises the KafkaException of a refusal."""
        admin = self._group_admin()     # kept while its futures are waited for (confluent-kafka's need)
        for f in admin.delete_consumer_groups([group], request_timeout=30).values():
            f.result(30)


class _WallClock:
    """Time passes on the wall clock (a real cluster, or the lab's listener whose simulated time follows it)."""

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class KafkaBackend(_WallClock, Backend):
    name = "kafka"

    def __init__(self, cluster: KafkaCluster) -> None:
        super().__init__()
        self.cluster = cluster
        self.brokers = cluster.n
        self.transaction_version = cluster.transaction_version
        self.bootstrap = cluster.bootstrap
        self.use(confluent_kafka, confluent_kafka.admin)

    def wait_topic(self, name: str, partitions: int) -> None:
        admin = self.AdminClient({"bootstrap.servers": self.bootstrap})
        for _ in range(100):
            md = admin.list_topics(name, timeout=5).topics.get(name)
            if md is not None and md.error is None and len(md.partitions) == partitions and \
                    all(p.leader >= 0 for p in md.partitions.values()):
                return
            time.sleep(0.1)

    def settle(self) -> None:
        """Until no transaction is between its decision and its markers (Kafka answers EndTxn first)."""
        time.sleep(0.1)
        for _ in range(50):
            if not any(r["state"].startswith("Prepare") for r in self.list_transactions()):
                return
            time.sleep(0.1)

    def kill(self, broker: int) -> None:
        self.cluster.kill(broker)

    def stop(self, broker: int) -> None:
        """An operator stops the broker: SIGTERM, which returns once its controlled shutdown is over and it exited."""
        self.cluster.stop_node(broker)
        self.cluster.killed.add(broker)

    def restart(self, broker: int) -> None:
        self.cluster.restart(broker)

    def _tool(self, *args: str):
        """One command to the cluster's TxnTool (a JVM kept for the session: Kafka's Admin client)."""
        return self.cluster.admin_tool(*args)

    def describe_transactions(self, *tids: str) -> dict:
        return self._tool("describe-transactions", *tids)

    def list_transactions(self) -> list:
        return self._tool("list-transactions")

    def describe_producers(self, topic: str, partition: int = 0) -> list:
        return self._tool("describe-producers", topic, str(partition))

    def abort_hanging(self, topic: str, partition: int = 0):
        return self._tool("abort", topic, str(partition))["aborted"]

    def coordinator(self, tid: str) -> int:
        return self.describe_transactions(tid)[tid]["coordinator_id"]

    def hold_markers(self, tid: str, topic: str, group: str):
        """Kafka's coordinator sends its markers as soon as the decision is durable: nothing here holds them (a
        coordinator killed just after the commit returned may or may not have written them)."""
        return None

    def commit_window(self, tid: str, topic: str):
        return None

    def release(self, held) -> None:
        pass


class LabBackend(Backend):
    name = "txnlab"

    def __init__(self, brokers: int = 1, transaction_version: int = 2, seed: int = 17) -> None:
        super().__init__()
        self.brokers, self.transaction_version = brokers, transaction_version
        config = {**shared_broker_config(brokers), "transaction.version": transaction_version}
        config.pop("transaction.max.timeout.ms")
        self.cluster = txnlab.Cluster(brokers=brokers, seed=seed, config=config)
        self.bootstrap = self.cluster.bootstrap
        self.use(txnlab, txnlab.admin)

    def sleep(self, seconds: float) -> None:
        self.cluster.advance(int(seconds * 1000))

    def settle(self) -> None:
        self.cluster.run_until_idle()

    def kill(self, broker: int) -> None:
        self.cluster.crash(broker_name(broker))

    def stop(self, broker: int) -> None:
        """An operator stops the broker (``Cluster.shutdown``: its controlled shutdown), until it has exited."""
        node = self.cluster.node(broker_name(broker))
        self.cluster.shutdown(node)
        self.cluster.run_until(lambda: not node.alive, timeout_ms=360_000)

    def restart(self, broker: int) -> None:
        self.cluster.restart(broker_name(broker))
        self.cluster.run_until_idle()

    def _admin(self):
        return self.AdminClient({"bootstrap.servers": self.bootstrap})

    def close(self) -> None:
        pass

    def describe_transactions(self, *tids: str) -> dict:
        out = {}
        for tid, f in self._admin().describe_transactions(list(tids)).items():
            try:
                d = f.result(30)
            except txnlab.KafkaException as e:
                out[tid] = {"error": _java_exception_name(e.args[0].code())}
                continue
            out[tid] = {"state": d["state"], "producer_id": d["producer_id"], "producer_epoch": d["producer_epoch"],
                        "transaction_timeout_ms": d["transaction_timeout_ms"], "coordinator_id": d["coordinator"],
                        "partitions": sorted(f"{t}-{p}" for t, p in d["partitions"])}
        return out

    def list_transactions(self) -> list:
        rows = self._admin().list_transactions().result(30)
        return sorted(({"transactional_id": r.transactional_id, "producer_id": r.producer_id, "state": r.state}
                       for r in rows), key=lambda r: json.dumps(r, sort_keys=True))

    def describe_producers(self, topic: str, partition: int = 0) -> list:
        tp = txnlab.TopicPartition(topic, partition)
        rows = self._admin().describe_producers([tp])[tp].result(30)
        return [{"producer_id": p.producer_id, "producer_epoch": p.producer_epoch, "last_sequence": p.last_sequence,
                 "coordinator_epoch": p.coordinator_epoch,
                 "current_transaction_start_offset": p.current_transaction_start_offset} for p in rows]

    def abort_hanging(self, topic: str, partition: int = 0):
        for p in self.describe_producers(topic, partition):
            if p["current_transaction_start_offset"] >= 0:
                spec = txnlab.admin.AbortTransactionSpec(txnlab.TopicPartition(topic, partition), p["producer_id"],
                                                         p["producer_epoch"], p["coordinator_epoch"])
                self._admin().abort_transaction(spec).result(30)
                return p
        return None

    def coordinator(self, tid: str) -> int:
        return self.cluster.transaction_coordinator(tid)

    def _locked(self):
        return contextlib.nullcontext()

    def hold_markers(self, tid: str, topic: str, group: str):
        """Delays the coordinator's next WriteTxnMarkers requests (one per broker that leads a partition of the
        transaction: ``topic``-0 and the group's offsets partition) by two minutes: a coordinator that crashes
        once the commit is answered leaves the decision durable (PrepareCommit) and no marker written, as its
        crash drops what it had on the wire.  Returns the fault rule (``release`` disarms what is left of it)."""
        with self._locked():
            c = self.cluster
            leaders = {c.leader(topic, 0), c.group_coordinator(group)}
            return c.delay_next("WriteTxnMarkers", 120_000, src=c.transaction_coordinator(tid), count=len(leaders))

    def commit_window(self, tid: str, topic: str) -> dict:
        """The transaction's state at its coordinator and the markers in ``topic``-0 now."""
        with self._locked():
            d = self.cluster.transaction_state(tid)
            markers = [ControlRecordType(x.control_type).name for x in self.cluster.log(topic, 0).batches
                       if x.is_control]
            return {"state": d["state"] if d else None, "markers": markers}

    def release(self, held) -> None:
        with self._locked():
            rules = self.cluster.kernel.network.rules
            if held in rules:
                rules.remove(held)


def _java_exception_name(code: int) -> str:
    """Kafka's Java exception class for an error code (what the Java Admin reports), for the admin errors met."""
    return {105: "TransactionalIdNotFoundException", 15: "CoordinatorNotAvailableException"}.get(code, str(code))


class WireBackend(_WallClock, LabBackend):
    """confluent_kafka (librdkafka itself) on a txnlab Cluster through the lab's Kafka-protocol listener
    (``cluster.listen()``, simulated time following the wall clock): the same client as on real Kafka, so what
    differs here is the engine alone.  The admin calls go to the cluster in-process, as for ``LabBackend``."""
    name = "wire"

    def __init__(self, brokers: int = 1, transaction_version: int = 2, seed: int = 17) -> None:
        super().__init__(brokers, transaction_version, seed)
        self.door = self.cluster.listen()
        self.bootstrap = self.door.bootstrap_servers
        self.lab_bootstrap = self.cluster.bootstrap
        self.use(confluent_kafka, confluent_kafka.admin)

    def _admin(self):
        return txnlab.admin.AdminClient({"bootstrap.servers": self.lab_bootstrap})

    def delete_group(self, group: str) -> None:
        """The listener does not speak DeleteGroups: the lab's own AdminClient deletes (in-process), and its
        refusal is raised as confluent-kafka's KafkaException, so a scenario sees one type on every side."""
        try:
            super().delete_group(group)
        except txnlab.KafkaException as e:
            raise confluent_kafka.KafkaException(confluent_kafka.KafkaError(e.args[0].code())) from None

    def _group_admin(self):
        return self._admin()

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 0,
                     config: dict | None = None) -> None:
        """In-process; a topic with overrides through the lab's CreateTopics (checked as Kafka's broker checks
        them, where ``Cluster.create_topic`` refuses some that Kafka accepts, e.g. min.insync.replicas > RF)."""
        rf = replication_factor or self.brokers
        if not config:
            self.cluster.create_topic(name, partitions=partitions, replication_factor=rf)
            return
        with self._locked():
            fs = self._admin().create_topics([txnlab.admin.NewTopic(name, partitions, rf, config=dict(config))],
                                             operation_timeout=30)
            for f in fs.values():
                try:
                    f.result(30)
                except txnlab.KafkaException as e:     # as confluent-kafka's, so a scenario sees one type
                    raise confluent_kafka.KafkaException(confluent_kafka.KafkaError(e.args[0].code())) from None

    def alter_topic_config(self, name: str, key: str, value: str | None) -> None:
        """In-process: the listener does not speak IncrementalAlterConfigs."""
        with self._locked():
            self._alter_topic_config(self._admin(), txnlab.admin, name, key, value)

    def settle(self) -> None:
        time.sleep(0.1)
        self.cluster.run_until_idle()

    def stop(self, broker: int) -> None:
        """As on Kafka: the call returns once the broker has exited (the listener runs the lab meanwhile)."""
        with self._locked():
            node = self.cluster.node(broker_name(broker))
            self.cluster.shutdown(node)
        deadline = time.monotonic() + 120
        while node.alive and time.monotonic() < deadline:
            time.sleep(0.05)

    def abort_hanging(self, topic: str, partition: int = 0):
        found = super().abort_hanging(topic, partition)
        self.cluster.run_until_idle()
        return found

    def _locked(self):
        return self.door.lock

    def close(self) -> None:
        self.door.close()
