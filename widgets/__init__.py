"""The lab's pictures: ipywidgets and plotly views over a txnlab cluster and its trace.

``Stepper`` steps, rewinds and perturbs a scenario (a gallery name from ``txnlab.gallery`` or
a function of a cluster) while ``LogStrip`` (partition logs with LEO/HW/LSO and markers),
``CoordinatorView`` (the transaction state machine, ``__transaction_state``,
``__consumer_offsets``) and ``SpaceTime`` (the message-flow diagram) follow it.  It steps the
comparison labs the same way (``Stepper("rocketmq-end-transaction-lost")``, ``Stepper("2pc-transfer")``):
the message diagram and the trace as for Kafka, plus the lab's own view (``lab_views``: RocketMQ's
half and op topics, two-phase commit's participants and durable logs).  Views only read
the cluster's state and trace; they import ``txnlab``, and nothing in ``txnlab`` imports this
package.  Everything renders offline (plotly's FigureWidget through anywidget, no CDN).
The chapters' own tables and pictures live here too, imported by the notebooks (never pasted into
cells): ``tables`` (trace events and record batches as DataFrames), ``snapshots`` (static figures of
one moment: ``log_snapshot``, ``message_flow``), ``drawn`` (what the live views draw, read back for
check cells) and ``reader`` (what a fresh consumer reads).

    from widgets import Stepper
    s = Stepper("coordinator-dies-after-prepare")
    s.widget            # display it; or drive it from code: s.step(), s.back(), s.jump(40)
"""
from . import _deferred  # noqa: F401  (first: plotly -> nbformat -> jsonschema would compile an unused grammar)
import plotly.basewidget  # noqa: F401  (load the FigureWidget module once, up front: its first load is slow)

from .coordinator_view import CoordinatorView
from .execution import Branch, Execution, Fault, Story
from .history import History, StepFilter
from .log_strip import LogStrip
from .outcome import diff, outcome
from .spacetime import SpaceTime
from .stepper import Stepper

__all__ = ["Stepper", "LogStrip", "CoordinatorView", "SpaceTime", "Fault", "Branch", "Execution", "Story",
           "History", "StepFilter", "outcome", "diff"]
