#!/usr/bin/env bash
# Two (or more) builds of xdpgen side by side, interleaved, on bench/generator_engines.sh's
# topology (g4f-tx t0 -- veth -- s0 g4f-sink, XDP drop sink in threaded NAPI on CPU 1 at
# FIFO 50; the sender on CPU 0 at FIFO 50): what a change to the program costs per packet.
#   bench/xdpgen_builds.sh FRAME_FILE DIR...   (root; each DIR holds xdpgen, xdpgen.bpf.o)
#   RATES="0 1800000" ROUNDS=3 (defaults); prints one line per run.
set -euo pipefail
B=${SRPERF_BUILD_DIR:-$HOME/.cache/srperf/build}
T=g4f-tx
S=g4f-sink
cleanup() { ip netns del "$T" 2>/dev/null || true; ip netns del "$S" 2>/dev/null || true; }
trap cleanup EXIT
F=${1:?usage: xdpgen_builds.sh FRAME_FILE DIR...}
shift
ip netns add "$T"
ip netns add "$S"
ip link add name t0 netns "$T" type veth peer name s0 netns "$S"
ip -n "$T" link set t0 address 02:5e:00:00:01:01 up
ip -n "$S" link set s0 address 02:5e:00:00:01:02 up
ip netns exec "$S" ip link set dev s0 xdpdrv obj "$B/sink.o" sec xdp
ip netns exec "$S" sh -c 'echo 1 > /sys/class/net/s0/threaded'
sleep 0.3
grep -l "^napi/s0-" /proc/[0-9]*/comm | cut -d/ -f3 | while read -r p; do
    taskset -pc 1 "$p" >/dev/null
    chrt -f -p 50 "$p"
done
for _ in $(seq "${ROUNDS:-3}"); do
    for r in ${RATES:-0 1800000}; do
        n=$(( r ? r : 2000000 ))
        for dir in "$@"; do
            out=$(ip netns exec "$T" "$dir/xdpgen" -f "$F" -t t0 -x t0 -o "$dir/xdpgen.bpf.o" \
                  -d 50 -c 0 -P 50 -r "$r" -n "$n")
            echo "$out" | python3 -c 'import json, sys; d = json.loads(sys.stdin.read()); e = d["elapsed_ns"] / 1e9; o = d["offered"]; s = d["sent"]; x = d["refused"]; r = float(sys.argv[2]); print(f"{sys.argv[1]:40} rate {r:>9.0f} offered/s {o / e:>9.0f} sent/s {s / e:>9.0f} refused {x:>7} err {100 * (o / e / r - 1) if r else 0:+.2f}%")' "$dir" "$r"
        done
    done
done
