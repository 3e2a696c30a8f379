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


TOPIC_NAME_MAX_LENGTH = 249
TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def topic_name_error(name) -> "str | None":
    """Why ``name`` is not a legal topic name, in the words of Kafka's ``Topic.validate``; None if it is.
    The one rule every path that can create a topic uses (CreateTopics, Metadata auto-creation, the lab)."""
    if type(name) is not str or not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > TOPIC_NAME_MAX_LENGTH:
        return (f"Topic name is illegal, it can't be longer than {TOPIC_NAME_MAX_LENGTH} characters, "
                f"topic name: {name}")
    if any(c not in TOPIC_CHARS for c in name):
        return (f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, "
                f"'.', '_' and '-'")
    return None
