"""Cluster simulator: N nodes x G GPUs running M jobs, deterministic from a seed."""
