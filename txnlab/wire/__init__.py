"""Kafka's binary wire protocol at the lab's front door: real clients against the in-kernel cluster.

``cluster.listen()`` (``listener.listen``) opens one loopback listener per broker and returns a ``WireDoor``
(``door.bootstrap_servers``, ``door.pending()``, ``door.close()``; a context manager).  ``codec`` frames
and decodes with kio, ``records`` reads v2 batches header-only, ``apis_*`` translate each API between kio
and the engine's protocol messages, ``presets`` holds client settings for stepping a real client.
"""
from .listener import WireDoor, WireNode, listen  # noqa: F401
