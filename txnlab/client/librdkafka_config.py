"""librdkafka's configuration properties, as data: name, client (C/P/*), type, range or values, default.

Written from librdkafka's CONFIGURATION.md (confluentinc/librdkafka master at 4c3b017c3, the 2.16 line) and
``src/rdkafka_conf.c`` (value parsing, aliases, ``rd_kafka_conf_finalize``); every name is checked against
the installed librdkafka by ``tests/test_client_config_surface.py``.  One line per property, in the file's
order; ``A(alias, property)`` lines are librdkafka's ``_RK_C_ALIAS`` entries.  Types: ``INT`` (strtol, with a
range), ``FLOAT``, ``BOOL``, ``STR``, ``ENUM`` (one value, case-insensitive), ``FLAGS`` (CSV of values),
``PATTERNS`` (CSV of regexes), ``API`` (a pointer that only a dedicated C setter may set).  Flags: ``D``
deprecated, ``E`` experimental.  How the lab uses each property is in ``client/config.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

INT, FLOAT, BOOL, STR, ENUM, FLAGS, PATTERNS, API = ("integer", "float", "boolean", "string", "enum value",
                                                     "CSV flags", "pattern list", "see dedicated API")


@dataclass(frozen=True)
class Property:
    name: str
    client: str                 # "C" consumer, "P" producer, "*" both
    type: str
    range: Optional[tuple]      # (min, max) for INT/FLOAT; the values for ENUM/FLAGS
    default: Any
    flags: str = ""             # "D" deprecated, "E" experimental
    alias_of: Optional[str] = None

    @property
    def deprecated(self) -> bool:
        return "D" in self.flags

    @property
    def experimental(self) -> bool:
        return "E" in self.flags


def P(name: str, client: str, type_: str, range_: Optional[tuple], default: Any, flags: str = "") -> Property:
    return Property(name, client, type_, range_, default, flags)


def A(alias: str, target: str) -> Property:
    return Property(alias, "", "alias", None, None, alias_of=target)


# fmt: off
# ------------------------------------------------------------------ global properties
GLOBAL_PROPERTIES = (
    P('builtin.features', '*', FLAGS, ('gzip', 'snappy', 'ssl', 'sasl', 'regex', 'lz4', 'sasl_gssapi', 'sasl_plain', 'sasl_scram', 'plugins', 'zstd', 'sasl_oauthbearer', 'http', 'oidc'), 'gzip, snappy, ssl, sasl, regex, lz4, sasl_gssapi, sasl_plain, sasl_scram, plugins, zstd, sasl_oauthbearer, http, oidc'),
    P('client.id', '*', STR, None, 'rdkafka'),
    P('metadata.broker.list', '*', STR, None, None),
    A('bootstrap.servers', 'metadata.broker.list'),
    P('message.max.bytes', '*', INT, (1000, 1000000000), 1000000),
    P('message.copy.max.bytes', '*', INT, (0, 1000000000), 65535),
    P('receive.message.max.bytes', '*', INT, (1000, 2147483647), 100000000),
    P('max.in.flight.requests.per.connection', '*', INT, (1, 1000000), 1000000),
    A('max.in.flight', 'max.in.flight.requests.per.connection'),
    P('metadata.recovery.strategy', '*', ENUM, ('none', 'rebootstrap'), 'rebootstrap'),
    P('metadata.recovery.rebootstrap.trigger.ms', '*', INT, (0, 2147483647), 300000),
    P('topic.metadata.refresh.interval.ms', '*', INT, (-1, 3600000), 300000),
    P('metadata.max.age.ms', '*', INT, (1, 86400000), 900000),
    P('topic.metadata.refresh.fast.interval.ms', '*', INT, (1, 60000), 100),
    P('topic.metadata.refresh.fast.cnt', '*', INT, (0, 1000), 10, 'D'),
    P('topic.metadata.refresh.sparse', '*', BOOL, None, True),
    P('topic.metadata.propagation.max.ms', '*', INT, (0, 3600000), 30000),
    P('topic.blacklist', '*', PATTERNS, None, None),
    P('debug', '*', FLAGS, ('generic', 'broker', 'topic', 'metadata', 'feature', 'queue', 'msg', 'protocol', 'cgrp', 'security', 'fetch', 'interceptor', 'plugin', 'consumer', 'admin', 'eos', 'mock', 'assignor', 'conf', 'telemetry', 'all'), None),
    P('socket.timeout.ms', '*', INT, (10, 300000), 60000),
    P('socket.blocking.max.ms', '*', INT, (1, 60000), 1000, 'D'),
    P('socket.send.buffer.bytes', '*', INT, (0, 100000000), 0),
    P('socket.receive.buffer.bytes', '*', INT, (0, 100000000), 0),
    P('socket.keepalive.enable', '*', BOOL, None, False),
    P('socket.nagle.disable', '*', BOOL, None, True),
    P('socket.max.fails', '*', INT, (0, 1000000), 1),
    P('broker.address.ttl', '*', INT, (0, 86400000), 1000),
    P('broker.address.family', '*', ENUM, ('any', 'v4', 'v6'), 'any'),
    P('socket.connection.setup.timeout.ms', '*', INT, (1000, 2147483647), 30000),
    P('connections.max.idle.ms', '*', INT, (0, 2147483647), 0),
    P('reconnect.backoff.jitter.ms', '*', INT, (0, 3600000), 0, 'D'),
    P('reconnect.backoff.ms', '*', INT, (0, 3600000), 100),
    P('reconnect.backoff.max.ms', '*', INT, (0, 3600000), 10000),
    P('statistics.interval.ms', '*', INT, (0, 86400000), 0),
    P('enabled_events', '*', INT, (0, 2147483647), 0),
    P('error_cb', '*', API, None, None),
    P('throttle_cb', '*', API, None, None),
    P('stats_cb', '*', API, None, None),
    P('log_cb', '*', API, None, None),
    P('log_level', '*', INT, (0, 7), 6),
    P('log.queue', '*', BOOL, None, False),
    P('log.thread.name', '*', BOOL, None, True),
    P('enable.random.seed', '*', BOOL, None, True),
    P('log.connection.close', '*', BOOL, None, True),
    P('background_event_cb', '*', API, None, None),
    P('socket_cb', '*', API, None, None),
    P('connect_cb', '*', API, None, None),
    P('closesocket_cb', '*', API, None, None),
    P('open_cb', '*', API, None, None),
    P('resolve_cb', '*', API, None, None),
    P('opaque', '*', API, None, None),
    P('default_topic_conf', '*', API, None, None),
    P('internal.termination.signal', '*', INT, (0, 128), 0),
    P('api.version.request', '*', BOOL, None, True, 'D'),
    P('api.version.request.timeout.ms', '*', INT, (1, 300000), 10000),
    P('api.version.fallback.ms', '*', INT, (0, 604800000), 0, 'D'),
    P('broker.version.fallback', '*', STR, None, '0.10.0', 'D'),
    P('allow.auto.create.topics', '*', BOOL, None, False),
    P('security.protocol', '*', ENUM, ('plaintext', 'ssl', 'sasl_plaintext', 'sasl_ssl'), 'plaintext'),
    P('ssl.cipher.suites', '*', STR, None, None),
    P('ssl.curves.list', '*', STR, None, None),
    P('ssl.sigalgs.list', '*', STR, None, None),
    P('ssl.key.location', '*', STR, None, None),
    P('ssl.key.password', '*', STR, None, None),
    P('ssl.key.pem', '*', STR, None, None),
    P('ssl_key', '*', API, None, None),
    P('ssl.certificate.location', '*', STR, None, None),
    P('ssl.certificate.pem', '*', STR, None, None),
    P('ssl_certificate', '*', API, None, None),
    P('ssl.ca.location', '*', STR, None, None),
    P('https.ca.location', '*', STR, None, None),
    P('https.ca.pem', '*', STR, None, None),
    P('ssl.ca.pem', '*', STR, None, None),
    P('ssl_ca', '*', API, None, None),
    P('ssl.ca.certificate.stores', '*', STR, None, 'Root'),
    P('ssl.crl.location', '*', STR, None, None),
    P('ssl.keystore.location', '*', STR, None, None),
    P('ssl.keystore.password', '*', STR, None, None),
    P('ssl.providers', '*', STR, None, None),
    P('ssl.engine.location', '*', STR, None, None, 'D'),
    P('ssl.engine.id', '*', STR, None, 'dynamic'),
    P('ssl_engine_callback_data', '*', API, None, None),
    P('enable.ssl.certificate.verification', '*', BOOL, None, True),
    P('ssl.endpoint.identification.algorithm', '*', ENUM, ('none', 'https'), 'https'),
    P('ssl.certificate.verify_cb', '*', API, None, None),
    P('sasl.mechanisms', '*', STR, None, 'GSSAPI'),
    A('sasl.mechanism', 'sasl.mechanisms'),
    P('sasl.kerberos.service.name', '*', STR, None, 'kafka'),
    P('sasl.kerberos.principal', '*', STR, None, 'kafkaclient'),
    P('sasl.kerberos.kinit.cmd', '*', STR, None, 'kinit -R -t "%{sasl.kerberos.keytab}" -k %{sasl.kerberos.principal} || kinit -t "%{sasl.kerberos.keytab}" -k %{sasl.kerberos.principal}'),
    P('sasl.kerberos.keytab', '*', STR, None, None),
    P('sasl.kerberos.min.time.before.relogin', '*', INT, (0, 86400000), 60000),
    P('sasl.username', '*', STR, None, None),
    P('sasl.password', '*', STR, None, None),
    P('sasl.oauthbearer.config', '*', STR, None, None),
    P('enable.sasl.oauthbearer.unsecure.jwt', '*', BOOL, None, False),
    P('oauthbearer_token_refresh_cb', '*', API, None, None),
    P('sasl.oauthbearer.method', '*', ENUM, ('default', 'oidc'), 'default'),
    P('sasl.oauthbearer.client.id', '*', STR, None, None),
    A('sasl.oauthbearer.client.credentials.client.id', 'sasl.oauthbearer.client.id'),
    A('sasl.oauthbearer.client.credentials.client.secret', 'sasl.oauthbearer.client.secret'),
    P('sasl.oauthbearer.client.secret', '*', STR, None, None),
    P('sasl.oauthbearer.scope', '*', STR, None, None),
    P('sasl.oauthbearer.extensions', '*', STR, None, None),
    P('sasl.oauthbearer.token.endpoint.url', '*', STR, None, None),
    P('sasl.oauthbearer.sub.claim.name', '*', STR, None, 'sub'),
    P('sasl.oauthbearer.grant.type', '*', ENUM, ('client_credentials', 'urn:ietf:params:oauth:grant-type:jwt-bearer'), 'client_credentials'),
    P('sasl.oauthbearer.assertion.algorithm', '*', ENUM, ('RS256', 'ES256'), 'RS256'),
    P('sasl.oauthbearer.assertion.private.key.file', '*', STR, None, None),
    P('sasl.oauthbearer.assertion.private.key.passphrase', '*', STR, None, None),
    P('sasl.oauthbearer.assertion.private.key.pem', '*', STR, None, None),
    P('sasl.oauthbearer.assertion.file', '*', STR, None, None),
    P('sasl.oauthbearer.assertion.claim.aud', '*', STR, None, None),
    P('sasl.oauthbearer.assertion.claim.exp.seconds', '*', INT, (1, 2147483647), 300),
    P('sasl.oauthbearer.assertion.claim.iss', '*', STR, None, None),
    P('sasl.oauthbearer.assertion.claim.jti.include', '*', BOOL, None, False),
    P('sasl.oauthbearer.assertion.claim.nbf.seconds', '*', INT, (0, 2147483647), 60),
    P('sasl.oauthbearer.assertion.claim.sub', '*', STR, None, None),
    P('sasl.oauthbearer.assertion.jwt.template.file', '*', STR, None, None),
    P('sasl.oauthbearer.metadata.authentication.type', '*', ENUM, ('none', 'azure_imds', 'aws_iam'), 'none'),
    P('plugin.library.paths', '*', STR, None, None),
    P('interceptors', '*', API, None, None),
    P('group.id', 'C', STR, None, None),
    P('group.instance.id', 'C', STR, None, None),
    P('partition.assignment.strategy', 'C', STR, None, 'range,roundrobin'),
    P('session.timeout.ms', 'C', INT, (1, 3600000), 45000),
    P('heartbeat.interval.ms', 'C', INT, (1, 3600000), 3000),
    P('group.protocol.type', 'C', STR, None, 'consumer'),
    P('group.protocol', 'C', ENUM, ('classic', 'consumer'), 'classic'),
    P('group.remote.assignor', 'C', STR, None, None),
    P('coordinator.query.interval.ms', 'C', INT, (1, 3600000), 600000),
    P('max.poll.interval.ms', 'C', INT, (1, 86400000), 300000),
    P('enable.auto.commit', 'C', BOOL, None, True),
    P('auto.commit.interval.ms', 'C', INT, (0, 86400000), 5000),
    P('enable.auto.offset.store', 'C', BOOL, None, True),
    P('queued.min.messages', 'C', INT, (1, 10000000), 100000),
    P('queued.max.messages.kbytes', 'C', INT, (1, 2097151), 65536),
    P('fetch.wait.max.ms', 'C', INT, (0, 300000), 500),
    P('fetch.queue.backoff.ms', 'C', INT, (0, 300000), 1000),
    P('fetch.message.max.bytes', 'C', INT, (1, 1000000000), 1048576),
    A('max.partition.fetch.bytes', 'fetch.message.max.bytes'),
    P('fetch.max.bytes', 'C', INT, (0, 2147483135), 52428800),
    P('fetch.min.bytes', 'C', INT, (0, 2147483647), 1),
    P('fetch.error.backoff.ms', 'C', INT, (0, 300000), 500),
    P('offset.store.method', 'C', ENUM, ('none', 'file', 'broker'), 'broker', 'D'),
    P('isolation.level', 'C', ENUM, ('read_uncommitted', 'read_committed'), 'read_committed'),
    P('consume_cb', 'C', API, None, None),
    P('rebalance_cb', 'C', API, None, None),
    P('offset_commit_cb', 'C', API, None, None),
    P('enable.partition.eof', 'C', BOOL, None, False),
    P('check.crcs', 'C', BOOL, None, False),
    P('client.rack', '*', STR, None, None),
    P('max.poll.records', 'C', INT, (1, 2147483647), 500),
    P('share.acknowledgement.mode', 'C', STR, None, 'implicit'),
    P('transactional.id', 'P', STR, None, None),
    P('transaction.timeout.ms', 'P', INT, (1000, 2147483647), 60000),
    P('enable.idempotence', 'P', BOOL, None, False),
    P('enable.gapless.guarantee', 'P', BOOL, None, False, 'E'),
    P('queue.buffering.max.messages', 'P', INT, (0, 2147483647), 100000),
    P('queue.buffering.max.kbytes', 'P', INT, (1, 2147483647), 1048576),
    P('queue.buffering.max.ms', 'P', FLOAT, (0, 900000), 5),
    A('linger.ms', 'queue.buffering.max.ms'),
    P('message.send.max.retries', 'P', INT, (0, 2147483647), 2147483647),
    A('retries', 'message.send.max.retries'),
    P('retry.backoff.ms', '*', INT, (1, 300000), 100),
    P('retry.backoff.max.ms', '*', INT, (1, 300000), 1000),
    P('queue.buffering.backpressure.threshold', 'P', INT, (1, 1000000), 1),
    P('compression.codec', 'P', ENUM, ('none', 'gzip', 'snappy', 'lz4', 'zstd'), 'none'),
    A('compression.type', 'compression.codec'),
    P('batch.num.messages', 'P', INT, (1, 1000000), 10000),
    P('batch.size', 'P', INT, (1, 2147483647), 1000000),
    P('delivery.report.only.error', 'P', BOOL, None, False),
    P('dr_cb', 'P', API, None, None),
    P('dr_msg_cb', 'P', API, None, None),
    P('sticky.partitioning.linger.ms', 'P', INT, (0, 900000), 10),
    P('client.dns.lookup', '*', ENUM, ('use_all_dns_ips', 'resolve_canonical_bootstrap_servers_only'), 'use_all_dns_ips'),
    P('enable.metrics.push', '*', BOOL, None, True),
)

# ------------------------------------------------------------------ topic properties (set in the same dict;
# a name that is also global, e.g. compression.codec, is the global one there, as in rd_kafka_conf_set)
TOPIC_PROPERTIES = (
    P('request.required.acks', 'P', INT, (-1, 1000), -1),
    A('acks', 'request.required.acks'),
    P('request.timeout.ms', 'P', INT, (1, 900000), 30000),
    P('message.timeout.ms', 'P', INT, (0, 2147483647), 300000),
    A('delivery.timeout.ms', 'message.timeout.ms'),
    P('queuing.strategy', 'P', ENUM, ('fifo', 'lifo'), 'fifo', 'DE'),
    P('produce.offset.report', 'P', BOOL, None, False, 'D'),
    P('partitioner', 'P', STR, None, 'consistent_random'),
    P('partitioner_cb', 'P', API, None, None),
    P('msg_order_cmp', 'P', API, None, None, 'DE'),
    P('opaque', '*', API, None, None),
    P('compression.codec', 'P', ENUM, ('none', 'gzip', 'snappy', 'lz4', 'zstd', 'inherit'), 'inherit'),
    A('compression.type', 'compression.codec'),
    P('compression.level', 'P', INT, (-1, 12), -1),
    P('auto.commit.enable', 'C', BOOL, None, True, 'D'),
    A('enable.auto.commit', 'auto.commit.enable'),
    P('auto.commit.interval.ms', 'C', INT, (10, 86400000), 60000),
    P('auto.offset.reset', 'C', ENUM, ('smallest', 'earliest', 'beginning', 'largest', 'latest', 'end', 'error'), 'largest'),
    P('offset.store.path', 'C', STR, None, '.', 'D'),
    P('offset.store.sync.interval.ms', 'C', INT, (-1, 86400000), -1, 'D'),
    P('offset.store.method', 'C', ENUM, ('file', 'broker'), 'broker', 'D'),
    P('consume.callback.max.messages', 'C', INT, (0, 1000000), 0),
)
# fmt: on


def _index(props: tuple) -> dict:
    return {p.name: p for p in props}


GLOBAL = _index(GLOBAL_PROPERTIES)
TOPIC = _index(TOPIC_PROPERTIES)

# rdkafka_conf.c's validators of string properties
PARTITIONERS = ("random", "consistent", "consistent_random", "murmur2", "murmur2_random", "fnv1a", "fnv1a_random")
ASSIGNORS = {"range": "eager", "roundrobin": "eager", "cooperative-sticky": "cooperative"}


def lookup(name: str) -> Optional[Property]:
    """The property a name sets (aliases followed), global first then topic, or None (librdkafka's
    ``rd_kafka_conf_set``: a name unknown globally is tried on the default topic configuration)."""
    for table in (GLOBAL, TOPIC):
        p = table.get(name)
        if p is not None:
            return table[p.alias_of] if p.alias_of else p
    return None


def names() -> list:
    """Every name librdkafka accepts in a configuration dict (properties and aliases)."""
    return sorted(set(GLOBAL) | set(TOPIC))
