#!/bin/sh
# Slurm Epilog (slurm.conf: Epilog=/usr/local/libexec/centrality/epilog.sh), run by slurmd as
# root when the job ends on each node: removes what the Prolog left for the job's tasks. A
# failing Epilog drains the node: whatever happens here, exit 0.
PATH="${PATH:-/usr/sbin:/usr/bin:/sbin:/bin}"
dir="${CENTRALITY_SLURM_PROLOG_DIR:-/run/centrality-slurm}"
case "$SLURM_JOB_ID" in
  '' | *[!0-9]*) exit 0 ;;
esac
rm -f "$dir/$SLURM_JOB_ID.env" 2>/dev/null
exit 0
