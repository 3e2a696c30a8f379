"""DeleteTopics at the wire door, where one request names a topic twice: by name and by its id (v6, KIP-516), or
the same name or id twice.  Kafka's ControllerApis.deleteTopics answers a duplicated name or id once
(INVALID_REQUEST, "Duplicate topic name." / "Duplicate topic id."); a name whose topic's id the request also gives
is answered once, for the name and with that id, INVALID_REQUEST "The provided topic name maps to an ID that was
already supplied.", and the topic is not deleted -- if the principal may DELETE it.  If not, both entries are
TOPIC_AUTHORIZATION_FAILED and the id's entry shows no name unless the principal may DESCRIBE the topic (Kafka does
not reveal which name an id maps to).  A wire client's principal is User:ANONYMOUS (no SASL at the door)."""
from __future__ import annotations

import contextlib
import datetime

from txnlab.protocol.errors import Errors
from txnlab.wire.apis_data import topic_id
from txnlab.wire.codec import nested, request_type
from wire_helpers import lab
from wire_raw import ask

CLASH = "The provided topic name maps to an ID that was already supplied."
AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}


def delete(door, version, *entries):
    """DeleteTopics v``version``: entries (name or None, id or None) in v6, names before; the answer as
    (name, id (v6), error code, error message (v5+))."""
    timeout = datetime.timedelta(seconds=30)
    if version < 6:
        r = ask(door, 20, version, timeout=timeout, topic_names=entries)
    else:
        Topic = nested(request_type(20, 6), "topics")
        r = ask(door, 20, 6, timeout=timeout, topics=tuple(Topic(name=n, topic_id=tid) for n, tid in entries))
    return [(t.name, getattr(t, "topic_id", None), t.error_code, getattr(t, "error_message", None))
            for t in r.responses]


def topics(c, door) -> list:
    with door.lock:
        return sorted(c.topics())


@contextlib.contextmanager
def three_topics(config=None):
    with lab(topics=(("t", 1), ("u", 1), ("w", 1)), config=config) as (c, door):
        yield c, door, {name: topic_id(door, name) for name in ("t", "u", "w")}


def test_a_name_whose_id_is_also_given_is_answered_once_and_nothing_is_deleted():
    with three_topics() as (c, door, ids):
        for entries in (((None, ids["u"]), ("u", None)), (("u", None), (None, ids["u"]))):   # either order
            assert delete(door, 6, *entries) == [("u", ids["u"], Errors.INVALID_REQUEST, CLASH)]
        assert topics(c, door) == ["t", "u", "w"]
        # the other topics of the same request are deleted
        assert delete(door, 6, ("w", None), (None, ids["u"]), ("u", None), (None, ids["t"])) == [
            ("w", ids["w"], 0, None), ("u", ids["u"], Errors.INVALID_REQUEST, CLASH), ("t", ids["t"], 0, None)]
        assert topics(c, door) == ["u"]


def test_duplicated_names_and_ids_are_answered_once():
    with three_topics() as (c, door, ids):
        assert delete(door, 6, ("w", None), ("w", None)) == [("w", None, Errors.INVALID_REQUEST,
                                                              "Duplicate topic name.")]
        assert delete(door, 5, "w", "w") == [("w", None, Errors.INVALID_REQUEST, "Duplicate topic name.")]
        # a duplicated id, and its name: the id is a duplicate, the name still maps to an id the request gives
        assert delete(door, 6, (None, ids["u"]), ("u", None), (None, ids["u"])) == [
            (None, ids["u"], Errors.INVALID_REQUEST, "Duplicate topic id."),
            ("u", ids["u"], Errors.INVALID_REQUEST, CLASH)]
        assert topics(c, door) == ["t", "u", "w"]
        # a duplicated name leaves the request: its id alone deletes the topic
        assert delete(door, 6, ("w", None), (None, ids["w"]), ("w", None)) == [
            ("w", None, Errors.INVALID_REQUEST, "Duplicate topic name."), ("w", ids["w"], 0, None)]
        assert topics(c, door) == ["t", "u"]


def test_without_delete_on_the_topic_the_mapping_is_not_revealed():
    with three_topics(AUTHORIZER) as (c, door, ids):
        refused = (None, ids["u"], Errors.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
        by_name = ("u", None, Errors.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
        assert delete(door, 6, (None, ids["u"]), ("u", None)) == [refused, by_name]
        with door.lock:
            c.add_acl("User:ANONYMOUS", "TOPIC", "u", "DESCRIBE")
        assert delete(door, 6, (None, ids["u"]), ("u", None)) == [("u",) + refused[1:], by_name]
        with door.lock:
            c.add_acl("User:ANONYMOUS", "TOPIC", "u", "DELETE")
        assert delete(door, 6, ("u", None), (None, ids["u"])) == [("u", ids["u"], Errors.INVALID_REQUEST, CLASH)]
        # DELETE on the cluster allows every topic
        assert delete(door, 6, ("w", None), (None, ids["w"]))[0][2] == Errors.TOPIC_AUTHORIZATION_FAILED
        with door.lock:
            c.add_acl("User:ANONYMOUS", "CLUSTER", "kafka-cluster", "DELETE")
        assert delete(door, 6, ("w", None), (None, ids["w"])) == [("w", ids["w"], Errors.INVALID_REQUEST, CLASH)]
        assert topics(c, door) == ["t", "u", "w"]
        assert any("User:ANONYMOUS may not DELETE topic 'u'" in e.text for e in c.trace.events if e.kind == "note")


def test_a_refused_topic_is_answered_in_kafkas_words_and_an_id_shows_its_name_only_if_describable():
    """No clash: the broker checks DELETE; Kafka answers "Topic authorization failed." (an ApiError without a message
    of its own), the name's entry without an id, the id's entry without the name unless the principal may DESCRIBE
    the topic."""
    with three_topics(AUTHORIZER) as (c, door, ids):
        failed = (Errors.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
        assert delete(door, 6, ("u", None), (None, ids["w"])) == [("u", None, *failed), (None, ids["w"], *failed)]
        assert delete(door, 5, "u") == [("u", None, *failed)]
        with door.lock:
            c.add_acl("User:ANONYMOUS", "TOPIC", "w", "DESCRIBE")
        assert delete(door, 6, (None, ids["w"])) == [("w", ids["w"], *failed)]
        with door.lock:
            c.add_acl("User:ANONYMOUS", "TOPIC", "w", "DELETE")
        assert delete(door, 6, (None, ids["w"])) == [("w", ids["w"], 0, None)]
        assert topics(c, door) == ["t", "u"]
