"""Attaching a client to a simulated network: what ``bootstrap.servers`` resolves to.

A real Kafka client knows only its bootstrap addresses; it dials one, and from
then on it learns everything else from protocol responses (ApiVersions,
Metadata, FindCoordinator).  Here the "dialing" is done by this registry: a lab
registers an ``Attachment`` under its bootstrap address, and a client that is
given that address gets the attachment -- the kernel its node lives in, the
broker node names to bootstrap from, and the lab-only client switches -- and
nothing else.  So a client never holds the lab object (``Cluster``); it holds a
node on the network and speaks protocol messages.

Owns: the registry of addresses (``register``, ``lookup``; schemes such as
``txnlab://`` resolved by whoever registered the scheme, i.e. the front door's
remote side with its private kernel), client names (``producer-1``, ...; never a server's, whatever
``client.id`` says), the
principal each client node authenticated as, and the client objects attached.

A door (``txnlab.wire``, ``txnlab.frontdoor``) steps the kernel from a thread of its own, holding its lock.
Once one serves a network (``Attachment.serialize``), every public call of that network's clients, and their
construction (``constructed_in_turn``), holds the same lock: a call from the notebook never runs half-way
through while the door steps (a request queued while the door delivers, two events given one sequence number).
Without a door nothing is wrapped, and a call costs what it did.
"""
from __future__ import annotations

import functools
import inspect
import weakref
from typing import Any, Callable, Optional

from ..protocol.names import looks_like_server

_ADDRESSES: "weakref.WeakValueDictionary[str, Attachment]" = weakref.WeakValueDictionary()
_SCHEMES: dict[str, Callable[[str], "Attachment"]] = {}


class AddressError(ValueError):
    """No network answers at that address (a client turns it into a ConfigException on bootstrap.servers)."""


class Attachment:
    """One simulated network as a client sees it before it has sent anything.

    ``brokers``: the node names a client bootstraps from (what ``bootstrap.servers`` lists).
    ``client_config``: lab-only client keys (``sim.*``) every client attached here takes, e.g. the
    "naive-client-classic" break-it switch as ``{"sim.naive.client": True}``; a client applies the
    keys its own config knows."""

    def __init__(self, address: str, kernel, brokers, client_config: Optional[dict] = None) -> None:
        self.address = address
        self.kernel = kernel
        self.brokers: tuple = tuple(brokers)
        self.client_config: dict = dict(client_config or {})
        self.clients: dict = {}         # node name -> the client object that owns it
        self.principals: dict = {}      # node name -> the principal it authenticated as (SASL)
        self._counts: dict = {}
        self.lock = None                # a door's lock, once a door serves this network (serialize)

    def serialize(self, lock) -> None:
        """A door now steps this network's kernel from its own thread, holding ``lock``: from now on each public
        call of the clients attached here, now and later, holds it too (``take_turns``)."""
        self.lock = lock
        for owner in list(self.clients.values()):
            take_turns(owner, lock)

    def __repr__(self) -> str:
        return f"<Attachment {self.address} brokers={list(self.brokers)}>"

    def next_client_name(self, kind: str) -> str:
        """``producer-1``, ``producer-2``, ``consumer-1``, ...: one counter per kind and network."""
        n = self._counts.get(kind, 0) + 1
        self._counts[kind] = n
        return f"{kind}-{n}"

    def client_node_name(self, kind: str, client_id: Optional[str]) -> str:
        """The node name of a new client: its ``client.id`` if that is a safe name, else ``producer-1``...
        A client's ``client.id`` is only a label: a name that is a server's, or shaped like one
        (``broker-2``, ``controller``), is never given to a client, so no client becomes or passes for one."""
        if not client_id:
            return self.next_client_name(kind)
        if looks_like_server(client_id) or self.kernel.is_server(client_id):
            name = self.next_client_name(kind)
            self.kernel.record("note", name, f"client.id {client_id!r} is only a label: a client never takes a "
                                             f"server's name; its node on the network is {name}")
            return name
        return client_id

    def attach(self, name: str, owner: Any, node_class: Callable, principal: Optional[str] = None):
        """A new node ``node_class(kernel, name, brokers, owner)`` for the client ``owner``.
        A crashed client's name is reused; a live one's gets a suffix (``producer-1-1``); a server's
        node is never replaced, even while it is down."""
        nodes = self.kernel.nodes
        if looks_like_server(name) or self.kernel.is_server(name):
            raise ValueError(f"{name!r} is a server's name: a client node is never given one")
        if name in nodes:
            old = nodes[name]
            if getattr(old, "crashed", False) or not old.alive:
                del nodes[name]
            else:
                name = self.next_client_name(name)
        node = node_class(self.kernel, name, list(self.brokers), owner)
        self.clients[name] = owner
        if self.lock is not None:
            take_turns(owner, self.lock)
        if principal:
            self.principals[name] = principal
        return node

    def principal_of(self, node_name: str) -> str:
        return self.principals.get(node_name, "User:ANONYMOUS")

    def release(self, node) -> None:
        """A client that is done: in a lab's own kernel its node stays for the pictures (nothing to do)."""


def take_turns(owner: Any, lock) -> None:
    """Each public method of ``owner`` (a client), on this instance only, holds ``lock`` while it runs (a
    re-entrant lock: a call within a call, or the kernel's own locked entry points, take it again)."""
    for cls in type(owner).__mro__:
        for name, fn in vars(cls).items():
            if name.startswith("_") or not inspect.isfunction(fn) or name in vars(owner):
                continue
            setattr(owner, name, _holding(lock, getattr(owner, name)))


def _holding(lock, method: Callable) -> Callable:
    @functools.wraps(method)
    def call(*args, **kwargs):
        with lock:
            return method(*args, **kwargs)
    return call


def constructed_in_turn(init: Callable) -> Callable:
    """A client's ``__init__(config, **kwargs)`` (or ``__init__(bootstrap, ...)``), holding the lock of the network
    its ``bootstrap.servers`` names while a door serves it (a local lab's address only: a ``txnlab://`` one has a
    kernel of its own)."""
    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        config = args[0] if args else None
        address = config if isinstance(config, str) else \
            kwargs.get("bootstrap.servers", config.get("bootstrap.servers") if isinstance(config, dict) else None)
        att = _ADDRESSES.get(_key(address)) if isinstance(address, str) and "@" in address else None
        if att is None or att.lock is None:
            return init(self, *args, **kwargs)
        with att.lock:
            return init(self, *args, **kwargs)
    return __init__


def register(address: str, attachment: Attachment) -> None:
    """Make ``address`` (a lab's bootstrap string, ``...@<id>``) resolve to ``attachment``.
    The registry holds it weakly: the lab that registered it keeps it alive."""
    _ADDRESSES[_key(address)] = attachment


def register_scheme(prefix: str, resolver: Callable[[str], Attachment]) -> None:
    """Addresses starting with ``prefix`` (``txnlab://``) resolve through ``resolver(address)``."""
    _SCHEMES[prefix] = resolver


def _key(address: str) -> str:
    return address.strip().rsplit("@", 1)[1]


def lookup(address: Any) -> Attachment:
    """The attachment ``bootstrap.servers`` names (AddressError, saying why, if none answers)."""
    if isinstance(address, str):
        for prefix, resolver in _SCHEMES.items():
            if address.strip().startswith(prefix):
                return resolver(address)
    if not isinstance(address, str) or "@" not in address:
        raise AddressError(f"must be a cluster's bootstrap string (cluster.bootstrap), got {address!r}")
    att = _ADDRESSES.get(_key(address))
    if att is None:
        raise AddressError(f"no running cluster answers at {address!r}")
    return att
