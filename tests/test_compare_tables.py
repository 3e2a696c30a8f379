"""The compare table of two branches reads as a table on a projector: every cell is plain words and values,
never a Python dict or list as the interpreter prints it."""
import re
from html.parser import HTMLParser

from widgets import Stepper
from widgets.outcome import readable

RAW = re.compile(r"[{\[]\s*['\"(]|['\"]\s*:\s|[}\]]$|^[{\[]|\(\s*['\"]")


class Cells(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self._cell = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(self._cell.strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def cells(page: str) -> list[list[str]]:
    parser = Cells()
    parser.feed(page)
    return parser.rows


def no_raw_repr(rows):
    bad = [c for row in rows for c in row if RAW.search(c)]
    assert not bad, f"cells that show a Python repr: {bad}"


def crash_and_compare(scenario: str, until: str, process: str, **kw) -> list[list[str]]:
    """Step ``scenario`` until ``until``, crash ``process`` (a branch), run it to its end and read the compare table
    of main and that branch, checking that no cell shows a Python repr."""
    s = Stepper(scenario, **kw)
    try:
        assert s.step_until(until)
        branch = s.crash(process)
        s.run_to_end()
        rows = cells(s.compare_html("main", branch))
    finally:
        s.close()
    no_raw_repr(rows)
    return rows


def test_a_crashed_producer_branch_compares_in_plain_rows():
    rows = crash_and_compare("commit-visible-atomically", "calls commit_transaction()", "producer", granularity="event")
    by_what = {(r[0], r[1]): r[2:] for r in rows[1:]}
    # the coordinator's state reads as words; main committed, the crashed branch did not
    assert by_what[("tx-orders", "coordinator state")][0] == "CompleteCommit, producer id 1000, epoch 0"
    assert not by_what[("tx-orders", "coordinator state")][1].startswith("CompleteCommit")
    # what the client code returned, one row per fact, lists as comma-separated values
    returned = by_what[("client code", "returned read_committed after commit")]
    assert returned[0] == "order-0, order-1, order-2, order-3"
    sees = ("orders-0", "records only this branch's read_committed consumer sees")
    assert by_what[sees][0] == "order-0, order-2" and by_what[sees][1] == "–"
    assert rows[0][:4] == ["where", "what", "main", "b1"]


def test_another_designs_lab_compares_its_facts_in_plain_rows():
    rows = crash_and_compare("rocketmq-end-transaction-lost", "the half message is stored", "producer-1",
                             skip_background=True)
    assert any(r[:1] == ["order-topic"] and "o-1" in " ".join(r) for r in rows)


def test_readable_never_prints_a_repr():
    assert readable({"state": "Ongoing", "producer_id": 7, "producer_epoch": 2}) == "Ongoing, producer id 7, epoch 2"
    assert readable(["a", "b"]) == "a, b" and readable([]) == "none" and readable(None) == "–"
    assert readable({"read_committed_after": ["x"], "count": 2}) == "read_committed after: x; count: 2"
    assert not RAW.search(readable({"nested": {"k": [1, 2]}, "t": ("a", 1)}))
