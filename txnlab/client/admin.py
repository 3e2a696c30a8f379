"""``AdminClient``: confluent-kafka's admin surface (``confluent_kafka.admin.AdminClient``), every call a
protocol request on the simulated network, every answer a ``concurrent.futures.Future`` (``AdminFuture``:
``result()`` drives the simulation, see ``admin_future.py``).

Owns the topic and config calls here (CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
AlterConfigs, IncrementalAlterConfigs: to any broker, which forwards changes to the controller; Metadata
for list_topics / describe_topics; DescribeCluster); the consumer-group calls are in ``admin_groups.py``,
list_offsets and Kafka's transaction tools (KIP-664, ``kafka-transactions.sh``) in ``admin_txn.py``.
"""
from __future__ import annotations

from typing import Optional

from ..kernel.attach import constructed_in_turn
from ..protocol import messages as m
from ..protocol.errors import Errors
from .admin_future import PORT, AdminFuture, AdminRequests, cluster_metadata, kafka_error  # noqa: F401
from .admin_future import host as _host
from .admin_groups import GroupAdmin
from .admin_model import Node, TopicCollection, TopicPartitionInfo
from .admin_txn import TransactionAdmin
from .admin_types import (AbortTransactionSpec, AlterConfigOpType, BrokerMetadata, ClusterMetadata,  # noqa: F401
                          ConfigEntry, ConfigResource, ConfigSource, DescribeClusterResult, NewPartitions, NewTopic,
                          PartitionMetadata, ProducerState, ResourceType, TopicDescription, TopicMetadata,
                          TransactionListing)
from .client_events import ClientEvents
from .config import admin_config, dialect_of
from .dialect import admin_timeout
from .network_client import attach_client, broker_node

def _check_list(value, what: str) -> None:
    if not isinstance(value, list):
        raise TypeError(f"Expected list of {what}")


