"""The objects every step reads keep CPython's compact attribute storage.

CPython 3.11 keeps an instance's attributes in a compact array shared with its class (and reads them with its
fastest attribute instruction) only while the class's instances have few enough attributes (``SHARED_KEYS_MAX_SIZE``
in Objects/dictobject.c).  Past that, attribute reads and method look-ups on the class's instances go through
dictionaries: the broker's lifecycle fields once took it to 35 attributes and cost 2.3 % of the instructions of a
1-record transaction (bench/instructions.py), and a broker with a 30th attribute (the AddPartitionsToTxnManager's)
cost 1.4 % on 2026-11-28 -- so the limit is 29.  A class that needs more state groups it in an object of its own
(``Broker.life``)."""
from __future__ import annotations

from helpers import open_transaction

LIMIT = 29


def test_the_hot_objects_of_a_transaction_stay_within_the_compact_attribute_limit():
    c, p = open_transaction(seed=0)
    p.commit_transaction()
    leader = c.broker(c.leader("t"))
    follower = c.broker(next(b for b in c.brokers if b != c.leader("t")))
    hot = {"broker": leader, "kernel": c.kernel, "network": c.kernel.network, "partition": leader.partitions[("t", 0)],
           "producer": p, "sender": p.sender, "transaction manager": p.sender.txn, "client node": p.sender.node,
           "replica fetcher": next(iter(follower.fetchers.values())), "controller": c.controller}
    over = {name: len(vars(o)) for name, o in hot.items() if len(vars(o)) > LIMIT}
    assert over == {}, f"more than {LIMIT} attributes (group some in an object of their own): {over}"
