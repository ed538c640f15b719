"""Collectors: node agent, scheduler watchers, log tailer, checkpoint notices, simulator."""
