"""Real local services for integration tests (Slurm, Ray, a Kubernetes API), one module each."""
