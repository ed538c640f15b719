"""Slurm watcher: squeue/sinfo JSON, completions from sacct's job completion log."""