class AdminClient(GroupAdmin, TransactionAdmin, AdminRequests):
    """``AdminClient({"bootstrap.servers": cluster.bootstrap})``."""

    @constructed_in_turn
    def __init__(self, config: dict) -> None:
        cfg = admin_config(config)
        self._config = cfg
        self._attachment, self.name, self._node = attach_client(cfg, "admin", self)
        self._kernel = self._attachment.kernel
        self._coordinators: dict = {}        # (key, key type) -> the coordinator that last answered
        self._events = ClientEvents(cfg, "admin", self.name, self._kernel, 0, lambda: {})

    def _on_process_crash(self) -> None:
        pass

    def poll(self, timeout: float = -1) -> int:
        """Serve callbacks (error_cb, stats_cb, logger; the answers themselves are futures), letting up to
        ``timeout`` simulated seconds pass first, as librdkafka's poll waits for events; returns how many ran."""
        if timeout and timeout > 0:
            self._kernel.run_until(lambda: False, int(timeout * 1000))
        return self._events.serve()

    # ------------------------------------------------------------ topics
    def create_topics(self, new_topics, **kwargs) -> dict:
        """CreateTopics (a broker forwards it to the controller): {topic: Future(None)}.  kwargs:
        operation_timeout, request_timeout (seconds), validate_only."""
        _check_list(new_topics, "NewTopic objects")
        topics = tuple(m.CreatableTopic(nt.topic, nt.num_partitions, nt.replication_factor,
                                        tuple(sorted((nt.config or {}).items()))) for nt in new_topics)
        req = m.CreateTopicsRequest(topics, self._operation_timeout(kwargs), bool(kwargs.get("validate_only")))
        return self._per_name(req, [t.name for t in topics], lambda r: r.topics, kwargs)

    def delete_topics(self, topics, **kwargs) -> dict:
        """DeleteTopics (a broker forwards it to the controller): {topic: Future(None)}."""
        _check_list(topics, "topic names")
        req = m.DeleteTopicsRequest(tuple(topics), self._operation_timeout(kwargs))
        return self._per_name(req, list(topics), lambda r: r.responses, kwargs)

    def create_partitions(self, new_partitions, **kwargs) -> dict:
        """CreatePartitions (a broker forwards it to the controller): {topic: Future(None)}."""
        _check_list(new_partitions, "NewPartitions objects")
        parts = tuple(m.CreatePartitionsTopic(np.topic, np.new_total_count) for np in new_partitions)
        req = m.CreatePartitionsRequest(parts, self._operation_timeout(kwargs), bool(kwargs.get("validate_only")))
        return self._per_name(req, [p.name for p in parts], lambda r: r.results, kwargs)

    def _operation_timeout(self, kwargs: dict) -> int:
        return int((kwargs.get("operation_timeout") or 0) * 1000) or admin_timeout(self._config, "operation_timeout")

    def _per_name(self, request, names: list, results_of, kwargs: dict, key_of=lambda r: r.name,
                  value_of=lambda r: None) -> dict:
        futures = {n: self._future() for n in names}

        def done(resp, err):
            if err is not None:
                for f in futures.values():
                    f.resolve(error=self._request_error(err, request.API))
                return
            for r in results_of(resp):
                f = futures.get(key_of(r))
                if f is not None:
                    f.resolve(value_of(r), kafka_error(r.error_code, r.error_message) if r.error_code else None)
        self._send_any(request, done, self._deadline(kwargs))
        return futures

    # ------------------------------------------------------------ configs
    def describe_configs(self, resources, **kwargs) -> dict:
        """DescribeConfigs: {ConfigResource: Future({name: ConfigEntry})}.  A broker's configs are asked of that
        broker, topics' of any broker (as Kafka's admin client does)."""
        _check_list(resources, "ConfigResource objects")
        out = {}
        for res in resources:
            f = out[res] = self._future()
            req = m.DescribeConfigsRequest((m.DescribeConfigsResource(int(res.restype), str(res.name)),))
            done = (lambda f: lambda resp, err: self._described(f, resp, err))(f)
            if res.restype == ResourceType.BROKER and str(res.name).isdigit():
                self._send(broker_node(int(res.name)), req, done)
            else:
                self._send_any(req, done, self._deadline(kwargs))
        return out

    def _described(self, f: AdminFuture, resp, err) -> None:
        if err is not None:
            f.resolve(error=self._request_error(err, "DescribeConfigs"))
            return
        r = resp.results[0]
        if r.error_code:
            f.resolve(error=kafka_error(r.error_code, r.error_message))
            return
        f.resolve({c.name: ConfigEntry(c.name, c.value, ConfigSource(c.config_source), is_read_only=c.read_only,
                                       is_default=c.config_source == ConfigSource.DEFAULT_CONFIG,
                                       is_sensitive=c.is_sensitive) for c in r.configs})

    def alter_configs(self, resources, **kwargs) -> dict:
        """AlterConfigs (deprecated in Kafka for IncrementalAlterConfigs): each resource's ``set_config`` keys become
        its whole set of overrides (keys not given return to their defaults).  {ConfigResource: Future(None)}."""
        _check_list(resources, "ConfigResource objects")
        req = m.AlterConfigsRequest(tuple(m.AlterConfigsResource(
            int(r.restype), r.name, tuple(m.AlterableConfig(k, None if v is None else str(v))
                                          for k, v in sorted(r.set_config_dict.items()))) for r in resources),
            bool(kwargs.get("validate_only")))
        return self._alter(req, resources, kwargs)

    def incremental_alter_configs(self, resources, **kwargs) -> dict:
        """IncrementalAlterConfigs (KIP-339): each resource's ``incremental_configs`` (ConfigEntry with an
        ``incremental_operation``: SET, DELETE, ...) applied one key at a time.  {ConfigResource: Future(None)}."""
        _check_list(resources, "ConfigResource objects")
        for r in resources:
            for c in r.incremental_configs:
                if not isinstance(c.incremental_operation, AlterConfigOpType):
                    raise ValueError(f"incremental_operation of {c.name!r} must be an AlterConfigOpType")
        req = m.IncrementalAlterConfigsRequest(tuple(m.AlterConfigsResource(
            int(r.restype), r.name, tuple(m.AlterableConfig(c.name, None if c.value is None else str(c.value),
                                                            c.incremental_operation.value)
                                          for c in r.incremental_configs)) for r in resources),
            bool(kwargs.get("validate_only")))
        return self._alter(req, resources, kwargs)

    def _alter(self, req, resources, kwargs: dict) -> dict:
        by_key = {(int(r.restype), r.name): r for r in resources}
        futures = self._per_name(req, list(by_key), lambda resp: resp.responses, kwargs,
                                 key_of=lambda r: (r.resource_type, r.resource_name))
        return {by_key[k]: f for k, f in futures.items()}

    # ----------------------------------------------------------- metadata
    def list_topics(self, topic: Optional[str] = None, timeout: float = -1) -> ClusterMetadata:
        """Metadata, blocking (confluent-kafka's list_topics is not a future): ClusterMetadata."""
        return cluster_metadata(self._node, self._kernel, topic, dialect_of(self._config))

    def describe_topics(self, topics: TopicCollection, **kwargs) -> dict:
        """Metadata for the named topics: {topic: Future(TopicDescription)} (the lab has no topic ids: None)."""
        if not isinstance(topics, TopicCollection):
            raise TypeError("Expected a TopicCollection")
        names = list(topics.topic_names)
        futures = {n: self._future() for n in names}

        def done(resp, err):
            for n, f in futures.items():
                if err is not None:
                    f.resolve(error=self._request_error(err))
                    continue
                terr, parts = resp.topics.get(n, (Errors.UNKNOWN_TOPIC_OR_PARTITION, []))
                if terr:
                    f.resolve(error=kafka_error(terr, f"Broker: {Errors(terr).description}"))
                    continue
                nodes = {b: Node(b, _host(b), PORT) for b in resp.brokers}
                node = lambda b: nodes.get(b) or Node(b, _host(b), PORT)  # noqa: E731
                f.resolve(TopicDescription(n, None, n.startswith("__"), [
                    TopicPartitionInfo(p.partition, node(p.leader) if p.leader >= 0 else None,
                                       [node(r) for r in p.replicas], [node(r) for r in p.isr]) for p in parts]))
        self._send_any(m.MetadataRequest(tuple(names)), done, self._deadline(kwargs))
        return futures

    def describe_cluster(self, **kwargs) -> AdminFuture:
        """DescribeCluster: Future(DescribeClusterResult(controller, nodes, cluster_id))."""
        f = self._future()

        def done(resp, err):
            if err is not None or resp.error_code:
                f.resolve(error=self._request_error(err) if err is not None else kafka_error(resp.error_code))
                return
            nodes = [Node(b, _host(b), PORT) for b in resp.brokers]
            ctrl = Node(resp.controller_id, _host(resp.controller_id), PORT) if resp.controller_id >= 0 else None
            f.resolve(DescribeClusterResult(ctrl, nodes, resp.cluster_id))
        self._send_any(m.DescribeClusterRequest(), done, self._deadline(kwargs))
        return f
