"""The contract: events, topics, codec and the Emitter. Imports nothing else of Centrality."""

import schemas.events  # noqa: F401  (registers every event type)
