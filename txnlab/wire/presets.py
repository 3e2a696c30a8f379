"""Client settings for stepping a real client through the wire door (``cluster.listen(mode="step")``).

A real client keeps wall-clock timers (request timeouts, the transaction timeout, session timeouts,
``max.poll.interval.ms``).  While a person reads a step, no request is answered, so with the defaults a
paused client gives up after seconds (librdkafka's ``socket.timeout.ms`` is 60 s, a consumer's session
10-45 s).  These presets stretch every such timer to its allowed maximum, so a learner can pause for about
five minutes per step (librdkafka caps ``socket.timeout.ms`` at 300000 ms) and a transaction may stay open
for fifteen (``transaction.max.timeout.ms``'s default).  Merge them into the client's config::

    Producer({"bootstrap.servers": door.bootstrap_servers, "transactional.id": "copier",
              **presets.librdkafka_stepping_producer})
"""
from __future__ import annotations

# both kinds of librdkafka client
librdkafka_stepping = {
    "socket.timeout.ms": 300_000,                  # librdkafka's maximum: a request may wait 5 minutes
    "socket.connection.setup.timeout.ms": 300_000,
    "metadata.max.age.ms": 900_000,
    "topic.metadata.refresh.interval.ms": 300_000, # fewer background Metadata requests to step through
    "reconnect.backoff.ms": 100,
    "retry.backoff.ms": 100,
}

librdkafka_stepping_producer = {
    **librdkafka_stepping,
    "transaction.timeout.ms": 900_000,             # the broker's transaction.max.timeout.ms
    "message.timeout.ms": 900_000,                 # at most transaction.timeout.ms
    "request.timeout.ms": 900_000,                 # Produce's broker-side timeout (librdkafka's maximum)
    "linger.ms": 0,
}

librdkafka_stepping_consumer = {
    **librdkafka_stepping,
    "session.timeout.ms": 300_000,                 # at most the broker's group.max.session.timeout.ms
    "heartbeat.interval.ms": 60_000,
    "max.poll.interval.ms": 3_600_000,
    "fetch.wait.max.ms": 100,                      # a short long-poll: each Fetch is answered quickly
}
