"""Slack: one thread per incident, Block Kit messages, rate limits honoured."""
