"""The brain: folds and rules run over a batch of events, what people read made of the state
they leave, the brain cut into parts. Pure: no Kafka, no Faust (the worker in `streams.faust`
runs it live; `streams.analysis.replay` runs it over history)."""
