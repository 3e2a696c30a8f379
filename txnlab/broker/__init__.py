"""Kafka's broker: request handling (``broker``, ``produce``, ``fetch``), replication (``partition``,
``replica_fetcher``), the controller standing for the KRaft quorum (``controller``) and the authorizer."""
