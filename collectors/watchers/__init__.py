"""Scheduler watchers: job lifecycle in scheduler-agnostic states, nodes of every attempt."""
