"""A transaction whose partition is deleted before its end: the coordinator sends no marker to a partition the
metadata no longer knows and completes the transaction without it (Kafka's TransactionMarkerChannelManager:
"these partitions are likely deleted already and hence can be skipped"); an offline partition, by contrast, is
retried until it has a leader again (tests/test_coordinator_* cover that)."""
from __future__ import annotations

from txnlab import Cluster, Producer
from txnlab.admin import AdminClient

CFG = {"transaction.state.log.num.partitions": 3}


def test_a_deleted_partition_gets_no_marker_and_the_commit_completes():
    c = Cluster(brokers=3, seed=6, config=CFG)
    c.create_topic("keep", partitions=1, replication_factor=3)
    c.create_topic("tmp", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "t1", "client.id": "app"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("keep", value=b"k")
    p.produce("tmp", value=b"t")
    p.flush()
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    admin.delete_topics(["tmp"])["tmp"].result()
    c.run_until_idle()
    p.commit_transaction()
    c.run_until_idle()
    assert c.transaction_state("t1")["state"] == "CompleteCommit"
    markers = [b for b in c.log("keep").batches if b.is_control]
    assert [b.describe() for b in markers] and "COMMIT" in markers[-1].describe()
    said = [line for e in c.trace.events for line in e.details]
    assert any("tmp-0 is not in the metadata (deleted, or never created)" in line for line in said)
    marker_targets = {tp for msg in c.network_messages() if msg.api == "WriteTxnMarkers" and not msg.is_response
                      for entry in msg.payload.markers for tp in entry.partitions}
    assert ("keep", 0) in marker_targets and ("tmp", 0) not in marker_targets
