"""The narration says "none" in words where it describes state that has none (no epoch yet, no committed offset,
no acknowledged sequence): chapter 01 teaches that -1 in a field means "none", and a request's or response's fields
are still shown as sent (the -1 stays beside the words)."""
from __future__ import annotations

import pytest

from txnlab import Cluster, KafkaException, Producer, gallery


def _narrations(c, text: str) -> list:
    return [e.narration for e in c.trace.events if text in e.narration]


def test_a_transactional_ids_first_epoch_is_said_in_words():
    c, _ = gallery.load("zombie-fenced").play()
    assert _narrations(c, "'copier': producer id 2000, epoch 0 (its first: it had no epoch yet)")
    assert not _narrations(c, "epoch -1")
    assert _narrations(c, "'copier': producer id 2000, epoch 1 -> 2")        # a bump still shows both epochs


def test_an_offset_fetch_answer_without_a_committed_offset_says_so_beside_the_field():
    c, _ = gallery.load("consume-transform-produce").play()
    answers = _narrations(c, "got the OffsetFetch response")
    assert answers and all("=-1" not in a or "=-1 (no committed offset)" in a for a in answers)
    assert any("orders-0=-1 (no committed offset)" in a for a in answers)


def test_a_partition_with_no_acknowledged_sequence_says_so():
    """A transactional producer's only batch is held past its request timeout and expires before any sequence of
    the partition was acknowledged (tests/test_inflight_expiry_paths.py's path (a))."""
    c = Cluster(brokers=3, seed=1)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "tx", "sim.client.dialect": "java",
                  "retry.backoff.ms": 6_000, "retry.backoff.max.ms": 6_000, "request.timeout.ms": 10_000,
                  "socket.timeout.ms": 10_000, "delivery.timeout.ms": 15_000})
    p.init_transactions()
    p.begin_transaction()
    c.delay_next("Produce", 12_000)
    p.produce("t", value=b"expired", partition=0)
    with pytest.raises(KafkaException):
        p.commit_transaction(30)
    said = _narrations(c, "no batches in flight remain for t-0")
    assert said and "no batches in flight remain for t-0, no sequence acknowledged yet, next 1" in said[0]
    assert not _narrations(c, "acked sequence -1")


def test_the_coordinator_view_says_no_epoch_yet_for_a_new_transactional_id():
    """Between a new transactional.id's first InitProducerId and the durable write of its epoch 0, the coordinator
    holds producer id 1000 and no epoch (-1): the state machine's label, its hover and the table say so in words."""
    from widgets import Stepper
    from widgets.outcome import readable
    s = Stepper("commit-visible-atomically", skip_background=True)
    assert s.step_until("is new: producer id")
    ids = next(t for t in s.coordinators.figure.data if t.name == "transactional ids")
    assert ids.text == ("tx-orders (no epoch)",)
    assert "producer id 1000 no epoch yet" in ids.hovertext[0] and "-1" not in ids.hovertext[0]
    table = next(w.value for w in vars(s.coordinators).values() if "<th>epoch</th>" in str(getattr(w, "value", "")))
    assert "<td>none yet</td>" in table and "<td>-1</td>" not in table
    assert s.step_until("got the InitProducerId response")
    ids = next(t for t in s.coordinators.figure.data if t.name == "transactional ids")
    assert ids.text == ("tx-orders e0",)
    s.close()
    assert readable({"state": "Empty", "producer_id": 1000, "producer_epoch": -1}) == \
        "Empty, producer id 1000, no epoch yet"
    assert readable({"state": "Ongoing", "producer_id": 1000, "producer_epoch": 2}) == \
        "Ongoing, producer id 1000, epoch 2"
