"""While a Spark run waits, one line says what it is waiting for, in words, from Spark's own query status."""
from txnlab.spark.status import Status


class FakeQuery:
    def __init__(self, message):
        self.status = {"message": message, "isDataAvailable": False, "isTriggerActive": True}


def test_the_status_line_says_what_spark_is_doing_once_per_change(capsys):
    s = Status("exactly-once run")
    s.show("starting the streaming query")
    for message in ["Initializing sources", "Initializing sources", "Getting offsets from TxnlabStream",
                    "Processing new data", "Something Spark says"]:
        s.spark(FakeQuery(message))
    s.done("done: 2 micro-batch(es)")
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(": ", 1)[1].rsplit(" (", 1)[0] for line in lines] == [
        "starting the streaming query",
        "Spark is starting the query: planning it and connecting to the source",
        "Spark is asking the source for the offsets of the next micro-batch",
        "Spark is running a micro-batch: its tasks read, add up and write",
        "Spark: Something Spark says",
        "done: 2 micro-batch(es)",
    ]
    assert all(line.startswith("exactly-once run: ") for line in lines)


def test_a_disabled_status_says_nothing(capsys):
    s = Status("run", enabled=False)
    s.show("x")
    s.spark(FakeQuery("Processing new data"))
    assert capsys.readouterr().err == ""


def test_in_a_notebook_the_line_is_plain_text_not_a_quoted_string(monkeypatch):
    """The line is displayed as text/plain itself: a Python str displayed as an object would show in quotes."""
    import IPython
    import IPython.display

    shown = []

    class Handle:
        def update(self, obj, raw=False):
            shown.append((obj, raw))

    def display(obj, raw=False, display_id=False):
        shown.append((obj, raw))
        return Handle()

    class Shell:
        kernel = object()
    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell())
    monkeypatch.setattr(IPython.display, "display", display)
    s = Status("waiting for Spark")
    s.show("starting the JVM")
    assert [raw for _, raw in shown] == [True, True]
    assert shown[1][0]["text/plain"].startswith("waiting for Spark: starting the JVM (")
