"""`centrality bench …`: speed and memory budgets, measured, reported for BENCHMARKS.md."""
