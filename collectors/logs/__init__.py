"""Log tailer: follows files, batches lines per job, extracts signals at the edge."""
