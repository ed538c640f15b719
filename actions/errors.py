"""Errors a handler raises to say whether trying again can help (kopf's distinction)."""


class TemporaryError(Exception):
    """Retry with backoff: the scheduler is busy, the network blinked."""


class PermanentError(Exception):
    """Retrying cannot help: the job is gone, the request is invalid."""
