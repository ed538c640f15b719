"""Kubernetes watcher: batch Jobs and Kubeflow PyTorchJobs, their Pods, and Nodes."""
