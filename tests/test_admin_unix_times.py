"""The Admin client's times are Unix ms, as a real Admin client's are (Kafka's DescribeProducers lastTimestamp,
DescribeTransactions transactionStartTimeMs): the brokers keep the lab's clock, and the admin adds the lab's 0
(``sim.clock.epoch.ms``) as the lab's producer and consumer do for record timestamps."""
from __future__ import annotations

from txnlab import Producer, TopicPartition
from txnlab.admin import AdminClient
from txnlab.cluster import Cluster

EPOCH = 1_767_225_600_000          # sim.clock.epoch.ms's default


def test_describe_producers_and_transactions_answer_unix_times():
    cluster = Cluster(brokers=1, seed=5)
    cluster.create_topic("t", partitions=1, replication_factor=1)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "tx"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"v", partition=0, timestamp=EPOCH + 4_242)
    p.flush()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    (ps,) = admin.describe_producers([TopicPartition("t", 0)])[TopicPartition("t", 0)].result()
    assert ps.last_timestamp == EPOCH + 4_242                      # the record's own timestamp, as produced
    d = admin.describe_transactions(["tx"])["tx"].result()
    started = cluster.transaction_state("tx")
    assert d["state"] == "Ongoing" and EPOCH < d["transaction_start_ms"] <= EPOCH + cluster.kernel.now
    assert d["transaction_start_ms"] - EPOCH == started["transaction_start_ms"]
