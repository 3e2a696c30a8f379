"""Each break-it switch turns off one safety mechanism, and the sweep catches it within 200 seeds.

For every mutation the matching workload and fault set run seed after seed until the checker reports a
violation; the test asserts it came within 200 seeds and names the anomaly a learner should see.
"""
import multiprocessing as mp

import pytest

from txnlab import MUTATIONS, Cluster
from txnlab.sweep.runner import RunConfig, run_seed

# mutation -> (workload, fault set, anomalies that show it)
MATCH = {
    "no-dedup": ("copier", "network", {"duplicate", "inconsistent-offsets"}),
    "no-fencing": ("copier", "clients", {"G1a", "duplicate", "inconsistent-offsets", "zombie-commit", "lost-write"}),
    "ignore-lso": ("copier", "none", {"G1a"}),
    "no-marker-retry": ("copier", "brokers", {"hanging-transaction", "stuck", "lost-write", "unseen", "G1a"}),
    "offsets-outside-txn": ("copier", "none", {"lost-write", "offsets-outputs-mismatch", "duplicate"}),
    "no-coordinator-reload": ("copier", "brokers", {"hanging-transaction", "stuck"}),
    "unclean-election": ("copier", "brokers", {"lost-write", "inconsistent-offsets", "unseen"}),
    "naive-client-classic": ("copier", "network", {"G1a", "hanging-transaction", "duplicate", "stuck"}),
    # issue 18: bugs the sweep could not see before; each is caught by a step invariant or the history checker
    "lso-ignores-hw": ("mixed", "all", {"read-above-hw", "read-above-lso"}),
    "no-txn-generation-check": ("group-rebalance", "all", {"kip447-fencing", "duplicate"}),
    "aborted-index-from-fetch-offset": ("mixed", "all", {"G1a"}),
    "offset-fetch-unstable": ("copier", "all", {"require-stable"}),
}


def _run(args):
    seed, cfg = args
    r = run_seed(seed, cfg)
    return seed, r.violations


def first_failure(cfg: RunConfig, limit: int = 200):
    """The first seed (of ``limit``) whose run shows a violation, with its violations."""
    with mp.get_context("fork").Pool(2) as pool:
        for seed, violations in pool.imap(_run, [(s, cfg) for s in range(limit)], chunksize=1):
            if violations:
                pool.terminate()
                return seed, violations
    return None, []


def test_every_listed_mutation_has_a_matching_workload():
    assert set(MATCH) == set(MUTATIONS)


@pytest.mark.parametrize("mutation", sorted(MATCH))
def test_the_sweep_catches_the_mutation_within_200_seeds(mutation):
    workload, faults, expected = MATCH[mutation]
    seed, violations = first_failure(RunConfig(workload=workload, faults=faults, mutation=mutation, records=20))
    assert seed is not None, f"{mutation} was not caught in 200 seeds of {workload} with {faults} faults"
    print(f"\n{mutation}: caught at seed {seed} ({workload}, faults {faults}): {violations}")
    assert set(violations) & expected, violations


def test_mutations_are_settable_on_a_cluster_and_checked():
    c = Cluster(brokers=1, mutations=("no-dedup", "naive-client-classic"))
    assert {"no-dedup", "naive-client-classic"} <= c.mutations
    assert c.broker_config["transaction.version"] == 0
    assert c.broker_config["transaction.partition.verification.enable"] is False
    with pytest.raises(Exception, match="unknown mutation"):
        Cluster(brokers=1, mutations=("no-such-thing",))
