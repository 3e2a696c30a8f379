"""What a run that cannot get where it waits for raises (``Kernel.run_until`` / ``run_until_idle``)."""
from __future__ import annotations

try:
    from mypy_extensions import mypyc_attr
except ImportError:         # the lab does not need it (see txnlab/_mypyc.py)
    from .._mypyc import mypyc_attr  # type: ignore[assignment]


@mypyc_attr(native_class=False)
class SimulationStuck(RuntimeError):
    """run_until_idle() took more steps than allowed, or events loop at one instant without the clock moving."""


@mypyc_attr(native_class=False)
class NothingCanArrive(SimulationStuck):
    """A wait without a deadline while the simulation can no longer change anything: for ``QUIET_MS`` of
    simulated time only background timers (heartbeats, parked fetches, reapers) ran, and nothing else runs
    while a call blocks (the notebook's other code waits for it).  Clients turn it into a KafkaException."""
