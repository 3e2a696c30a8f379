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
