"""The stepper, headless: buttons, keys, sliders and faults change the position, the narration and
the pictures as a person would see them; going back is exact; faults fork branches whose endings
differ as the scenario says; client code stepped live behaves as when it runs plainly."""
import pytest

from txnlab import Cluster, Consumer, Producer, TopicPartition, gallery
from widgets import Stepper
from widgets.execution import Branch, Execution, Story

EVENTS = ("deliver", "timer", "drop")


def xs(trace) -> tuple:
    return () if trace.x is None else tuple(float(x) if x is not None else None for x in trace.x)


def kernel_events(entries):
    return [e for e in entries if e.kind in EVENTS]


@pytest.fixture(scope="module")
def commit():
    s = Stepper("commit-visible-atomically", granularity="event")
    yield s
    s.close()


def snapshot(s: Stepper) -> dict:
    c = s.cluster
    return {"position": s.position, "clock": c.now, "trace": c.trace.text(),
            "partitions": [c.partition_state("orders", p) for p in (0, 1)],
            "in_flight": [(m.id, m.api, m.src, m.dst, m.deliver_at) for m in c.in_flight()],
            "txn": c.transaction_state("tx-orders"), "narration": s.narration,
            "strip": [xs(tr) for tr in s.log_strip.figure.data]}


# ---------------------------------------------------------------- buttons and sliders
def test_step_button_executes_exactly_one_kernel_event(commit):
    commit.reset()
    for i in range(1, 6):
        before = commit.execution.kernel.step_count
        commit._btn_step.click()
        assert commit.position == i
        assert len(kernel_events(commit.entries())) == 1
        assert commit.execution.kernel.step_count == before + 1
        assert commit._slider.value == i and commit._play.value == i


def test_step_back_and_jump_change_position_narration_and_figures(commit):
    commit.reset()
    seen = [commit.narration]
    for _ in range(3):
        commit._btn_step.click()
        seen.append(commit.narration)
    assert commit.position == 3 and len(set(seen[1:])) == 3
    commit._btn_back.click()
    assert commit.position == 2 and commit.narration == seen[2]
    assert "step 2 of" in commit._narr.value
    commit._slider.value = 120                                # the slider jumps
    assert commit.position == 120
    strip_at_120 = [xs(tr) for tr in commit.log_strip.figure.data]
    commit._btn_reset.click()
    assert commit.position == 0 and commit._btn_back.disabled
    assert [xs(tr) for tr in commit.log_strip.figure.data] != strip_at_120


def test_step_to_5_then_8_then_back_to_5_is_the_same_state(commit):
    commit.jump(5)
    first = snapshot(commit)
    commit.jump(8)
    assert snapshot(commit)["position"] == 8
    commit.back(3)
    assert snapshot(commit) == first


def test_keys_and_run_widget_step_too(commit):
    commit.reset()
    commit._keys.press("ArrowRight")
    commit._keys.press("ArrowRight")
    assert commit.position == 2
    commit._keys.press("ArrowLeft")
    assert commit.position == 1
    commit._play.value = 2                                   # what Run does at each tick
    assert commit.position == 2
    commit._speed.value = 20
    assert commit._play.interval == 50
    commit._keys.press("Home")
    assert commit.position == 0


def test_hw_and_lso_lines_move_when_the_commit_markers_are_written(commit):
    commit.reset()
    assert commit.step_until("sending COMMIT markers")
    strip = commit.log_strip
    row = strip._shape.index(("orders", 0, commit.cluster.leader("orders", 0)))
    hw0, lso0 = strip.line_positions("HW")[row], strip.line_positions("LSO")[row]
    assert (hw0, lso0) == (2, 0)                            # replicated, but the transaction is open
    commit.step_until(lambda s: s.cluster.log("orders", 0).last_stable_offset == 3)
    assert strip.line_positions("HW")[row] == 3 and strip.line_positions("LSO")[row] == 3
    # the marker's cell says COMMIT, in words (wide cells: no glyph on top of the word), and its hover says what it is
    bars = strip.trace_named("orders-0")
    cell = [i for i, (x, y) in enumerate(zip(bars.base, bars.y)) if x == 2 and y == row]     # offset 2, the leader
    assert cell and bars.text[cell[0]] == "COMMIT" and "COMMIT" in bars.hovertext[cell[0]]
    assert len(strip.trace_named("COMMIT marker").x) == 0


