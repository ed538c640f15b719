"""The remediation ladder's work on a node: GPU reset and the GPUs' serials, through nvidia-smi."""
