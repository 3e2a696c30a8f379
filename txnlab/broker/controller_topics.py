"""The controller's changes to existing topics: CreatePartitions and the topic configs (AlterConfigs,
IncrementalAlterConfigs), as Kafka's ``ReplicationControlManager.createPartitions`` and
``ConfigurationControlManager`` do them.

Owns the rules (a topic only grows; every config change passes ``check_topic_config`` against the
whole resulting set of overrides) and the publication: new partitions and new configs reach the
brokers with LeaderAndIsr, where a leader's log starts honouring them at once.
"""
from __future__ import annotations

from ..protocol import messages as m
from ..protocol.errors import Errors
from .topic_config import check_topic_config


class TopicChanges:
    """Mixed into ``Controller``."""

    # ------------------------------------------------------- CreatePartitions
    def handle_CreatePartitions(self, msg):
        req = msg.payload
        out = []
        for t in req.topics:
            err, why = self._check_new_partitions(t)
            if err == Errors.NONE and not req.validate_only:
                self._add_partitions(t.name, t.count)
            elif err != Errors.NONE:
                self.narrate(f"controller refused to add partitions to {t.name!r}: {why} -> {err.name}")
            out.append(m.CreatePartitionsTopicResult(t.name, err, why))
        return m.CreatePartitionsResponse(tuple(out))

    def _partitions_of(self, name: str) -> list:
        return sorted(p for t, p in self.states if t == name)

    def _check_new_partitions(self, t) -> tuple:
        current = len(self._partitions_of(t.name))
        if not current:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {t.name!r} does not exist."
        if type(t.count) is not int or t.count < current:
            return (Errors.INVALID_PARTITIONS, f"The topic {t.name} currently has {current} partition(s); "
                    f"{t.count} would not be an increase.")
        if t.count == current:
            return Errors.INVALID_PARTITIONS, f"Topic already has {current} partition(s)."
        if t.count - current > 10_000:      # Kafka's MAX_PARTITIONS_PER_BATCH
            return Errors.POLICY_VIOLATION, "Excessively large number of partitions per request."
        return Errors.NONE, ""

    def _add_partitions(self, name: str, count: int) -> None:
        first = self.states[(name, 0)]
        current = len(self._partitions_of(name))
        new = self._place(name, current, count - current, len(first.replicas), first.config)
        self.narrate(f"controller added partitions {current}..{count - 1} to topic {name} (now {count}); records "
                     f"with a key may now hash to another partition than before")
        self._publish(new)

    # ------------------------------------------ AlterConfigs / IncrementalAlterConfigs
    def handle_AlterConfigs(self, msg):
        return self._alter_configs(msg.payload, incremental=False)

    def handle_IncrementalAlterConfigs(self, msg):
        return self._alter_configs(msg.payload, incremental=True)

    def _alter_configs(self, req, incremental: bool) -> m.AlterConfigsResponse:
        out = []
        for res in req.resources:
            err, why, config = self._new_topic_config(res, incremental)
            if err == Errors.NONE and not req.validate_only:
                self._set_topic_config(res.resource_name, config)
            elif err != Errors.NONE:
                self.narrate(f"controller refused to change the configs of {res.resource_name!r}: {why} "
                             f"-> {err.name}")
            out.append(m.AlterConfigsResourceResponse(err, why, res.resource_type, res.resource_name))
        return m.AlterConfigsResponse(tuple(out))

    def _new_topic_config(self, res, incremental: bool) -> tuple:
        """(error, message, the topic's whole set of overrides after the change)."""
        name = res.resource_name
        if res.resource_type != m.RESOURCE_TOPIC:
            return (Errors.INVALID_REQUEST, f"the lab changes topic configs only (resource type "
                    f"{res.resource_type}); broker configs are static here", {})
        if not self._partitions_of(name):
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name!r} does not exist.", {}
        given = dict(self.topic_configs.get(name, {})) if incremental else {}
        for c in res.configs:
            if not incremental or c.config_operation == m.OP_SET:
                given[c.name] = c.value
            elif c.config_operation == m.OP_DELETE:
                given.pop(c.name, None)
            else:   # APPEND / SUBTRACT apply to list-typed configs; no honoured topic config is a list
                return (Errors.INVALID_CONFIG, f"{c.name}: APPEND and SUBTRACT apply only to list-typed configs", {})
        if len({c.name for c in res.configs}) != len(res.configs):
            return Errors.INVALID_REQUEST, "Error due to duplicate config keys", {}
        rf = len(self.states[(name, 0)].replicas)
        return check_topic_config(given, rf, internal=name.startswith("__"))

    def _set_topic_config(self, name: str, config: dict) -> None:
        self.topic_configs[name] = dict(config)
        items = tuple(sorted(config.items()))
        changed = [self._with(self.states[tp], config=items, partition_epoch=self.states[tp].partition_epoch)
                   for tp in sorted(tp for tp in self.states if tp[0] == name)]
        shown = ", ".join(f"{k}={v}" for k, v in items) or "none"
        self.narrate(f"controller changed the configs of topic {name} (overrides now: {shown}); the brokers learn "
                     f"them with LeaderAndIsr")
        self._publish(changed)