def test_filter_by_api_stops_only_at_matching_steps():
    s = Stepper("commit-visible-atomically", granularity="event")
    s._f_api.value = "EndTxn"
    s._btn_step.click()
    assert any(e.api == "EndTxn" for e in s.entries())
    first = s.position
    s._btn_step.click()
    assert any(e.api == "EndTxn" for e in s.entries()) and s.position > first
    s._btn_back.click()
    assert s.position == first
    assert all(e.api == "EndTxn" for e in s._recent(10))
    s._f_api.value = ""
    s._f_tid.value = "tx-orders"
    s._btn_step.click()
    assert any(e.api in ("InitProducerId", "AddPartitionsToTxn", "EndTxn", "Produce", "WriteTxnMarkers",
                         "FindCoordinator", "Metadata", "ApiVersions") or "tx-orders" in e.narration
               or "producer" in (e.node, e.src, e.dst) for e in s.entries())
    s._f_tid.value = ""
    s._f_node.value = "broker-2"
    s._btn_step.click()
    assert any("broker-2" in (e.node, e.src, e.dst) for e in s.entries())
    s._f_node.value = ""
    s._f_bg.value = True
    s.reset()
    s.step(10)
    assert all(not e.background for e in s.entries() if e.kind in EVENTS)
    s.close()


# ------------------------------------------------------------------ live client code
def test_stop_inside_commit_transaction_crash_the_coordinator_and_the_new_one_finishes():
    s = Stepper("commit-visible-atomically", skip_background=True)
    assert s.step_until("is now PrepareCommit")
    producer = s.cluster.clients["producer"]
    assert producer.transaction_manager.state.name == "COMMITTING_TRANSACTION"   # inside commit_transaction()
    assert not s.execution.done
    old = s.cluster.transaction_coordinator("tx-orders")
    branch = s.crash(old)
    assert s.branch == branch and "main" in s.branches
    s.run_to_end()
    assert s.cluster.transaction_coordinator("tx-orders") not in (old, -1)
    assert s.cluster.transaction_state("tx-orders")["state"] == "CompleteCommit"
    assert s.execution.error is None
    assert s.result["read_committed_after_commit"] == ["order-0", "order-1", "order-2", "order-3"]
    d = s.compare("main", branch)
    for tp in ("orders-0", "orders-1"):       # the same records are committed in both branches
        assert "read_committed" not in d["partitions"].get(tp, {})
    s.close()


def test_crashing_the_producer_before_its_commit_forks_a_branch_where_nothing_is_visible():
    s = Stepper("commit-visible-atomically", granularity="event")
    assert s.step_until("calls commit_transaction()")
    branch = s.crash("producer")
    s.run_to_end()
    assert s.execution.error is not None                     # the client code saw its process crash
    d = s.compare("main", branch)
    main, crashed = s.outcome("main"), s.outcome(branch)
    assert sorted(v for _, v in main["partitions"]["orders-0"]["read_committed"]) == ["order-0", "order-2"]
    assert crashed["partitions"]["orders-0"]["read_committed"] == []          # LSO stuck at 0
    assert crashed["partitions"]["orders-0"]["lso"] == 0 < crashed["partitions"]["orders-0"]["hw"]
    assert d["partitions"]["orders-0"]["read_committed"]["only_in_a"] == ["order-0", "order-2"]
    assert not d["same"] and "order-0" in s.compare_html("main", branch)
    s.switch("main")                                        # the first branch is kept as it was
    s.run_to_end()
    assert s.branch == "main" and s.cluster.transaction_state("tx-orders")["state"] == "CompleteCommit"
    s.close()


