"""Names every party agrees on: a broker's node name on the network and Kafka's internal topics."""

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"


def broker_name(broker_id: int) -> str:
    """The network name of broker ``broker_id`` (``broker-2``)."""
    return f"broker-{broker_id}"
