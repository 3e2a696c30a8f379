"""Transaction coordinator (Kafka's ``TransactionCoordinator``): placeholder for idempotent InitProducerId."""
from __future__ import annotations

from ..protocol import messages as m
from ..protocol.errors import Errors
from .producer_id_manager import ProducerIdManager


class TransactionCoordinator:
    def __init__(self, broker) -> None:
        self.broker = broker
        self.producer_id_manager = ProducerIdManager(broker)

    def on_elected(self, partition, epoch):
        pass

    def on_resigned(self, partition, epoch):
        pass

    def on_high_watermark(self, p):
        pass

    def handle_init_producer_id(self, msg):
        req = msg.payload
        if req.transactional_id is None:
            try:
                pid = self.producer_id_manager.generate()
            except LookupError:
                self.broker.narrate("no producer id block yet; asked the controller for one -> COORDINATOR_LOAD_IN_PROGRESS")
                return m.InitProducerIdResponse(Errors.COORDINATOR_LOAD_IN_PROGRESS)
            self.broker.narrate(f"new idempotent producer id {pid}, epoch 0 (nothing is persisted)")
            return m.InitProducerIdResponse(Errors.NONE, pid, 0)
        return m.InitProducerIdResponse(Errors.UNKNOWN_SERVER_ERROR)
