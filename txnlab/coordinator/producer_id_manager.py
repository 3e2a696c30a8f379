"""Producer ids handed out in blocks of 1000 by the controller (Kafka's ``ProducerIdManager``, KIP-730).

Owns this broker's current block and the prefetch of the next one at 90% use.
While no block is available, callers get COORDINATOR_LOAD_IN_PROGRESS (retriable).
"""
from __future__ import annotations

from typing import Optional

from ..protocol import messages as m
from ..protocol.errors import Errors


class ProducerIdManager:
    def __init__(self, broker) -> None:
        self.broker = broker
        self.block_start = -1
        self.block_end = -1           # exclusive
        self.next_id = -1
        self.next_block: Optional[tuple] = None
        self.requesting = False

    def _request_block(self) -> None:
        if self.requesting:
            return
        self.requesting = True

        def done(resp, err):
            self.requesting = False
            if err or resp.error:
                return
            blk = (resp.producer_id_start, resp.producer_id_start + resp.producer_id_len)
            if self.next_id < 0 or self.next_id >= self.block_end:
                self.block_start, self.block_end = blk
                self.next_id = blk[0]
            else:
                self.next_block = blk
        self.broker.send_request("controller", m.AllocateProducerIdsRequest(self.broker.broker_id), done,
                                 timeout_ms=5_000)

    def prefetch(self) -> None:
        """Ask for a first block as soon as the broker is up."""
        if self.next_id < 0:
            self._request_block()

    def generate(self) -> int:
        """Return a fresh producer id, or raise LookupError if a block is still being fetched."""
        if self.next_id < 0 or self.next_id >= self.block_end:
            if self.next_block is not None:
                self.block_start, self.block_end = self.next_block
                self.next_id = self.block_start
                self.next_block = None
            else:
                self._request_block()
                raise LookupError(Errors.COORDINATOR_LOAD_IN_PROGRESS)
        pid = self.next_id
        self.next_id += 1
        size = self.block_end - self.block_start
        if self.next_block is None and self.next_id - self.block_start >= size * 9 // 10:
            self._request_block()
        return pid
