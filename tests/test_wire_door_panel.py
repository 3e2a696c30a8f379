"""The wire door's panel (widgets/door_panel.py): in step mode it names the connection, client, broker and API
of each request a real client waits for, marks the head of each connection as the one that can be answered
next, and its Step button moves the lab on until the real client's call returns."""
from __future__ import annotations

import threading
import time

from txnlab.wire import presets
from widgets.door_panel import DoorPanel, door_html, panel_for
from wire_helpers import lab, producer


def test_the_panel_shows_which_connection_holds_which_request_and_steps_the_client_through():
    with lab(mode="step") as (c, door):
        panel = DoorPanel(door)
        assert "no real client waits" in panel.html.value and panel_for(c) == panel.html.value
        p = producer(door, **{"transactional.id": "paneled", "client.id": "panel-1",
                              **presets.librdkafka_stepping_producer})
        done = threading.Event()
        worker = threading.Thread(target=lambda: (p.init_transactions(300), done.set()), daemon=True)
        worker.start()
        while not door.pending():
            time.sleep(0.005)
        panel.update()
        row = door.pending()[0]
        text = panel.html.value
        assert f"#{row['connection']}" in text and "ApiVersions" in text and "confluent-kafka" in text
        assert "next: can be answered" in text and row["broker"] in text
        seen = set()
        while not done.is_set():
            if door.pending():
                seen |= {r["api"] for r in door.pending()}
                panel.step()
            else:
                time.sleep(0.005)
        worker.join()
        assert {"ApiVersions", "FindCoordinator", "InitProducerId"} <= seen
        assert c.transaction_state("paneled")["state"] == "Empty"
        panel.update()
        assert "no real client waits" in panel.html.value


def test_a_request_behind_the_head_of_its_connection_is_shown_waiting_for_it():
    class Door:                       # pending() as the door reports two requests on one connection
        mode, bootstrap_servers, open = "step", "127.0.0.1:1", True

        def pending(self):
            base = {"connection": 3, "client": "franz-go consumer c", "node": "c", "broker": "broker-0",
                    "state": "in-flight", "msg_id": 1}
            return [{**base, "api": "Fetch", "correlation_id": 10, "head": True},
                    {**base, "api": "Heartbeat", "correlation_id": 11, "head": False, "state": "reading"}]
    text = door_html(Door())
    assert text.index("Fetch") < text.index("Heartbeat")
    assert "behind correlation id 10" in text and text.count("next: can be answered") == 1


def test_the_stepper_shows_the_door_panel_when_its_cluster_has_a_step_mode_door():
    from widgets.stepper import Stepper
    s = Stepper("commit-visible-atomically", skip_background=True)
    s.step(3)
    assert "Wire door" not in s._status.value
    door = s.cluster.listen(mode="step")
    try:
        s.refresh()
        assert "Wire door" in s._status.value and door.bootstrap_servers in s._status.value
    finally:
        door.close()
    s.refresh()
    assert "Wire door" not in s._status.value
