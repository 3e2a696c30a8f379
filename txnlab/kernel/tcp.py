"""TCP's retransmission timer, the one rule by which a network partition delays a connection's messages.

A partition does not lose the data of an open TCP connection: the sender's kernel keeps every unacknowledged
segment in its socket buffer and retransmits the oldest one each time its retransmission timer fires, the
timeout doubling each time (Linux: ``tcp_retransmit_timer`` in net/ipv4/tcp_timer.c backs ``icsk_rto`` off
exponentially, from ``TCP_RTO_MIN`` = 200 ms up to ``TCP_RTO_MAX`` = 120 s, include/net/tcp.h).  The first
retransmission that crosses the healed network gets through, and everything queued behind it follows, in
order.  A connection being opened during the partition retransmits its SYN the same way, from
``TCP_TIMEOUT_INIT`` = 1 s (``tcp_retransmit_timer`` also serves SYN_SENT).  Pure arithmetic: no clock, no
randomness, so the same run gives the same times.

Not modelled: Linux's give-up (``tcp_retries2`` = 15 retransmissions, about 15 minutes; ``tcp_syn_retries``
= 6 SYNs, about 2 minutes), and the measured RTT (the lab's latency is far below RTO_MIN, so the timer starts
at its floor).
"""
from __future__ import annotations

TCP_RTO_MIN_MS = 200          # include/net/tcp.h TCP_RTO_MIN (HZ / 5): the first retransmission of data
TCP_RTO_MAX_MS = 120_000      # include/net/tcp.h TCP_RTO_MAX (120 * HZ): the backoff stops doubling here
TCP_TIMEOUT_INIT_MS = 1_000   # include/net/tcp.h TCP_TIMEOUT_INIT (1 * HZ): the first retransmission of a SYN


def retransmission_at(sent_at: int, not_before: int, first_rto: int = TCP_RTO_MIN_MS) -> int:
    """The first time at or after ``not_before`` at which a segment first sent at ``sent_at`` is retransmitted:
    ``sent_at + first_rto``, then each retransmission timeout twice the one before (``tcp_retransmit_timer``),
    never more than ``TCP_RTO_MAX_MS``."""
    t, rto = sent_at + first_rto, first_rto
    while t < not_before and rto < TCP_RTO_MAX_MS:
        rto = min(rto * 2, TCP_RTO_MAX_MS)
        t += rto
    if t < not_before:                # at the cap: one retransmission every TCP_RTO_MAX_MS
        t += -((t - not_before) // TCP_RTO_MAX_MS) * TCP_RTO_MAX_MS
    return t
