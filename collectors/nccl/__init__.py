"""NCCL measurements: nccl-tests result tables and NCCL debug logs → NcclSampled."""
