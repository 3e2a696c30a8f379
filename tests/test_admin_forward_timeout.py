"""A broker forwards CreateTopics and DeleteTopics to the controller (Kafka 4's forwarding).  When the controller
does not answer within the request's operation timeout, the broker answers each topic REQUEST_TIMED_OUT (7); the
simulation goes on (it raised AttributeError inside the broker, a crashed run)."""
import pytest

from txnlab import Cluster
from txnlab.admin import AdminClient, NewTopic


@pytest.mark.parametrize("call", ["create", "delete"])
def test_a_forward_the_controller_does_not_answer_in_time_fails_each_topic_with_request_timed_out(call):
    c = Cluster(brokers=1, seed=1)
    c.create_topic("old", partitions=1)
    a = AdminClient({"bootstrap.servers": c.bootstrap})
    a.list_topics()
    c.pause("controller", 10_000)
    if call == "create":
        futures = a.create_topics([NewTopic("new-1", 1), NewTopic("new-2", 1)], operation_timeout=1)
    else:
        futures = a.delete_topics(["old"], operation_timeout=1)
    for f in futures.values():
        e = f.exception(30).args[0]
        assert (e.code(), e.name()) == (7, "REQUEST_TIMED_OUT")
    c.advance(15_000)
    # the controller, back, still applies what it was sent: a timed-out request may have done its work
    assert ("new-1" in c.topics()) if call == "create" else ("old" not in c.topics())
