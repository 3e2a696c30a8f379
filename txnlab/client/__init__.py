"""Clients with confluent-kafka's Python surface: Producer, Consumer, AdminClient."""