def test_drop_a_chosen_in_flight_message_from_the_fault_panel():
    s = Stepper("dropped-ack-dedup", skip_background=True)
    s.step_until(lambda s: any(m.api == "Produce" and not m.is_response for m in s.in_flight()))
    produce = next(m for m in s.in_flight() if m.api == "Produce" and not m.is_response)
    s.messages._clicked_message(None, type("P", (), {"point_inds": [s.messages._flight_ids.index(produce.id)]})())
    assert s._fault_msg.value == produce.id
    s._btn_drop.click()
    assert s.branch != "main" and s.cluster.kernel.network.messages[produce.id].state == "dropped"
    s.run_to_end()
    assert s.execution.error is None                         # the producers retried: every record once
    gallery.load("dropped-ack-dedup").verify(s.cluster, s.result)
    s.close()


def test_duplicate_a_chosen_produce_request_and_the_broker_deduplicates_it():
    s = Stepper("dropped-ack-dedup", skip_background=True)
    s.step_until(lambda s: any(m.api == "Produce" and m.src == "idempotent-producer" for m in s.in_flight()))
    produce = next(m for m in s.in_flight() if m.api == "Produce" and m.src == "idempotent-producer")
    s._fault_msg.value = produce.id
    s._btn_dup.click()
    assert "answer will be lost" in produce.note
    s.run_to_end()
    sent = [m for m in s.cluster.network_messages()
            if m.api == "Produce" and not m.is_response and m.src == "idempotent-producer"]
    assert sent[0].id == produce.id and any(m.conn is not produce.conn for m in sent[1:])   # sent again, reconnected
    assert [v for _, v in s.outcome()["partitions"]["orders-0"]["read_uncommitted"]] == ["a", "b", "c"]
    s.close()


def test_clicking_a_broker_lane_picks_it_and_crash_restart_buttons_apply():
    s = Stepper("commit-visible-atomically", skip_background=True)
    s.step(3)
    lanes = s.messages._lane_names
    s.messages._clicked_lane(None, type("P", (), {"point_inds": [lanes.index("broker-2")]})())
    assert s._fault_node.value == "broker-2"
    s._btn_crash.click()
    assert not s.cluster.broker(2).alive and s.branch == "b1"
    s.step(2)
    s._fault_node.value = "broker-2"
    s._btn_restart.click()
    assert s.cluster.broker(2).alive and s.branch == "b2"
    assert s.history.branches["b2"].faults[0][1].kind == "crash"
    s._btn_restart.click()                                   # already running: refused, no branch
    assert "not applied" in s.notice and s.branch == "b2"
    s.close()


# --------------------------------------------------------------- determinism, deadlines
@pytest.mark.parametrize("name", ["transaction-timeout-abort", "consume-transform-produce"])
def test_a_stepped_run_produces_the_same_trace_as_a_plain_run(name):
    sc = gallery.load(name)
    cluster, _ = sc.play()
    ex = Execution(Story.of(name), Branch("main"))
    ex.run_to_end()
    stepped = [line for line in ex.kernel.trace.text().splitlines() if "scenario's client code" not in line]
    assert stepped == cluster.trace.text().splitlines()
    sc.verify(ex.cluster, ex.result)


def test_timeouts_of_blocking_calls_move_the_clock_to_their_deadline_under_the_stepper():
    def story(cluster):
        cluster.create_topic("t", partitions=1, replication_factor=3)
        c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
        c.assign([TopicPartition("t", 0)])
        c.poll(0.5)
        t0 = cluster.now
        got = c.poll(2.0)
        waited = cluster.now - t0
        p = Producer({"bootstrap.servers": cluster.bootstrap})
        p.produce("t", value=b"x")
        left = p.flush(10)
        return {"got": got, "waited_ms": waited, "left": left}

    plain = story(Cluster(brokers=3, seed=0))
    s = Stepper(story, granularity="event")
    assert s.position == 0 and any("create topic t" in e.text for e in s.entries())
    assert not s.cluster.kernel.idle                         # create_topic's work is stepped too
    s.run_to_end()
    assert s.result == plain == {"got": None, "waited_ms": 2000, "left": 0}
    s.close()


