"""Streams: Faust agents fold events into tables; pure rules turn state into triggers."""
