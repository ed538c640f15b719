#!/bin/sh
# Slurm Epilog (slurm.conf: Epilog=/usr/local/libexec/centrality/epilog.sh), run by slurmd as
# root when the job ends on each node: removes what the Prolog left for the job's tasks. A
# failing Epilog drains the node: whatever happens here, exit 0.
#
# Only what this instance's Prolog wrote: a job requeued while it ran may start again on this
# node before this Epilog runs (Slurm 22.05 lets it start while the last instance completes),
# and the file then holds the next instance's checkpoint. This instance's is the one its Comment
# (SLURM_JOB_COMMENT, as the Prolog read it) names; without one, its Prolog left no file.
PATH="${PATH:-/usr/sbin:/usr/bin:/sbin:/bin}"
dir="${CENTRALITY_SLURM_PROLOG_DIR:-/run/centrality-slurm}"
case "$SLURM_JOB_ID" in
  '' | *[!0-9]*) exit 0 ;;
esac
file="$dir/$SLURM_JOB_ID.env"
newline='
'
comment="${SLURM_JOB_COMMENT%%"$newline"*}"
case "$comment" in
  centrality-resume=?*) mine="export CENTRALITY_RESUME_FROM=${comment#centrality-resume=}" ;;
  *) exit 0 ;;
esac
line=
if [ -r "$file" ]; then
  IFS= read -r line <"$file"
fi
if [ "$line" = "$mine" ]; then
  rm -f "$file" 2>/dev/null
fi
exit 0
