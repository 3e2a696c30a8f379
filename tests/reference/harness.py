"""What scenarios use to observe: an error's signature at a call, a full read of a partition by a
read_committed or read_uncommitted consumer (records with offsets, the position it ends at, the watermark it
is given), and normalisation of what legitimately differs between Apache Kafka and the lab (producer ids)."""
from __future__ import annotations

SCENARIOS: list = []          # (name, cluster kind "one" | "three", function)


def scenario(cluster: str = "one"):
    def register(fn):
        SCENARIOS.append((fn.__name__, cluster, fn))
        return fn
    return register


def err_sig(e) -> str:
    """KafkaError (or the KafkaException carrying one) as name + classes: what an application branches on."""
    ke = e.args[0] if isinstance(e, Exception) and e.args else e
    if not hasattr(ke, "name"):
        return f"{type(e).__name__}: {e}"
    flags = [f for f, on in (("fatal", ke.fatal()), ("retriable", ke.retriable()),
                             ("txn_requires_abort", ke.txn_requires_abort())) if on]
    return ke.name() + ("" if not flags else " [" + ",".join(flags) + "]")


def call(b, fn, *args, **kwargs) -> str:
    """'ok', or the error's signature: every client call a scenario makes is an observable."""
    try:
        fn(*args, **kwargs)
        return "ok"
    except b.KafkaException as e:
        return err_sig(e)
    except Exception as e:          # a client that raises something else than KafkaException differs too
        return f"{type(e).__name__}"


class Observer:
    """One scenario run: observables in order, producer ids replaced by P1, P2, ... in order of appearance."""

    def __init__(self, b) -> None:
        self.b = b
        self.values: dict = {}
        self._pids: dict = {}

    def pid(self, producer_id: int) -> str:
        if producer_id is None or producer_id < 0:
            return str(producer_id)
        return self._pids.setdefault(producer_id, f"P{len(self._pids) + 1}")

    def __setitem__(self, key: str, value) -> None:
        assert key not in self.values, f"observable {key} recorded twice"
        self.values[key] = value

    def call(self, key: str, fn, *args, **kwargs) -> str:
        r = call(self.b, fn, *args, **kwargs)
        self[key] = r
        return r

    def read(self, key: str, topic: str, partition: int = 0, isolation: str = "read_committed",
             config: dict | None = None) -> list:
        """Reads the partition from the beginning to its end for ``isolation`` and records: the (offset, value)
        pairs returned, the position after them, and the high offset (HW, or LSO for read_committed).
        ``config`` adds consumer settings (e.g. a tiny max.partition.fetch.bytes)."""
        r = read_partition(self.b, topic, partition, isolation, config)
        tag = "rc" if isolation == "read_committed" else "ru"
        self[f"{key}.{tag}.records"] = r["records"]
        self[f"{key}.{tag}.position"] = r["position"]
        self[f"{key}.{tag}.{'lso' if tag == 'rc' else 'hw'}"] = r["high"]
        return r["records"]

    def read_both(self, key: str, topic: str, partition: int = 0) -> None:
        """``read`` read_committed, then read_uncommitted."""
        self.read(key, topic, partition)
        self.read(key, topic, partition, isolation="read_uncommitted")

    def producers(self, key: str, topic: str, partition: int = 0) -> None:
        self.b.settle()
        rows = self.b.describe_producers(topic, partition)
        self[key] = sorted(([self.pid(r["producer_id"]), r["producer_epoch"], r["last_sequence"],
                             r["current_transaction_start_offset"]] for r in rows))

    def transactions(self, key: str, *tids: str) -> None:
        """DescribeTransactions per id: state, producer (normalised), epoch, timeout, partitions."""
        out = {}
        self.b.settle()
        described = self.b.describe_transactions(*tids)
        for _ in range(20):     # a decided transaction completes once its markers are written: a moment later
            if not any(str(d.get("state", "")).startswith("Prepare") for d in described.values()):
                break
            self.b.settle()
            described = self.b.describe_transactions(*tids)
        for tid, d in described.items():
            name = tid.rsplit("-", 1)[0]
            if "error" in d:
                out[name] = d["error"]
            else:
                out[name] = [d["state"], self.pid(d["producer_id"]), d["producer_epoch"], d["transaction_timeout_ms"],
                             [p.rsplit("-", 2)[0] + "-" + p.rsplit("-", 1)[1] for p in d["partitions"]]]
        self[key] = out


