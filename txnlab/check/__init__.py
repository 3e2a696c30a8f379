"""History checker: Jepsen's Kafka anomalies (G1a, lost-write, duplicate, poll-skip, ...) from a history.

    from txnlab.check import History, check
    result = check(history)          # CheckResult: .ok, .violations, .summary(), .explain()

The checker reads only the recorded history of client operations, never the engine.
"""
from .anomalies import KINDS, AnomalyKind, explain, is_allowed
from .checker import Anomaly, CheckResult, check
from .history import FAIL, INFO, OK, History, Op, key_of, topic_of
from .workload_checks import (check_atomic, check_bank, check_copy, check_fencing, check_offsets,
                              final_values)

__all__ = ["History", "Op", "OK", "FAIL", "INFO", "key_of", "topic_of", "check", "CheckResult", "Anomaly",
           "KINDS", "AnomalyKind", "explain", "is_allowed", "check_copy", "check_offsets", "check_bank",
           "check_atomic", "check_fencing", "final_values"]
