"""What every long-running process tells Prometheus: the metrics (`catalog`), and the one small
HTTP server serving them beside `/healthz` and `/readyz` (`server`)."""
