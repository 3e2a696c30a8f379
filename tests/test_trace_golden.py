"""Moving code must not change what happens: every gallery scenario (each variant) and 200 sweep seeds
write the same trace as when ``tests/golden/traces.json`` was recorded (``python tests/golden/trace_digests.py``).
A change that alters the engine's behaviour on purpose re-records the file in the same commit."""
import json
from pathlib import Path

import pytest

from golden.trace_digests import SWEEP_SEEDS, scenario_digests, sweep_case, sweep_digest

RECORDED = json.loads((Path(__file__).parent / "golden" / "traces.json").read_text())


def test_every_gallery_scenario_writes_the_recorded_trace():
    assert scenario_digests() == RECORDED["scenarios"]


@pytest.mark.parametrize("chunk", range(4))
def test_sweep_seeds_write_the_recorded_traces(chunk):
    seeds = [s for s in SWEEP_SEEDS if s % 4 == chunk]
    got = {f"{sweep_case(s)[0]}/{s}": sweep_digest(s) for s in seeds}
    assert got == {k: RECORDED["sweep"][k] for k in got}
