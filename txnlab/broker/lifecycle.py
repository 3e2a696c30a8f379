"""A broker's side of its registration and heartbeats (Kafka's ``BrokerLifecycleManager``).

One communication with the controller at a time (``communicationInFlight``): the next registration or heartbeat
is sent only once the previous one was answered or timed out; a communication due while one is in flight is sent
as soon as that one ends (``nextSchedulingShouldBeImmediate``).  A registration starts the broker FENCED: it
heartbeats with ``WantFence`` until the controller answers ``IsCaughtUp`` (its metadata has reached the offset of
its registration record); then, its logs recovered and its first metadata published (BrokerServer's startup), it
is ready to be unfenced and asks for it.  The answer ``IsFenced`` false makes it RUNNING, and only then does it
accept clients (BrokerServer enables its listeners once the broker is unfenced).

Shutting down (BrokerServer.shutdown): with ``controlled.shutdown.enable`` a RUNNING broker enters
PENDING_CONTROLLED_SHUTDOWN and heartbeats at once with ``WantShutDown``; the controller moves its leaderships
away and answers ``ShouldShutDown`` once it leads nothing and every active broker has caught up with that change.
Then it exits cleanly.  It waits at most five minutes (``KafkaBroker.shutdown()``), and a broker that is not
RUNNING, or has controlled shutdown off, exits at once.
"""
from __future__ import annotations

from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.names import CONTROLLER

STARTING, RECOVERY, RUNNING = "STARTING", "RECOVERY", "RUNNING"     # Kafka's BrokerState (those the lab has)
PENDING_CONTROLLED_SHUTDOWN, SHUTTING_DOWN = "PENDING_CONTROLLED_SHUTDOWN", "SHUTTING_DOWN"
SHUTDOWN_TIMEOUT_MS = 300_000       # KafkaBroker.shutdown(): shutdown(Duration.ofMinutes(5))


class LifecycleState:
    """What BrokerLifecycleManager keeps (the broker's own ``broker_epoch``, ``registered`` and ``running`` stay on
    the broker, which others read).  One object, not seven attributes of the broker: an instance with more than 30
    attributes loses CPython's compact attribute storage, and every broker attribute read got slower (+2.3 % of the
    instructions of a 1-record transaction)."""
    __slots__ = ("state", "ready_to_unfence", "metadata_offset", "in_flight", "next_immediate", "failed_attempts",
                 "communication", "shutdown_answered", "on_down", "metadata_loaded")

    def __init__(self) -> None:
        self.state = "NOT_RUNNING"
        self.ready_to_unfence = False
        self.metadata_offset = -1                  # the metadata offset this broker has caught up to
        self.in_flight = False                     # communicationInFlight
        self.next_immediate = False                # nextSchedulingShouldBeImmediate
        self.failed_attempts = 0
        self.communication = None                  # the timer of the next communication
        self.shutdown_answered = False             # gotControlledShutdownResponse
        self.on_down = None                        # what to call once a shutdown has taken the process down
        self.metadata_loaded = False               # has this incarnation had the controller's whole image yet?


