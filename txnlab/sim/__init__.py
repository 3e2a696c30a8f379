"""The old name of the simulation-testing harness: ``python -m txnlab.sim`` still runs ``txnlab.sweep``'s command
line, so replay commands printed before the harness moved keep working.  Code imports ``txnlab.kernel`` (the
deterministic kernel) or ``txnlab.sweep`` (workloads, nemesis, runner, explorer)."""
