"""UnifiedLog.last_stable_offset is a field (kept for speed), set whenever the HW or the first unstable offset
changes: at every step of faulted copier runs (crashes, restarts, truncations, aborts) it must equal the rule
it replaces (the first unstable offset if it is below the HW, else the HW)."""
from txnlab.sweep.runner import RunConfig, build_cluster, drive, schedule_for


def _rule(log) -> int:
    fuo, hw = log.first_unstable_offset, log.high_watermark
    return fuo if fuo is not None and fuo < hw else hw


def test_the_lso_field_follows_the_rule_at_every_step_of_faulted_runs():
    checked = 0
    for seed in (0, 1, 2):
        cfg = RunConfig(workload="copier", faults="all", records=200)
        cluster = build_cluster(seed, cfg)
        wrong = []

        def observe(tev, cluster=cluster, wrong=wrong):
            nonlocal checked
            for b in cluster.brokers:
                for p in cluster.broker(b).partitions.values():
                    checked += 1
                    if p.log.last_stable_offset != _rule(p.log):
                        wrong.append((seed, tev.step, p.log.topic_partition))
        cluster.kernel.observers.append(observe)
        res = drive(cluster, seed, cfg, schedule_for(seed, cfg))
        assert res.steps > 0 and not wrong, wrong[:5]
    assert checked > 10_000