class BrokerLifecycle:
    def _init_lifecycle(self) -> None:
        self.broker_epoch = -1
        self.registered = False
        self.running = False                       # unfenced at least once since it started: it serves clients
        self.life = LifecycleState()

    @property
    def lifecycle_state(self) -> str:
        return self.life.state

    def start(self) -> None:
        self.life.state = STARTING
        self._communicate()

    # --------------------------------------------------------- scheduling
    def _schedule_communication(self, delay_ms: int) -> None:
        if self.life.next_immediate:
            delay_ms = 0
        self.life.next_immediate = False
        if self.life.communication is not None:
            self.cancel_timer(self.life.communication)     # scheduleDeferred("communication"): one is pending at most
        # a starting broker's communications are the work of its startup; a running one's heartbeats are chores
        self.life.communication = self.set_timer(delay_ms, "BrokerHeartbeat" if self.registered
                                                 else "retry BrokerRegistration", self._communicate,
                                                 background=self._chore())

    def _chore(self) -> bool:
        """A running broker's heartbeats are background chores; a starting or shutting-down one's are the work."""
        return self.running and self.life.state != PENDING_CONTROLLED_SHUTDOWN

    def _after_failure(self) -> None:
        # BrokerLifecycleManager.resendExponentialBackoff: 100 ms doubling up to broker.session.timeout.ms (no jitter)
        delay = min(100 * 2 ** min(self.life.failed_attempts, 20), self.config["broker.session.timeout.ms"])
        self.life.failed_attempts += 1
        self.life.next_immediate = False
        self._schedule_communication(delay)

    def _communicate(self) -> None:
        self.life.communication = None                 # (it has run: nothing to cancel)
        if self.life.in_flight:
            self.life.next_immediate = True
        elif self.registered:
            self._send_heartbeat()
        else:
            self._send_registration()

    # -------------------------------------------------------- registration
    def _send_registration(self) -> None:
        self.life.in_flight = True
        self.send_request(CONTROLLER, m.BrokerRegistrationRequest(self.broker_id, self.incarnation),
                          self._on_registered, timeout_ms=5_000)

    def _on_registered(self, resp, err) -> None:
        self.life.in_flight = False
        if err or resp.error:
            self._after_failure()
            return
        self.life.failed_attempts = 0
        self.broker_epoch = resp.broker_epoch
        self.registered = True
        self._schedule_communication(0)              # a heartbeat at once
        self.on_registered()

    # ----------------------------------------------------------- heartbeat
    def _send_heartbeat(self) -> None:
        epoch = self.broker_epoch
        req = m.BrokerHeartbeatRequest(self.broker_id, epoch, self.life.metadata_offset, not self.life.ready_to_unfence,
                                       self.life.state == PENDING_CONTROLLED_SHUTDOWN)
        self.life.in_flight = True
        self.send_request(CONTROLLER, req, lambda resp, err: self._on_heartbeat(resp, err, epoch),
                          timeout_ms=self.config["broker.heartbeat.interval.ms"], background=self._chore())

    def _on_heartbeat(self, resp, err, epoch: int) -> None:
        self.life.in_flight = False
        if err is not None:
            self._after_failure()
            return
        if resp.error:
            # BrokerHeartbeatResponseEvent: an error (STALE_BROKER_EPOCH: the heartbeat was not of its current
            # registration) is a failed attempt; the broker heartbeats again and never registers again for it (nor
            # for being fenced: a fenced broker is unfenced by a heartbeat with its epoch)
            self.narrate(f"broker {self.broker_id} sent a heartbeat request (broker epoch {epoch}) but received "
                         f"error {Errors(resp.error)}; it heartbeats again")
            self._after_failure()
            return
        self.life.failed_attempts = 0
        interval = self.config["broker.heartbeat.interval.ms"]
        if self.life.state == PENDING_CONTROLLED_SHUTDOWN:
            if resp.should_shut_down:
                self.narrate(f"broker {self.broker_id}: the controller has asked it to exit controlled shutdown")
                self.set_timer(0, "shut down (controlled shutdown complete)", self._exit)
                return
            # "If this is the first pending controlled shutdown response we got, schedule our next heartbeat a
            # little bit sooner than we usually would"
            first = not self.life.shutdown_answered
            self.life.shutdown_answered = True
            self.narrate(f"broker {self.broker_id} is in PENDING_CONTROLLED_SHUTDOWN, still waiting for the controller")
            self._schedule_communication(50 if first else interval)
            return
        if self.life.state == STARTING:
            if not resp.is_caught_up:
                self._schedule_communication(10)    # "so that ... we start up a bit quicker"
                return
            # BrokerServer: caught up, its logs recovered (at restart) and its first metadata published: it is ready
            # to be unfenced (setReadyToUnfence), and asks for it at once
            self.life.state = RECOVERY
            self.life.ready_to_unfence = True
            self.narrate(f"broker {self.broker_id} has caught up with the metadata log (offset "
                         f"{self.life.metadata_offset}): RECOVERY, and it asks to be unfenced")
            self.kernel.current.background = False
            self._schedule_communication(0)
            return
        if self.life.state == RECOVERY and not resp.is_fenced:
            self.life.state = RUNNING
            self.running = True
            self.narrate(f"broker {self.broker_id} has been unfenced: RUNNING, it accepts clients")
            self.kernel.current.background = False
        self._schedule_communication(interval)

    # ------------------------------------------------------------ shutdown
    def begin_controlled_shutdown(self, then=None) -> None:
        """BrokerServer.shutdown: a controlled shutdown (BrokerLifecycleManager.beginControlledShutdown) if
        ``controlled.shutdown.enable`` and the broker is RUNNING, else a clean exit at once.  ``then()`` runs once
        the process is down."""
        life = self.life
        if life.state in (PENDING_CONTROLLED_SHUTDOWN, SHUTTING_DOWN):
            raise RuntimeError(f"broker {self.broker_id} is already shutting down")
        life.on_down = then
        if not self.config["controlled.shutdown.enable"]:
            self.narrate(f"broker {self.broker_id} shuts down without a controlled shutdown "
                         f"(controlled.shutdown.enable=false)")
            self._exit()
            return
        if life.state != RUNNING:
            self.narrate(f"broker {self.broker_id} skips controlled shutdown: it is {life.state}, not RUNNING")
            self._exit()
            return
        life.state = PENDING_CONTROLLED_SHUTDOWN
        self.narrate(f"broker {self.broker_id} begins a controlled shutdown (PENDING_CONTROLLED_SHUTDOWN): its next "
                     f"heartbeat, sent at once, asks the controller to move its leaderships away")
        self.set_timer(SHUTDOWN_TIMEOUT_MS, "controlled shutdown: 5 minutes have passed", self._shutdown_timed_out)
        self._schedule_communication(0)                # scheduleNextCommunicationImmediately

    def _shutdown_timed_out(self) -> None:
        self.narrate(f"broker {self.broker_id}: timed out waiting for the controller to approve controlled shutdown; "
                     f"it shuts down anyway")
        self._exit()

    def _exit(self) -> None:
        """The rest of BrokerServer.shutdown: the broker stops serving, closes its logs cleanly and exits."""
        then = self.life.on_down
        self.life.state = SHUTTING_DOWN
        self.narrate(f"broker {self.broker_id} shuts down: it closes its connections and its logs (a clean "
                     f"shutdown: producer state snapshots written)")
        self.kernel.current.background = False
        self.go_down(clean=True)
        if then is not None:
            then()

    def caught_up_to(self, offset: int) -> None:
        """The broker has applied the metadata up to ``offset`` (its _highestMetadataOffsetProvider)."""
        if offset > self.life.metadata_offset:
            self.life.metadata_offset = offset
