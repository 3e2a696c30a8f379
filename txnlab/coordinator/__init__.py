"""Coordinators hosted by brokers: transactions (``__transaction_state``) and groups (``__consumer_offsets``)."""
