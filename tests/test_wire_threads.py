"""The notebook's own clients and a door's thread on one kernel: while a door serves a lab (here the wire door),
every public call of the lab's in-process clients -- and their construction -- holds the door's lock, so a call
from the notebook never runs half-way through one of the door's steps.  Before, an in-process admin call queued
its request while the door's thread was stepping, two events could get one sequence number, the door's thread
died on a KeyError and its real clients timed out (the differential suite's txn_record_too_large, once).  A door
whose thread stops says why (``door.error``, a note in the trace) instead of going quiet."""
from __future__ import annotations

import sys
import threading
import time

import pytest

import txnlab
from txnlab import admin


def _cluster():
    c = txnlab.Cluster(brokers=1, seed=3)
    c.create_topic("t", partitions=1, replication_factor=1)
    return c


def _finishes_only_after_release(lock, call) -> None:
    """``call()`` on another thread while this one holds ``lock``: it waits for the lock, then completes."""
    done = threading.Event()
    with lock:
        worker = threading.Thread(target=lambda: (call(), done.set()), daemon=True)
        worker.start()
        assert not done.wait(0.3), "the call ran while the door's lock was held"
    worker.join(60)
    assert done.is_set()


def test_clients_wait_for_the_doors_lock_only_while_a_door_serves():
    c = _cluster()
    before = txnlab.Producer({"bootstrap.servers": c.bootstrap})
    # no door: nothing is wrapped (a call costs what it did)
    assert "produce" not in vars(before) and c.attachment.lock is None
    door = c.listen()
    try:
        assert c.attachment.lock is door.lock
        after = admin.AdminClient({"bootstrap.servers": c.bootstrap})
        # a client attached before the door and one attached after both take turns with it
        _finishes_only_after_release(door.lock, lambda: before.produce("t", b"x"))
        _finishes_only_after_release(door.lock, lambda: after.list_topics(timeout=5))
        # and so does a client's construction (its node joins the kernel the door steps)
        made = []
        _finishes_only_after_release(door.lock, lambda: made.append(
            txnlab.Consumer({"bootstrap.servers": c.bootstrap, "group.id": "g"})))
        assert made[0].list_topics(timeout=5).topics["t"].partitions[0].leader == 0
        # an operator's calls on the lab, too: a note in the trace, a broker's controlled shutdown
        _finishes_only_after_release(door.lock, lambda: c.note("operator", "a note from the notebook"))
        assert all(getattr(getattr(c, name), "__txnlab_locked__", False)
                   for name in ("shutdown", "move_leader", "heal_between", "add_acl", "crash", "restart"))
        assert before.flush(10) == 0
    finally:
        door.close()


@pytest.fixture
def busy_switching():
    """Threads switch every microsecond (CPython's default is 5 ms): a race shows in a second, not once a day."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def test_in_process_calls_never_corrupt_the_kernel_the_door_steps(busy_switching):
    c = _cluster()
    door = c.listen()
    tp = txnlab.TopicPartition("t", 0)
    p = txnlab.Producer({"bootstrap.servers": c.bootstrap})
    try:
        for i in range(3000):
            a = admin.AdminClient({"bootstrap.servers": c.bootstrap})
            assert a.describe_producers([tp])[tp].result(30) is not None
            if i % 50 == 0:
                time.sleep(0.02)           # the door's clock moves: its thread steps the kernel
            if i % 100 == 0:
                p.produce("t", b"%d" % i)
                assert p.flush(30) == 0
        assert door.open and door.error is None
    finally:
        door.close()
    rc = txnlab.Consumer({"bootstrap.servers": c.bootstrap, "group.id": "r", "auto.offset.reset": "earliest"})
    rc.assign([txnlab.TopicPartition("t", 0, 0)])
    assert [int(m.value()) for m in rc.consume(40, 5)] == list(range(0, 3000, 100))


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_door_whose_thread_stops_says_why():
    c = _cluster()
    door = c.listen()

    def broken():
        raise KeyError("what a corrupted kernel would raise")
    door._pump = broken
    door._thread.join(60)
    assert not door.open
    assert isinstance(door.error, KeyError) and "stopped by KeyError" in repr(door)
    assert any("the wire door stopped: KeyError" in str(e.text) for e in c.kernel.trace.events
               if e.kind == "note")
    door.close()
