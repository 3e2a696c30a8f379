"""The scenario gallery: every scenario runs to its end and ends the way its description says."""
import pytest

from txnlab import Cluster, gallery

CASES = [(name, variant) for name in gallery.names()
         for variant in (list(gallery.load(name).variants) or [None])]

REQUIRED = ["dropped-ack-dedup", "commit-visible-atomically", "abort-hidden-from-read-committed",
            "lso-stuck-by-open-transaction", "zombie-fenced", "coordinator-dies-after-prepare",
            "marker-leader-down", "transaction-timeout-abort", "hanging-transaction-classic-vs-v2",
            "consume-transform-produce"]


def test_the_gallery_has_every_required_scenario_with_words_for_a_person():
    assert set(REQUIRED) <= set(gallery.names())
    for name in gallery.names():
        sc = gallery.load(name)
        assert sc.name == name and sc.title and len(sc.description) > 80 and len(sc.expected) > 40
        assert callable(sc)


@pytest.mark.parametrize("name,variant", CASES, ids=[f"{n}-{v}" if v else n for n, v in CASES])
def test_scenario_runs_to_completion_and_ends_as_expected(name, variant):
    sc = gallery.load(name)
    cluster, result = sc.play(seed=0, variant=variant)
    assert cluster.kernel.idle
    sc.verify(cluster, result, variant)


@pytest.mark.parametrize("name", ["zombie-fenced", "coordinator-dies-after-prepare", "consume-transform-produce"])
def test_scenario_endings_do_not_depend_on_the_seed(name):
    sc = gallery.load(name)
    for seed in (1, 2):
        cluster, result = sc.play(seed=seed)
        sc.verify(cluster, result)


def test_same_seed_same_trace():
    sc = gallery.load("marker-leader-down")
    a, _ = sc.play(seed=3)
    b, _ = sc.play(seed=3)
    assert a.trace.text() == b.trace.text()


def test_a_scenario_is_a_function_of_a_cluster():
    sc = gallery.load("abort-hidden-from-read-committed")
    cluster = Cluster(brokers=3, seed=0, config=gallery.BASE_CONFIG)
    cluster.create_topic("orders", partitions=2, replication_factor=3)
    result = sc(cluster)                      # the client code, on a cluster the caller built
    cluster.run_until_idle()
    sc.verify(cluster, result)


def test_unknown_names_are_explained():
    with pytest.raises(KeyError, match="the gallery has"):
        gallery.load("no-such-story")
    with pytest.raises(KeyError, match="variants"):
        gallery.load("hanging-transaction-classic-vs-v2").make_cluster(variant="v9")


def test_a_failed_ending_says_what_was_expected():
    sc = gallery.load("lso-stuck-by-open-transaction")
    cluster, result = sc.play()
    result["read_committed_while_open"] = ["plain-1"]
    with pytest.raises(gallery.ScenarioCheckFailed, match="cannot read past the LSO"):
        sc.verify(cluster, result)
