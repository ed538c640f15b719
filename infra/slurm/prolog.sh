#!/bin/sh
# Slurm Prolog (slurm.conf: Prolog=/usr/local/libexec/centrality/prolog.sh), run by slurmd as
# root once per job on each of its nodes, before any of the job's tasks there. Slurm hands it the
# job's Comment in SLURM_JOB_COMMENT (from the job credential: no controller RPC), where
# Centrality's Slurm adapter marks a requeued job `centrality-resume=<checkpoint uri>`. It leaves
# that for the TaskProlog in a per-job file on the node, so the job's tasks, however many, read a
# local file instead of each asking the controller.
#
# A failing Prolog drains the node and requeues the job: whatever happens here, exit 0.
# Slurm gives prologs no search path.
PATH="${PATH:-/usr/sbin:/usr/bin:/sbin:/bin}"
dir="${CENTRALITY_SLURM_PROLOG_DIR:-/run/centrality-slurm}"
case "$SLURM_JOB_ID" in
  '' | *[!0-9]*) exit 0 ;;
esac
file="$dir/$SLURM_JOB_ID.env"
# The first line only: a comment is free text, and every line of this file becomes a
# TaskProlog command.
newline='
'
comment="${SLURM_JOB_COMMENT%%"$newline"*}"
case "$comment" in
  centrality-resume=?*)
    umask 022
    mkdir -p "$dir" 2>/dev/null
    tmp="$file.$$"
    # Written whole, then renamed: a task never reads half a file.
    if printf 'export CENTRALITY_RESUME_FROM=%s\n' "${comment#centrality-resume=}" >"$tmp" 2>/dev/null; then
      # For the job's user only (the tasks run as that user).
      { chown "$SLURM_JOB_UID" "$tmp" && chmod 0400 "$tmp"; } 2>/dev/null || chmod 0444 "$tmp"
      mv -f "$tmp" "$file" 2>/dev/null || rm -f "$tmp"
    fi
    ;;
  *)
    # Requeued from scratch: an earlier attempt's checkpoint must not be picked up again.
    rm -f "$file" 2>/dev/null
    ;;
esac
exit 0