def test_back_re_executes_the_branch_with_its_faults():
    s = Stepper("commit-visible-atomically", skip_background=True)
    s.step(12)
    s.pause("producer", 3000)
    s.step(5)
    at = s.position
    state = snapshot(s)
    s.back(3)
    s.jump(at)
    assert snapshot(s) == state
    s.close()


# ---------------------------------------------------------------------- the pictures
def test_coordinator_view_shows_each_transactional_id_and_the_internal_logs():
    s = Stepper("consume-transform-produce", skip_background=True)
    view = s.coordinators
    s.step_until(lambda s: any(r["status"] == "pending transaction" for b in s.cluster.brokers
                               if s.cluster.broker(b).alive
                               for r in s.cluster.broker(b).group_coordinator.offsets_view()))
    assert "pending transaction" in view.offsets_html.value
    s.step_until(lambda s: (s.cluster.transaction_state("copier-0") or {}).get("pending_state") == "PrepareCommit")
    assert "copier-0" in view.ids_html.value and "PrepareCommit" in view.ids_html.value
    ids = view.figure.data[view._n_edges + 2]
    assert ids.text and ids.text[0].startswith("copier-0")
    pending = view.figure.data[view._n_edges + 1]
    assert pending.x                                          # Ongoing -> PrepareCommit being written
    assert "Ongoing" in view.txn_log_html.value and "not yet" in view.txn_log_html.value
    s.run_to_end()
    assert "CompleteCommit" in view.ids_html.value and "committed" in view.offsets_html.value
    last = view.figure.data[view._n_edges]
    assert last.x                                             # the last transition is highlighted
    s.close()


def test_space_time_diagram_draws_the_current_step_and_in_flight_messages(commit):
    commit.reset()
    commit.step_until(lambda s: any(e.kind == "deliver" and not e.background for e in s.entries()))
    st = commit.messages
    assert st.figure.data[list(st.figure.data).index(next(t for t in st.figure.data if t.name == "this step"))].x
    ids = [m.id for m in commit.in_flight() if not m.background]
    assert all(i in st._flight_ids for i in ids)
    assert set(st._lane_names) >= {"producer", "broker-0", "broker-1", "broker-2", "reader-committed"}


