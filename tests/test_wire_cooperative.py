"""Real librdkafka consumers with cooperative-sticky (KIP-429) through the wire door: the subscription's owned
partitions travel through the engine's group coordinator to the (real) leader, so a joining member takes only
what moves."""
from __future__ import annotations

import time

from txnlab.wire.apis_group import decode_subscription, encode_subscription
from wire_helpers import ck, lab


def test_the_owned_partitions_survive_the_wire_both_ways():
    meta = (("a", "b"), (("a", 0), ("a", 2), ("b", 1)))
    assert decode_subscription(encode_subscription(meta, "cooperative-sticky"), "cooperative-sticky") == meta
    assert decode_subscription(encode_subscription(("a",), "range"), "range") == ("a",)


def test_a_second_real_cooperative_consumer_takes_half_and_the_first_keeps_the_rest():
    with lab(topics=(("t", 6),)) as (c, door):
        log = []

        def member(name):
            def on_assign(consumer, parts):
                log.append((name, "assign", sorted(p.partition for p in parts)))

            def on_revoke(consumer, parts):
                log.append((name, "revoke", sorted(p.partition for p in parts)))
            k = ck.Consumer({"bootstrap.servers": door.bootstrap_servers, "group.id": "coop", "log_level": 2,
                             "partition.assignment.strategy": "cooperative-sticky", "client.id": name})
            k.subscribe(["t"], on_assign=on_assign, on_revoke=on_revoke)
            return k

        def assigned(k):
            return sorted(tp.partition for tp in k.assignment())

        a = member("a")
        deadline = time.monotonic() + 30
        while len(assigned(a)) < 6 and time.monotonic() < deadline:
            a.poll(0.2)
        assert assigned(a) == [0, 1, 2, 3, 4, 5]
        b = member("b")
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and not (len(assigned(a)) == 3 and len(assigned(b)) == 3):
            a.poll(0.1)
            b.poll(0.1)
            assert not set(assigned(a)) & set(assigned(b))
        assert len(assigned(a)) == 3 and len(assigned(b)) == 3
        revoked = [ps for who, what, ps in log if who == "a" and what == "revoke"]
        assert revoked and len(revoked[0]) == 3             # a gave up only what moved
        a.close()
        b.close()
