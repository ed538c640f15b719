"""Checkpoint notices: an SDK call for training code, framework callbacks, a directory watcher."""

from collectors.checkpoints.notify import CheckpointNotifier, current_job_id, notify_checkpoint

__all__ = ["CheckpointNotifier", "current_job_id", "notify_checkpoint"]
