"""A broker's admin APIs: CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs, IncrementalAlterConfigs,
DescribeConfigs, and the controller's StopReplica (the group and cluster ones: ``admin_groups.py``).

Owns what a broker does with an admin client's request: topic changes are
checked for authorization here and forwarded to the controller (Kafka 4's
``ForwardingManager``: a KRaft broker hands them to the quorum and answers with
its result); DescribeConfigs is answered from the broker's own configuration
and the topic configs it learned with LeaderAndIsr.  StopReplica makes a
broker drop the replicas of a deleted topic (partition, log, fetchers).
"""
from __future__ import annotations

from typing import Optional

from ..config import BROKER, TOPIC
from ..protocol import messages as m
from ..protocol.errors import Errors
from .admin_groups import GroupAdminHandling
from .authorizer import CLUSTER_RESOURCE

CONTROLLER = "controller"
# A topic config and the broker key that gives its default (Kafka's LogConfig synonyms)
TOPIC_DEFAULTS = {"min.insync.replicas": "min.insync.replicas",
                  "max.message.bytes": "message.max.bytes",
                  "unclean.leader.election.enable": "unclean.leader.election.enable",
                  "segment.bytes": "log.segment.bytes"}


def _text(v) -> Optional[str]:
    """A config value as Kafka shows it (strings; booleans lower case)."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


class AdminHandling(GroupAdminHandling):
    """Mixed into ``Broker``."""

    # ------------------------------------------------------------ helpers
    def _from_client(self, msg) -> bool:
        return not self.kernel.is_server(msg.src)

    def _allowed(self, msg, rtype: str, name: str, op: str) -> bool:
        authz = self.cluster.authorizer
        if authz is None or not self._from_client(msg):
            return True
        return authz.authorize(self.cluster.principal_of(msg.src), rtype, name, op)

    @staticmethod
    def _failed(request, err: Errors) -> list:
        """The results of a forwarded CreateTopics / DeleteTopics that never reached the controller: each topic
        fails with ``err`` (ForwardingManager's answer when the controller does not answer in time)."""
        if request.API == "CreateTopics":
            return [m.CreatableTopicResult(t.name, err, err.description) for t in request.topics]
        return [m.DeletableTopicResult(name, err, err.description) for name in request.topic_names]

    def _forward(self, msg, request, refused: dict, order: list, results_of, make_response, key_of=None,
                 failed=None, items=None) -> None:
        """Send ``request`` (the part of the client's request that may go on) to the controller, then answer
        the client with its results and ``refused`` ({name: result}) in the client's order."""
        key_of = key_of or (lambda r: r.name)
        failed = failed or (lambda err: self._failed(request, err))

        def answer(results) -> None:
            got = {key_of(r): r for r in results}
            got.update(refused)
            self.respond(msg, make_response(tuple(got[n] for n in order)))

        if items is None:
            items = request.topics if request.API == "CreateTopics" else request.topic_names
        if not items:
            answer(())             # nothing left to forward: every topic was refused here
            return

        def done(resp, err):
            if err is not None:
                self.narrate(f"broker {self.broker_id} could not reach the controller for {request.API}: {err.name}")
                answer(tuple(failed(Errors.REQUEST_TIMED_OUT)))
            else:
                answer(results_of(resp))
        self.narrate(f"broker {self.broker_id} forwards {request.API} from {msg.src} to the controller")
        timeout = getattr(request, "timeout_ms", 30_000)
        self.send_request(CONTROLLER, request, done, timeout_ms=max(1, min(timeout, 300_000)))

    # -------------------------------------------------------- CreateTopics
    def handle_CreateTopics(self, msg):
        req = msg.payload
        if type(req.topics) is not tuple or not all(type(t) is m.CreatableTopic and type(t.name) is str
                                                    and type(t.configs) is tuple for t in req.topics):
            raise TypeError("CreateTopics: topics must be a tuple of CreatableTopic")
        names = [t.name for t in req.topics]
        order = list(dict.fromkeys(names))           # a duplicated name is answered once
        refused, go = {}, []
        for t in req.topics:
            if names.count(t.name) > 1:
                refused[t.name] = m.CreatableTopicResult(t.name, Errors.INVALID_REQUEST, "Duplicate topic name.")
            elif not (self._allowed(msg, "CLUSTER", CLUSTER_RESOURCE, "CREATE")
                      or self._allowed(msg, "TOPIC", t.name, "CREATE")):
                self.narrate(f"{self.cluster.principal_of(msg.src)} may not CREATE topic {t.name!r} "
                             f"-> TOPIC_AUTHORIZATION_FAILED")
                refused[t.name] = m.CreatableTopicResult(t.name, Errors.TOPIC_AUTHORIZATION_FAILED,
                                                         "Authorization failed.")
            else:
                go.append(t)
        self._forward(msg, m.CreateTopicsRequest(tuple(go), req.timeout_ms, req.validate_only), refused, order,
                      lambda r: r.topics, m.CreateTopicsResponse)
        return None

    # -------------------------------------------------------- DeleteTopics
    def handle_DeleteTopics(self, msg):
        req = msg.payload
        if type(req.topic_names) is not tuple or not all(type(n) is str for n in req.topic_names):
            raise TypeError("DeleteTopics: topic_names must be a tuple of strings")
        # Kafka's ControllerApis.deleteTopics: a duplicated name is answered once; DELETE on the cluster allows
        # every topic; else a topic the principal may not DESCRIBE is refused without saying whether it exists,
        # an unknown one it may DESCRIBE is UNKNOWN_TOPIC_OR_PARTITION (the controller's answer), and an existing
        # one it may not DELETE is refused
        names = list(req.topic_names)
        order = list(dict.fromkeys(names))
        refused, go = {}, []
        everything = self._allowed(msg, "CLUSTER", CLUSTER_RESOURCE, "DELETE")
        for name in order:
            if names.count(name) > 1:
                refused[name] = m.DeletableTopicResult(name, Errors.INVALID_REQUEST, "Duplicate topic name.")
            elif everything or self._allowed(msg, "TOPIC", name, "DELETE") or (
                    name not in self.metadata.topics and self._allowed(msg, "TOPIC", name, "DESCRIBE")):
                go.append(name)
            else:
                self.narrate(f"{self.cluster.principal_of(msg.src)} may not DELETE topic {name!r} "
                             f"-> TOPIC_AUTHORIZATION_FAILED")
                refused[name] = m.DeletableTopicResult(name, Errors.TOPIC_AUTHORIZATION_FAILED,
                                                       "Topic authorization failed.")
        self._forward(msg, m.DeleteTopicsRequest(tuple(go), req.timeout_ms), refused, order,
                      lambda r: r.responses, m.DeleteTopicsResponse)
        return None

    # ----------------------------------------------------- DescribeConfigs
    def handle_DescribeConfigs(self, msg):
        results = []
        for res in msg.payload.resources:
            results.append(self._describe_configs(msg, res))
        return m.DescribeConfigsResponse(tuple(results))

    def _describe_configs(self, msg, res) -> m.DescribeConfigsResult:
        rtype, name, keys = res.resource_type, res.resource_name, res.configuration_keys

        def fail(err: Errors, why: str) -> m.DescribeConfigsResult:
            return m.DescribeConfigsResult(err, why, rtype, name)
        if rtype == m.RESOURCE_TOPIC:
            if not self._allowed(msg, "TOPIC", name, "DESCRIBE_CONFIGS"):
                return fail(Errors.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            if name not in self.metadata.topics:
                return fail(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name!r} does not exist.")
            entries = self._topic_configs(name)
        elif rtype == m.RESOURCE_BROKER:
            if not self._allowed(msg, "CLUSTER", CLUSTER_RESOURCE, "DESCRIBE_CONFIGS"):
                return fail(Errors.CLUSTER_AUTHORIZATION_FAILED, "Authorization failed.")
            if name != str(self.broker_id):
                return fail(Errors.INVALID_REQUEST, f"Unexpected broker id, expected {self.broker_id} but "
                                                    f"received {name}")
            entries = self._broker_configs()
        else:
            return fail(Errors.INVALID_REQUEST, f"unsupported resource type {rtype}")
        if keys is not None:
            entries = [e for e in entries if e.name in keys]
        return m.DescribeConfigsResult(Errors.NONE, "", rtype, name, tuple(entries))

    def _broker_configs(self) -> list:
        return [m.DescribeConfigsResourceResult(k, _text(self.config[k]), True, _broker_source(k, self.config[k]))
                for k in sorted(self.config) if not k.startswith("sim.")]

    def _topic_configs(self, topic: str) -> list:
        state = self.metadata.partitions.get((topic, 0))
        overrides = dict(state.config) if state is not None else {}
        out = []
        for k in sorted(TOPIC):
            if k in overrides:
                out.append(m.DescribeConfigsResourceResult(k, _text(overrides[k]), False,
                                                           m.SOURCE_DYNAMIC_TOPIC_CONFIG))
                continue
            bk = TOPIC_DEFAULTS.get(k)
            if bk is not None and bk in self.config:
                out.append(m.DescribeConfigsResourceResult(k, _text(self.config[bk]), False,
                                                           _broker_source(bk, self.config[bk])))
            else:
                out.append(m.DescribeConfigsResourceResult(k, _text(TOPIC[k].default), False,
                                                           m.SOURCE_DEFAULT_CONFIG))
        return out

    # ---------------------------------------------------- CreatePartitions
    def handle_CreatePartitions(self, msg):
        req = msg.payload
        if type(req.topics) is not tuple or not all(type(t) is m.CreatePartitionsTopic for t in req.topics):
            raise TypeError("CreatePartitions: topics must be a tuple of CreatePartitionsTopic")
        names = [t.name for t in req.topics]
        order = list(dict.fromkeys(names))           # a duplicated name is answered once
        refused, go = {}, []
        # ControllerApis.createPartitions (a KRaft broker forwards the request to the controller): a duplicated
        # name -> INVALID_REQUEST "Duplicate topic name.", a topic without ALTER -> TOPIC_AUTHORIZATION_FAILED
        # with no message
        for t in req.topics:
            if names.count(t.name) > 1:
                refused[t.name] = m.CreatePartitionsTopicResult(t.name, Errors.INVALID_REQUEST,
                                                                "Duplicate topic name.")
            elif not self._allowed(msg, "TOPIC", t.name, "ALTER"):
                self.narrate(f"{self.cluster.principal_of(msg.src)} may not ALTER topic {t.name!r} "
                             f"-> TOPIC_AUTHORIZATION_FAILED")
                refused[t.name] = m.CreatePartitionsTopicResult(t.name, Errors.TOPIC_AUTHORIZATION_FAILED)
            else:
                go.append(t)
        fwd = m.CreatePartitionsRequest(tuple(go), req.timeout_ms, req.validate_only)
        self._forward(msg, fwd, refused, order, lambda r: r.results, m.CreatePartitionsResponse, items=go,
                      failed=lambda err: [m.CreatePartitionsTopicResult(t.name, err) for t in go])
        return None

    # ------------------------------------------ AlterConfigs / IncrementalAlterConfigs
    def handle_AlterConfigs(self, msg):
        return self._alter_configs(msg)

    def handle_IncrementalAlterConfigs(self, msg):
        return self._alter_configs(msg)

    def _alter_configs(self, msg):
        """Topic configs live in the metadata log: the controller checks and applies them (forwarded)."""
        req = msg.payload
        if type(req.resources) is not tuple or not all(type(r) is m.AlterConfigsResource and type(r.configs) is tuple
                                                       for r in req.resources):
            raise TypeError(f"{req.API}: resources must be a tuple of AlterConfigsResource")
        key = lambda r: (r.resource_type, r.resource_name)  # noqa: E731
        order = [key(r) for r in req.resources]
        refused, go = {}, []
        for r in req.resources:
            def no(err: Errors, why: str, r=r) -> None:
                refused[key(r)] = m.AlterConfigsResourceResponse(err, why, r.resource_type, r.resource_name)
            if order.count(key(r)) > 1:
                no(Errors.INVALID_REQUEST, "Duplicate resource in request.")
            elif r.resource_type == m.RESOURCE_TOPIC and not self._allowed(msg, "TOPIC", r.resource_name,
                                                                           "ALTER_CONFIGS"):
                self.narrate(f"{self.cluster.principal_of(msg.src)} may not ALTER_CONFIGS of topic "
                             f"{r.resource_name!r} -> TOPIC_AUTHORIZATION_FAILED")
                no(Errors.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            elif r.resource_type == m.RESOURCE_BROKER:
                self.narrate(f"broker {self.broker_id}: the lab's broker configs are static (set when the "
                             f"cluster is built) -> INVALID_REQUEST")
                no(Errors.INVALID_REQUEST, "the lab's broker configs are static: set them in Cluster(config=...)")
            else:
                go.append(r)
        fwd = type(req)(tuple(go), req.validate_only)
        self._forward(msg, fwd, refused, order, lambda resp: resp.responses, m.AlterConfigsResponse, key_of=key,
                      items=go, failed=lambda err: [m.AlterConfigsResourceResponse(err, "", r.resource_type,
                                                                                   r.resource_name) for r in go])
        return None

    # ---------------------------------------------------------- StopReplica
    def handle_StopReplica(self, msg):
        req = msg.payload
        dropped = []
        for tp in req.partitions:
            for f in self.fetchers.values():
                f.remove_partition(tp)
            p = self.partitions.pop(tp, None)
            if p is not None:
                p.fail_delayed(Errors.UNKNOWN_TOPIC_OR_PARTITION, "the topic was deleted")
            self.metadata.partitions.pop(tp, None)
            if req.delete_partitions and self.logs.pop(tp, None) is not None:
                dropped.append(tp)
            self._complete_parked_for(tp)
        for topic in {tp[0] for tp in req.partitions}:
            if not any(t == topic for t, _ in self.metadata.partitions):
                self.metadata.topics.pop(topic, None)
                self.metadata.topic_ids.pop(topic, None)
        if dropped:
            self.narrate(f"broker {self.broker_id} stopped and deleted {len(dropped)} replica(s): "
                         f"{m.tps_str(dropped)}")
        self.txn_coordinator.markers.metadata_changed()
        return m.StopReplicaResponse(Errors.NONE)


def _broker_source(key: str, value) -> int:
    """DEFAULT_CONFIG when the broker runs Kafka's default, else STATIC_BROKER_CONFIG (set at start)."""
    d = BROKER.get(key)
    return m.SOURCE_DEFAULT_CONFIG if d is not None and d.default == value else m.SOURCE_STATIC_BROKER_CONFIG
