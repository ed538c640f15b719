"""The contract: what a producer or consumer in any language must match. The event envelope and
every event, trigger and result model, the topic catalog, the codec and its limits, upcasters,
the JSON Schema export (`schemas/json/`), placement (key, murmur2 partition), signatures and
operators' keys, dead-letter records, node groups and hostlists, and the tables the contract's
words come from (XIDs, GPU specs, Slurm states). Imports nothing else of Centrality.

`schemas.runtime` is the shared runtime built on it: the Emitter, Kafka clients, metrics,
tracing, outage probes, logging and the topic reader. The contract never imports it
(tests/static/test_contract_boundary.py).
"""

import schemas.events  # noqa: F401  (registers every event type)
