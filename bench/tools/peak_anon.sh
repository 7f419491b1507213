#!/usr/bin/env bash
# Runs a command and prints its peak resident memory split by kind, sampled from /proc/PID/status every
# 20 ms: anonymous (heap; RssAnon + RssShmem, what the kernel cannot drop without swap) and file-backed
# (RssFile: mapped inputs and spill files, which it writes back or drops under pressure). The kernel keeps
# a peak only of the sum (VmHWM), so a spike shorter than a sample can be missed: a hard bound is what
# bench/tools/memory_cgroup.sh shows.
#
#   bench/tools/peak_anon.sh COMMAND [ARG...]   (its stdout and stderr are the command's; exit: its)
set -uo pipefail
"$@" &
pid=$!
anon=0 file=0
while kill -0 "$pid" 2>/dev/null; do
  read -r a f < <(awk '/^RssAnon:|^RssShmem:/ { a += $2 } /^RssFile:/ { f = $2 } END { print a + 0, f + 0 }' \
    "/proc/$pid/status" 2>/dev/null || echo "0 0")
  [ "${a:-0}" -gt "$anon" ] && anon=$a
  [ "${f:-0}" -gt "$file" ] && file=$f
  sleep 0.02
done
wait "$pid"
rc=$?
echo "peak resident, sampled: anonymous $((anon >> 10)) MiB, file-backed $((file >> 10)) MiB" >&2
exit "$rc"
