"""Kafka's ``LogConfig``: the topic configs one partition log reads, with the defaults it falls back to."""
from __future__ import annotations

DEFAULT_CONFIG: dict[str, object] = {
    "segment.bytes": 1_073_741_824,
    "producer.id.expiration.ms": 86_400_000,
    "max.message.bytes": 1_048_588,
    "message.timestamp.type": "CreateTime",
    # Kafka's broker default is true (since 3.6). The log layer defaults to false so
    # that appends need no VerificationGuard unless the broker turns KIP-890 on.
    "transaction.partition.verification.enable": False,
}
