"""The lab's pictures: ipywidgets and plotly views over a txnlab cluster and its trace.

Partition log strips, the coordinator view, the message-flow diagram and the stepper will live
here. Views only read the cluster's state and trace and draw them; they import ``txnlab``, and
nothing in ``txnlab`` imports this package. Nothing is imported yet.
"""
