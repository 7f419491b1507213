#!/usr/bin/env bash
# Runs a command in a memory cgroup of its own, limited to LIMIT MiB (anonymous memory and page cache
# together: a process that needs more than the limit of memory the kernel cannot reclaim is OOM-killed),
# and prints one line: how it ended and the most the cgroup was charged.
#
#   bench/tools/memory_cgroup.sh LIMIT_MIB COMMAND [ARG...]   (its stdout and stderr are the command's)
#
# Needs a writable memory cgroup (cgroup v1's memory controller, or v2 with memory delegated), as root in
# a container usually has; prints "unavailable: ..." and exits 125 otherwise. Exit: the command's.
set -uo pipefail
limit=${1:?usage: memory_cgroup.sh LIMIT_MIB COMMAND [ARG...]}
shift
if [ -w /sys/fs/cgroup/memory ]; then  # v1
  cg=/sys/fs/cgroup/memory/parity-bench-$$
  mkdir "$cg" || { echo "memory cgroup: unavailable: cannot create $cg" >&2; exit 125; }
  echo $((limit << 20)) >"$cg/memory.limit_in_bytes"
  peak_file=memory.max_usage_in_bytes
  oom() { [ "$1" -eq 137 ] && [ "$(cat "$cg/memory.failcnt")" -gt 0 ]; }
elif [ -w /sys/fs/cgroup/cgroup.subtree_control ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then  # v2
  cg=/sys/fs/cgroup/parity-bench-$$
  mkdir "$cg" || { echo "memory cgroup: unavailable: cannot create $cg" >&2; exit 125; }
  echo $((limit << 20)) >"$cg/memory.max"
  echo 0 >"$cg/memory.swap.max" 2>/dev/null
  peak_file=memory.peak
  oom() { grep -q '^oom_kill [1-9]' "$cg/memory.events"; }
else
  echo "memory cgroup: unavailable: no writable memory cgroup (cgroup v1 memory or v2 with memory delegated)" >&2
  exit 125
fi
# The cgroup goes with this script, however it ends: a TERM or INT ends it once its command has ended
# (bash runs the trap after the foreground command; a cgroup holding a process cannot be removed).
trap 'sleep 0.2; rmdir "$cg" 2>/dev/null' EXIT
trap 'exit 143' TERM INT
(echo "$BASHPID" >"$cg/cgroup.procs" && exec "$@")
rc=$?
peak=$(( $(cat "$cg/$peak_file" 2>/dev/null || echo 0) >> 20 ))
if oom "$rc"; then how="OOM-killed"; else how="completed, exit $rc"; fi
echo "memory cgroup of $limit MiB: $how; most charged $peak MiB" >&2
exit "$rc"
