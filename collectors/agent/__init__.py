"""The node agent: GPU samples, XIDs, heartbeats and health checks of one node."""
