#!/usr/bin/env bash
# Run a command while one busy loop per CPU takes CPU time beside it, as a compile or
# another benchmark would: the suite must hold on a busy machine.
#
#   scripts/under_load.sh [-n LOOPS] COMMAND [ARG...]
#
# LOOPS busy loops (default: one per CPU, nproc) run at normal priority (nice 0) for
# as long as COMMAND runs; they are ended by their PIDs when it exits, fails or is
# interrupted.  Exits with COMMAND's status and prints how long it took.
set -euo pipefail

loops="$(nproc)"
if [[ "${1:-}" == "-n" ]]; then
    loops="${2:?-n needs a number}"
    shift 2
fi
if [[ $# -eq 0 ]]; then
    echo "usage: $0 [-n LOOPS] COMMAND [ARG...]" >&2
    exit 2
fi

pids=()
# shellcheck disable=SC2317  # called by the EXIT trap
stop_loops() {
    local pid
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
}
trap stop_loops EXIT

for ((i = 0; i < loops; i++)); do
    ( while :; do :; done ) &
    pids+=("$!")
done
echo "under_load: ${loops} busy loop(s) at normal priority (pids ${pids[*]})" >&2

start="$(date +%s)"
status=0
"$@" || status=$?
echo "under_load: '$*' exited ${status} after $(( $(date +%s) - start )) s beside ${loops} busy loop(s)" >&2
exit "$status"
