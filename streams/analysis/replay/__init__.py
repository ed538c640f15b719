"""Replay: the current rules over recorded history, next to what was decided then."""
