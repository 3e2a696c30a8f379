"""Names every party agrees on: a broker's node name on the network and Kafka's internal topics."""

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"


CONTROLLER = "controller"     # the controller's node name (it stands for the KRaft quorum)


def looks_like_server(name: str) -> bool:
    """Is ``name`` a server's node name, or shaped like one (``broker-<anything>``, ``controller``)?
    No client node is ever given such a name, whatever its ``client.id`` says."""
    return name == CONTROLLER or name.startswith("broker-")


def broker_name(broker_id: int) -> str:
    """The network name of broker ``broker_id`` (``broker-2``)."""
    return f"broker-{broker_id}"
