"""The pictures' side of the benchmarks: how long one Step takes until every view is redrawn.

The standard scenario: 3 brokers, a topic of 6 partitions (RF 3) already holding 5 000 records
written in transactions by two transactional producers, and a read_committed consumer; the
stepped part is two more transactions (one per producer) while the consumer reads.  Each stepper has had
every tab opened once and is back on the first (Partition logs).

* ``step_update_ms_median`` / ``moment_step_ms_median``: one Step (one kernel event / one moment) and then
  every view brought up to the new step -- the log strip, the coordinator view, the space-time diagram, the
  trace -- and the controls, whether on screen or not (what every Step did before a stepper redrew only what
  is on screen).
* ``step_shown_ms_median`` / ``moment_step_shown_ms_median``: the same Step as a learner clicks it on the
  Partition logs tab: the pictures on screen and the controls; the tabs off screen wait until chosen again.

Timed with ``time.perf_counter`` here, never in the engine.
"""
from __future__ import annotations

import statistics
import time

TOPIC = "bench"
PARTITIONS = 6
RECORDS = 5_000
PER_TXN = 250


def _producers(cluster):
    from txnlab import Producer
    return [Producer({"bootstrap.servers": cluster.bootstrap, "client.id": f"txn-{i}",
                      "transactional.id": f"bench-{i}"}) for i in (1, 2)]


def _transaction(p, start: int) -> None:
    p.begin_transaction()
    for i in range(start, start + PER_TXN):
        p.produce(TOPIC, value=b"v%d" % i, partition=i % PARTITIONS)
    p.commit_transaction()


def _setup(cluster) -> None:
    cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)
    producers = _producers(cluster)
    for p in producers:
        p.init_transactions()
    for n in range(RECORDS // PER_TXN):
        _transaction(producers[n % 2], n * PER_TXN)
    cluster.run_until_idle()
    cluster.bench_producers = producers


def _run(cluster) -> dict:
    from txnlab import Consumer, TopicPartition
    reader = Consumer({"bootstrap.servers": cluster.bootstrap, "client.id": "reader", "group.id": "reader",
                       "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    reader.assign([TopicPartition(TOPIC, p, 4_000 // PARTITIONS) for p in range(PARTITIONS)])
    for k, p in enumerate(cluster.bench_producers):
        _transaction(p, RECORDS + k * PER_TXN)
        reader.consume(num_messages=100, timeout=0.5)
    return {}


def scenario():
    from txnlab.gallery import Scenario
    return Scenario("bench-views", "benchmark", "two transactional producers and a reader on 6 partitions",
                    "-", _run, lambda c, r, v: None, setup=_setup)


def _opened(granularity: str):
    """A stepper shown, every tab opened once and the first (Partition logs) chosen again, warmed up."""
    from widgets import Stepper
    s = Stepper(scenario(), granularity=granularity)
    s.widget                                     # shown: the controls and the first tab's picture are built
    for tab in range(len(s._tabs.children)):     # (a stepper builds each tab's picture when it is first opened)
        s._tabs.selected_index = tab
    s._tabs.selected_index = 0
    s.step(20 if granularity == "event" else 2)  # warm up: the figures are built, the branch's moments found
    return s


def _median_step_ms(n: int, granularity: str, every_view: bool) -> float:
    s = _opened(granularity)
    times = []
    for _ in range(n):
        if s.at_end:
            break
        start = time.perf_counter()
        s.step()
        if every_view:
            s._redraw_all()                      # the tabs off screen too, as if each were on screen
        times.append(time.perf_counter() - start)
    s.close()
    return statistics.median(times) * 1000.0


def step_update_ms_median(n: int, granularity: str = "event") -> float:
    """Median wall-clock ms of ``Stepper.step()`` (one event -- or one moment) and then every view brought up to
    that step, on screen or not, over ``n`` steps."""
    return _median_step_ms(n, granularity, every_view=True)


def moment_step_ms_median(n: int) -> float:
    """Median wall-clock ms of one Step at the default granularity (one moment: the kernel events up to the next
    change a picture shows, then every view updated once), over up to ``n`` steps."""
    return step_update_ms_median(n, "moment")


def step_shown_ms_median(n: int, granularity: str = "event") -> float:
    """Median wall-clock ms of ``Stepper.step()`` on the Partition logs tab after every tab was opened once (the
    learner's common case): the event (or moment), the pictures on screen and the controls, over ``n`` steps."""
    return _median_step_ms(n, granularity, every_view=False)


def moment_step_shown_ms_median(n: int) -> float:
    """``step_shown_ms_median`` at the default granularity (one moment per Step)."""
    return step_shown_ms_median(n, "moment")
