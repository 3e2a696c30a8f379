"""How the admin client's calls run: each is protocol requests on the simulated network, and its answer is a
``concurrent.futures.Future`` as in confluent-kafka.

A call sends its first request at once and returns; later requests (the coordinator's answer, the
leaders' metadata) are sent from the response callbacks, inside the simulation's steps.  Nothing runs the
kernel in the background, so an ``AdminFuture`` drives it itself: ``result(timeout)`` / ``exception(timeout)``
step the kernel (``kernel.run_until``, which under the stepper waits for the person's Step clicks) until the
future is resolved, or ``timeout`` simulated seconds have passed (``concurrent.futures.TimeoutError``).  A
future that is already done answers at once, so ``add_done_callback`` and ``done()`` work as usual.
``concurrent.futures.wait()`` does not drive the kernel: call ``result()`` on each future instead.
"""
from __future__ import annotations

from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from typing import Callable, Optional

from ..errors import KafkaError, KafkaException
from ..protocol import messages as m
from ..protocol.errors import Errors
from .admin_types import BrokerMetadata, ClusterMetadata, PartitionMetadata, TopicMetadata
from .config import dialect_of
from .dialect import LIBRDKAFKA, admin_timeout, seen_as
from .network_client import broker_node

PORT = 9092     # the lab's brokers have no ports; metadata shows Kafka's default one
RETRY_BACKOFF_MS = 100     # librdkafka's retry.backoff.ms
# errors after which a call asks FindCoordinator again and retries (Kafka's admin client does)
COORDINATOR_ERRORS = (Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS)


def host(broker_id: int) -> str:
    return broker_node(broker_id)


def cluster_metadata(node, kernel, topic: Optional[str] = None, dialect: str = LIBRDKAFKA) -> ClusterMetadata:
    """Metadata (one topic, or all), blocking: what every client's ``list_topics`` answers (``dialect``: the
    client's, for the error of a Metadata request that timed out: ``request_error``)."""
    box = {}
    req = m.MetadataRequest(None if topic is None else (topic,))
    node.send_request(node.any_broker(), req, lambda r, e: box.update(r=r, e=e))      # its dialect's timeout
    kernel.run_until(lambda: "r" in box)
    if box["e"] is not None:
        raise KafkaException(request_error(dialect, box["e"]))
    resp = box["r"]
    topics = {}
    for t, (err, parts) in resp.topics.items():
        topics[t] = TopicMetadata(t, {p.partition: PartitionMetadata(
            p.partition, p.leader, p.replicas, p.isr, kafka_error(p.error) if p.error else None) for p in parts},
            kafka_error(err) if err else None)
    return ClusterMetadata(resp.cluster_id or None, resp.controller_id, {b: BrokerMetadata(b, host(b), PORT) for b in resp.brokers},
                           topics)


class AdminFuture(Future):
    """A Future resolved by the simulation; ``result()`` runs the kernel until then."""

    def __init__(self, kernel) -> None:
        super().__init__()
        self._kernel = kernel

    def _drive(self, timeout: Optional[float]) -> None:
        if not self.done():
            self._kernel.run_until(self.done, None if timeout is None or timeout < 0 else int(timeout * 1000))
        if not self.done():
            raise FutureTimeoutError()

    def result(self, timeout: Optional[float] = None):
        self._drive(timeout)
        return super().result(0)

    def exception(self, timeout: Optional[float] = None):
        self._drive(timeout)
        return super().exception(0)

    def resolve(self, value=None, error: Optional[KafkaError] = None) -> None:
        """Set the value, or the KafkaException of ``error``; a second answer is ignored."""
        if self.done():
            return
        if error is not None:
            self.set_exception(KafkaException(error))
        else:
            self.set_result(value)


def kafka_error(code, message: str = "") -> KafkaError:
    err = Errors(code)
    return KafkaError(err, message or err.name)


