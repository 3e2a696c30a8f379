"""How often the garbage collector runs while the simulation runs (``collecting_seldom``, around every run of the
kernel: ``Kernel.run_until``, ``Kernel.run_until_idle``, a sweep's seed)."""
from __future__ import annotations

import gc
from typing import Callable

# While the simulation runs, the garbage collector's young generation is collected every GC_YOUNG_THRESHOLD
# allocations instead of Python's 700: a run makes a few dozen short-lived objects per step and almost no
# reference cycles, and with the trace on every collection of an older generation walks the whole kept trace
# (at 700, collection was a third of the time of 2,000 transactions in a row).
GC_YOUNG_THRESHOLD = 50_000

# When a run returns, the young objects it kept (its trace, its messages) are not collected at the next
# allocation of the caller's code: the caller's threshold is restored *on top of* them (the young generation's
# count plus the caller's threshold), so the caller's own code gets its usual room, and a loop of short calls
# (a transaction each) is collected every GC_YOUNG_THRESHOLD allocations like one long run.  Restoring exactly
# the caller's 700 collected once every three 1-record transactions, each object walked twice: ~4 % of them.
# ``_left``: (the threshold the last run left, the caller's threshold it stands for); ``_running``: a run is on
# (a run inside it -- a sweep's seed's calls -- leaves the thresholds alone).
_left = (-1, 0)
_running = False


def collecting_seldom(run: Callable, *args):
    """``run(*args)`` with the young generation collected every GC_YOUNG_THRESHOLD allocations (unless a run is
    on already, or the caller collects as seldom, or switched automatic collection off with a threshold of 0),
    then the caller's threshold restored on top of the young objects the run kept."""
    global _left, _running
    if _running:
        return run(*args)
    young, older, oldest = gc.get_threshold()
    if young == _left[0]:
        young = _left[1]        # what the last run left stands for the caller's own threshold
    if young == 0 or young >= GC_YOUNG_THRESHOLD:
        return run(*args)
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)
    _running = True
    try:
        return run(*args)
    finally:
        _running = False
        left = gc.get_count()[0] + young
        _left = (left, young)
        gc.set_threshold(left, older, oldest)
