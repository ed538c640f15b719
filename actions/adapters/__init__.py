"""Scheduler adapters behind one interface; each registers itself by name."""
