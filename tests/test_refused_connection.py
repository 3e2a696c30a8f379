"""A broker that refuses a request closes its connection (Kafka's SocketServer: a listener not open yet, a request it
cannot handle): the client fails that request and every one sent behind it on the connection at once, and its next
request goes out on a new connection.  (The lab used to leave the refused request "in service" on the connection:
a client whose second request queued behind it waited forever -- a librdkafka consumer's Metadata to a restarting
broker never came back, and it kept fetching from the dead leader.)"""
from __future__ import annotations

from txnlab import Cluster
from txnlab.protocol import messages as m
from txnlab.protocol.errors import Errors

from helpers import RawClient


def test_a_starting_broker_refuses_every_request_on_the_connection_and_the_next_one_is_served():
    c = Cluster(brokers=2, seed=3)
    c.create_topic("t", partitions=1, replication_factor=2)
    raw = RawClient(c)
    c.crash("broker-1")
    c.advance(1_000)
    c.restart("broker-1")
    assert not c.broker(1).running                      # registered, not unfenced yet
    answers: list = []
    for _ in range(3):                                  # three requests back to back on one connection
        raw.send_request("broker-1", m.MetadataRequest(("t",)), lambda r, e: answers.append(e), timeout_ms=30_000)
    c.run_until(lambda: len(answers) == 3, timeout_ms=1_000)
    assert answers == [Errors.NETWORK_EXCEPTION] * 3    # all refused at once, none left waiting for its timeout
    c.run_until(lambda: c.broker(1).running, timeout_ms=30_000)
    assert raw.call("broker-1", m.MetadataRequest(("t",))).topics      # a new connection, served
