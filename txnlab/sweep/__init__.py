"""The simulation-testing harness: seeded workloads against a cluster under a nemesis, checked by invariants.

Stands above the cluster, the clients and the checker (it imports them; nothing below imports it).
``workloads`` (client processes as generators), ``runtime`` (interleaves them), ``nemesis`` (fault plans),
``invariants`` (per-step and end checks), ``runner`` (``run_seed``, ``replay``, ``minimize_failure``),
``explore`` (systematic choice of the next delivery) and the command line ``python -m txnlab.sweep``.
"""
