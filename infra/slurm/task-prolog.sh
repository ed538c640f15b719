#!/bin/sh
# Slurm TaskProlog (slurm.conf: TaskProlog=/path/to/task-prolog.sh): lines it prints as
# `export NAME=value` enter the task's environment. Centrality's Slurm adapter marks a requeued
# job's Comment with `centrality-resume=<checkpoint uri>`; the job sees CENTRALITY_RESUME_FROM.
comment=$(squeue -h -j "$SLURM_JOB_ID" -o %k 2>/dev/null)
case "$comment" in
  centrality-resume=*) echo "export CENTRALITY_RESUME_FROM=${comment#centrality-resume=}" ;;
esac
exit 0
