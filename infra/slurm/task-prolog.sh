#!/bin/sh
# Slurm TaskProlog (slurm.conf: TaskProlog=/usr/local/libexec/centrality/task-prolog.sh), run
# before every task as the job's user: lines it prints as `export NAME=value` enter the task's
# environment. A requeued job's tasks see CENTRALITY_RESUME_FROM=<checkpoint uri>, from the file
# the Prolog wrote once for the job on this node: no Slurm command, so no controller RPC, per task.
dir="${CENTRALITY_SLURM_PROLOG_DIR:-/run/centrality-slurm}"
case "$SLURM_JOB_ID" in
  '' | *[!0-9]*) exit 0 ;;
esac
# Shell built-ins only: this runs before every task of every job.
if [ -r "$dir/$SLURM_JOB_ID.env" ]; then
  while IFS= read -r line; do
    printf '%s\n' "$line"
  done <"$dir/$SLURM_JOB_ID.env"
fi
exit 0
