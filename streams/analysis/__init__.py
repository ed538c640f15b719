"""Offline analysis over history: replay, what-if, outcomes, goodput and the reports made of
them. Reads ClickHouse or Kafka; never part of the live worker."""