def read_partition(b, topic: str, partition: int, isolation: str, config: dict | None = None) -> dict:
    b.settle()        # Kafka answers EndTxn before the markers land: a reader comes a moment later
    c = b.Consumer({"bootstrap.servers": b.bootstrap, "group.id": b.unique("reader"), "isolation.level": isolation,
                    "enable.auto.commit": False, "auto.offset.reset": "earliest", "enable.partition.eof": True,
                    **(config or {})})
    tp = b.TopicPartition(topic, partition)
    _, high = c.get_watermark_offsets(tp, timeout=10)
    c.assign([b.TopicPartition(topic, partition, b.mod.OFFSET_BEGINNING)])
    records, idle = [], 0
    while idle < 8:
        m = c.poll(0.5)
        if m is None:
            idle += 1
            continue
        if m.error():
            if m.error().code() == b.KafkaError._PARTITION_EOF:
                break
            records.append(("error", err_sig(m.error())))
            continue
        records.append((m.offset(), (m.value() or b"").decode()))
    position = c.position([tp])[0].offset
    c.close()
    return {"records": records, "position": position, "high": high}


def new_topic(b, base: str, partitions: int = 1, config: dict | None = None) -> str:
    """A topic no earlier scenario used, created with ``partitions`` partitions (and ``config``'s overrides)."""
    t = b.unique(base)
    b.create_topic(t, partitions, config=config)
    return t


def txn_producer(b, tid: str, **extra):
    return b.Producer({"bootstrap.servers": b.bootstrap, "transactional.id": tid, **extra})


def in_transaction(b, tid: str, **extra):
    """A transactional producer that has called init_transactions and begin_transaction (neither observed)."""
    p = txn_producer(b, tid, **extra)
    p.init_transactions(30)
    p.begin_transaction()
    return p


def fill(b, topic: str, values, partition: int = 0) -> None:
    """Writes ``values`` with a plain (non-transactional) producer."""
    produce(b.Producer({"bootstrap.servers": b.bootstrap}), topic, values, partition)


def group_consumer(b, group: str, topic: str | None = None, **extra):
    """A consumer of ``group`` that commits only when told; with ``topic``: assigned its partition 0 from the
    beginning (``extra`` adds settings such as auto.offset.reset or isolation.level)."""
    c = b.Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "enable.auto.commit": False, **extra})
    if topic is not None:
        c.assign([b.TopicPartition(topic, 0, b.mod.OFFSET_BEGINNING)])
    return c


def copier_consumer(b, group: str, topic: str):
    """The input side of a transactional copier: read_committed, from the beginning of ``topic``-0."""
    return group_consumer(b, group, topic, **{"auto.offset.reset": "earliest", "isolation.level": "read_committed"})


def committed(b, c, topic: str) -> list:
    """The offsets committed for ``topic``-0 by ``c``'s group, as a list (what ``committed()`` returns)."""
    return [tp.offset for tp in c.committed([b.TopicPartition(topic, 0)], 10)]


def committed_epochs(b, c, topic: str) -> list:
    """The leader epochs committed with those offsets (KIP-320: OffsetCommit v6+ / TxnOffsetCommit v2+ carry the
    epoch of the record the offset follows, OffsetFetch v5+ answers it; None when none was committed)."""
    return [tp.leader_epoch for tp in c.committed([b.TopicPartition(topic, 0)], 10)]


def produce(p, topic: str, values, partition: int = 0, reports: list | None = None) -> None:
    for v in values:
        cb = None
        if reports is not None:
            def cb(err, msg, reports=reports):
                reports.append(err_sig(err) if err is not None else msg.offset())
        p.produce(topic, value=v.encode() if isinstance(v, str) else v, partition=partition, on_delivery=cb)
    p.flush(30)
