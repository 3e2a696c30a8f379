"""The front door: the in-kernel cluster served on loopback to other processes (Spark's workers).

``cluster.serve()`` opens it (``server.FrontDoor``) and returns the address a process
outside the kernel uses as ``bootstrap.servers``; the kernel's attachment registry turns
that address into a ``remote.RemoteAttachment`` there (a private kernel whose client nodes
forward their requests through the door).  ``codec`` is the wire format (JSON, no pickle).
"""
from .remote import FrontDoorError, RemoteAttachment, parse_address  # noqa: F401
from .server import FrontDoor, RemoteNode, serve  # noqa: F401

__all__ = ["FrontDoor", "FrontDoorError", "RemoteAttachment", "RemoteNode", "parse_address", "serve"]