def request_error(dialect: str, err, api: str = "") -> KafkaError:
    """The error a call reports when its request got no answer (``err``, from the kernel): ``kafka_error``'s, but a
    request the client gave up on (a local timeout, or in flight on the connection closed then) is what its dialect
    says (``dialect.LOCAL_TIMEOUT``: librdkafka's _TIMED_OUT, rd_kafka_admin_handle_response's "worker request
    failed"; Java's TimeoutException, KafkaAdminClient's call past its deadline).  ``api``: named in the text."""
    code = seen_as(dialect, err)
    name = KafkaError(code).name()
    return KafkaError(code, f"{api} failed: {name}" if api else name)


class AdminRequests:
    """The plumbing the admin calls share (mixed into ``AdminClient``): futures, sends with retries, the
    coordinator and leader look-ups.  Callbacks get ``(response, error)``, ``error`` an ``Errors`` or None."""

    def _request_error(self, err, api: str = "") -> KafkaError:
        """``request_error`` in this client's dialect."""
        return request_error(dialect_of(self._config), err, api)

    def _future(self, value=None, error: Optional[KafkaError] = None, done: bool = False) -> AdminFuture:
        f = AdminFuture(self._kernel)
        if done or error is not None:
            f.resolve(value, error)
        return f

    def _deadline(self, kwargs: dict) -> int:
        t = kwargs.get("request_timeout")
        ms = int(t * 1000) if t else admin_timeout(self._config, "request_timeout")
        return self._kernel.now + ms

    def _send(self, dst: str, request, then: Callable) -> None:
        self._node.send_request(dst, request, then)        # its dialect's timeout (dialect.REQUEST_TIMEOUT)

    def _later(self, then: Callable[[], None]) -> None:
        self._node.set_timer(RETRY_BACKOFF_MS, "admin retry backoff", then)

    def _send_any(self, request, then: Callable, deadline: Optional[int] = None) -> None:
        """``request`` to any broker; a broker that cannot be reached is left for another after a backoff (Kafka's
        admin client retries with retry.backoff.ms) until the deadline (the call's request_timeout)."""
        deadline = self._deadline({}) if deadline is None else deadline

        def done(resp, err):
            if err is not None and Errors(err).retriable and self._kernel.now < deadline:
                self._later(lambda: self._send_any(request, then, deadline))
            else:
                then(resp, err)
        self._send(self._node.any_broker(), request, done)

    def _send_to_coordinator(self, key: str, key_type: int, request, error_of: Callable, then: Callable,
                             deadline: int) -> None:
        """FindCoordinator for ``key``, then ``request`` to it; a coordinator error in the answer
        (``error_of(resp)``) or a lost connection starts over after a backoff, until the deadline."""
        def retry_or(err, resp=None) -> None:
            if err is not None and (err in COORDINATOR_ERRORS or Errors(err).retriable) and \
                    self._kernel.now < deadline:
                self._later(lambda: self._send_to_coordinator(key, key_type, request, error_of, then, deadline))
            else:
                then(resp, err)

        def found(node, err):
            if err is not None:
                retry_or(err)
                return
            self._coordinators[(key, key_type)] = node

            def answered(resp, err):
                if err is None and error_of(resp) in COORDINATOR_ERRORS:
                    retry_or(Errors(error_of(resp)), resp)
                elif err is not None:
                    retry_or(err)
                else:
                    then(resp, None)
            self._send(node, request, answered)
        self._node.find_coordinator(key, key_type, found)

    def _with_metadata(self, topics, then: Callable[[], None]) -> None:
        """Refresh the metadata of ``topics`` (leaders, partition counts), then ``then()``."""
        self._node.request_metadata(tuple(topics), then=then)

    def _live_broker_nodes(self, then: Callable) -> None:
        """Metadata (no topics), then ``then(broker node names, error)``."""
        def done(resp, err):
            if err is not None:
                then([], err)
            else:
                then([broker_node(b) for b in sorted(resp.brokers)], None)
        self._send_any(m.MetadataRequest(()), done)
