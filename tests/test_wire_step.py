"""Step mode: a real client's request waits in the simulated network until somebody steps the kernel; the door
says which connection holds which request (only the head of a connection can be answered next)."""
from __future__ import annotations

import threading
import time

from txnlab.wire import presets
from wire_helpers import lab, producer


def step_while(c, door, busy) -> int:
    """Step whenever a real client waits for an answer, until ``busy()`` is over; the number of steps."""
    steps = 0
    while busy():
        if door.pending():
            c.step()
            steps += 1
        else:
            time.sleep(0.005)
    return steps


def test_a_real_clients_request_waits_until_it_is_stepped():
    with lab(mode="step") as (c, door):
        p = producer(door, **{"transactional.id": "stepped", "client.id": "stepper-1",
                              **presets.librdkafka_stepping_producer})
        done = threading.Event()
        worker = threading.Thread(target=lambda: (p.init_transactions(300), done.set()), daemon=True)
        worker.start()
        while not door.pending():
            time.sleep(0.005)
        first = door.pending()[0]
        assert first["api"] == "ApiVersions" and first["head"] and first["client"].startswith("confluent-kafka")
        clock = c.kernel.now
        time.sleep(0.3)                  # nobody steps: nothing happens in the lab, the request still waits
        assert door.pending()[0]["msg_id"] == first["msg_id"] and c.kernel.now == clock and not done.is_set()
        steps = step_while(c, door, lambda: not done.is_set())
        worker.join()
        assert steps > 0 and c.transaction_state("stepped")["state"] == "Empty"
        sent = [e.text for e in c.trace.events if e.kind == "remote" and "stepper-1" in e.text]
        assert any("FindCoordinator" in t for t in sent) and any("InitProducerId" in t for t in sent)


def test_presets_are_settings_librdkafka_accepts():
    from confluent_kafka import Consumer, Producer
    Producer({"transactional.id": "x", **presets.librdkafka_stepping_producer})
    Consumer({"group.id": "g", **presets.librdkafka_stepping_consumer}).close()
