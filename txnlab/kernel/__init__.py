"""Deterministic simulation kernel: clock, seeded scheduler, network, faults, trace."""
from .kernel import Event, Kernel, NothingCanArrive, SimulationStuck
from .network import FaultRule, Message, Network
from .node import Node
from .trace import Trace, TraceEvent

__all__ = ["Event", "Kernel", "NothingCanArrive", "SimulationStuck", "FaultRule", "Message", "Network", "Node",
           "Trace", "TraceEvent"]
