"""The shared runtime: code that runs Kafka clients and processes on top of the contract
(`schemas`). The Emitter (`emitter`), how Kafka clients are built and probed (`settings`,
`kafka_clients`, `kafka_probe`, `admin`), reading (`topic_reader`, `batches`, `wire`,
`faust_codec`, `placement`, `fleet`, `frontier`), dead-letter counting (`deadletter`), and what
every process shares: metrics and health (`metrics`), outages, tracing, logging and where the
local stack serves (`local_stack`).

It imports the contract; no module of the contract imports it
(tests/static/test_contract_boundary.py), so a producer in another language is held to the
contract alone.
"""
