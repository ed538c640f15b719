"""The front door: the `centrality` CLI, the local stack, the demo and benchmarks."""