def test_log_strip_stays_readable_at_ten_thousand_offsets():
    from widgets import LogStrip
    c = Cluster(brokers=3, seed=1)
    c.create_topic("big", partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": c.bootstrap, "linger.ms": 50, "batch.num.messages": 5})
    for i in range(12_000):
        p.produce("big", value=b"v%d" % i, partition=0)
    assert p.flush() == 0
    c.run_until_idle()
    strip = LogStrip(c, max_cells=200)
    bars = strip.trace_named("big-0")
    assert c.log("big", 0).log_end_offset == 12_000
    assert 0 < len(bars.x) <= 3 * 200                        # buckets, not 36 000 cells
    assert "batch(es)" in bars.hovertext[0]
    strip.zoom(5000, 5100)                                   # zoomed in: one cell per offset
    bars = strip.trace_named("big-0")
    assert len(bars.x) == 3 * 100 and set(bars.x) == {1.0}
    assert "producer id" in bars.hovertext[0] and "sequence" in bars.hovertext[0]
    strip.zoom()
    assert len(strip.trace_named("big-0").x) <= 3 * 200


def test_the_pictures_only_read_a_run_stepped_with_every_view_redrawn_is_the_plain_run():
    sc = gallery.load("abort-hidden-from-read-committed")
    plain, _ = sc.play()
    s = Stepper(sc, granularity="event")
    while not s.at_end:
        s._btn_step.click()                                   # every view redrawn after every event
    stepped = [line for line in s.cluster.trace.text().splitlines() if "scenario's client code" not in line]
    assert stepped == plain.trace.text().splitlines()
    s.close()


def test_isolating_a_broker_and_healing_the_network_are_branches_too():
    s = Stepper("commit-visible-atomically", skip_background=True)
    s.step_until("calls commit_transaction()")
    coordinator = f"broker-{s.cluster.transaction_coordinator('tx-orders')}"
    s._fault_node.value = coordinator
    s._btn_isolate.click()
    assert s.cluster.kernel.network.is_cut(coordinator, "producer")
    s.step(20)
    s._btn_heal.click()
    assert not s.cluster.kernel.network.is_cut(coordinator, "producer")
    assert [f.kind for _, f in s.history.branches[s.branch].faults] == ["isolate", "heal"]
    s.run_to_end()
    assert s.cluster.transaction_state("tx-orders")["state"] == "CompleteCommit"
    s.close()


def test_a_variant_is_a_branch_too_classic_hangs_where_v2_does_not():
    s = Stepper("hanging-transaction-classic-vs-v2", granularity="event")
    assert s.history.branches["main"].variant == "classic"
    v2 = s.variant("v2")
    assert s.branch == v2 and s.position == 0
    d = s.compare("main", v2)
    rc = d["partitions"]["orders-0"]["read_committed"]
    assert rc["only_in_b"] == ["after-1"] and rc["only_in_a"] == []      # classic: LSO stuck below it
    assert s.outcome("main")["partitions"]["orders-0"]["lso"] < s.outcome("main")["partitions"]["orders-0"]["hw"]
    s.close()


def test_moving_a_partition_leader_mid_transaction_is_a_branch_and_the_commit_still_lands():
    s = Stepper("commit-visible-atomically", skip_background=True)
    s.step_until("calls commit_transaction()")
    c = s.cluster
    tp = next(tp for tp in sorted(c.controller.states) if not tp[0].startswith("__"))
    old = c.leader(*tp)
    new = next(b for b in c.partition_state(*tp)["isr"] if b != old)
    s._lead_tp.value = tp                                  # the Faults menu: partition, broker, button
    s._fault_node.value = f"broker-{new}"
    s._btn_lead.click()
    assert c.partition_state(*tp)["leader"] == new
    [(at, fault)] = s.history.branches[s.branch].faults
    assert fault.kind == "move-leader" and fault.describe() == f"move the leadership of {tp[0]}-{tp[1]} to broker-{new}"
    s.run_to_end()
    assert c.transaction_state("tx-orders")["state"] == "CompleteCommit"
    st = c.partition_state(*tp)
    assert st["leader"] == new and st["lso"] == st["hw"]         # the COMMIT marker reached the new leader
    with pytest.raises(ValueError, match="already leads"):
        s.move_leader(tp[0], tp[1], new)
    replay = Stepper("commit-visible-atomically", skip_background=True)
    replay.step_until("calls commit_transaction()")
    replay.move_leader(tp[0], tp[1], new)
    replay.run_to_end()
    assert replay.cluster.trace.text() == c.trace.text()         # same seed, same fault, same step: same run
    s.close()
    replay.close()


def test_a_cell_shows_as_much_of_its_value_as_its_width_holds():
    """Two offsets in view: a cell is ~300 px, and a 20-character value shows whole; forty offsets: a cell is ~15 px
    and the value is cut to the 8 characters every cell keeps, with "…"."""
    from widgets import LogStrip
    c = Cluster(brokers=1, seed=1)
    c.create_topic("t", partitions=1, replication_factor=1)
    p = Producer({"bootstrap.servers": c.bootstrap})
    for i in range(40):
        p.produce("t", value=b"order-%02d-line-item-7" % i, partition=0)
    assert p.flush() == 0
    c.run_until_idle()
    strip = LogStrip(c)
    strip.zoom(0, 2)
    assert list(strip.trace_named("t-0").text) == ["order-00-line-item-7", "order-01-line-item-7"]
    strip.zoom(0, 40)
    assert set(len(t) for t in strip.trace_named("t-0").text) == {8} and strip.trace_named("t-0").text[0] == "order-0…"
