"""Placeholder: replaced by the real group coordinator."""


class GroupCoordinator:
    def __init__(self, broker) -> None:
        self.broker = broker

    def on_elected(self, partition, epoch):
        pass

    def on_resigned(self, partition, epoch):
        pass

    def on_high_watermark(self, p):
        pass
