"""The front door: the in-kernel cluster served on loopback to other processes (Spark's workers).

``cluster.serve()`` opens it (``server.FrontDoor``) and returns the address a process
outside the kernel uses as ``bootstrap.servers``; ``Cluster.lookup`` turns that address
into a ``remote.RemoteCluster`` there.  ``codec`` is the wire format (JSON, no pickle).
"""
from .remote import FrontDoorError, RemoteCluster, parse_address  # noqa: F401
from .server import FrontDoor, RemoteNode, serve  # noqa: F401

__all__ = ["FrontDoor", "FrontDoorError", "RemoteCluster", "RemoteNode", "parse_address", "serve"]
