"""The fetch path builds a follower's FetchRequest (and FetchPartition), every FetchResponse and the
FetchPartitionData of followers and consumers field by field (without calling the class, for speed): each must
read exactly as the class builds it from the same fields."""
import dataclasses

from txnlab import Cluster, Consumer, Producer
from txnlab.protocol import messages as m


def _same_as_built(obj) -> bool:
    cls = type(obj)
    fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(cls)}   # AttributeError if one is unset
    built = cls(**fields)
    return built == obj and repr(built) == repr(obj)


def test_replication_messages_read_as_the_classes_build_them():
    c = Cluster(brokers=3, seed=5)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx"})
    p.init_transactions()
    for i in range(3):
        p.begin_transaction()
        p.produce("t", value=b"%d" % i)
        p.commit_transaction()
    consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    consumer.subscribe(["t"])
    values = []
    for _ in range(20):
        x = consumer.poll(1.0)
        if x is not None and not x.error():
            values.append(x.value())
    assert values == [b"0", b"1", b"2"]
    fetches = [msg.payload for msg in c.kernel.network.messages.values()
               if msg.api == "Fetch" and msg.src.startswith("broker-")]
    requests = [x for x in fetches if isinstance(x, m.FetchRequest)]
    responses = [x for x in fetches if isinstance(x, m.FetchResponse)]
    datas = [d for r in responses for d in r.partitions.values()]
    positions = [fp for r in requests for fp in r.partitions.values()]
    # what this checks is there: incremental session fetches, and answers that carry records
    assert any(r.session_id > 0 for r in requests) and any(d.records for d in datas) and positions
    assert any(d.aborted_transactions is not None and d.records for d in datas)     # a consumer's, with records
    for x in requests + responses + datas + positions:
        assert _same_as_built(x), x
