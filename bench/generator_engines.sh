#!/usr/bin/env bash
# Side by side, interleaved, on one topology: srgen (mmsg, ring) and xdpgen (live frames).
#   bench/generator_engines.sh FRAME_FILE   (root; binaries from srperf build in $SRPERF_BUILD_DIR)
# Prints one line per run: offered, sent, refused, what the sink counted, error vs asked rate.
set -euo pipefail
B=${SRPERF_BUILD_DIR:-$HOME/.cache/srperf/build}
T=${NS_PREFIX:-g43}-tx; S=${NS_PREFIX:-g43}-sink
cleanup() { ip netns del "$T" 2>/dev/null || true; ip netns del "$S" 2>/dev/null || true; }
trap cleanup EXIT
ip netns add "$T"; ip netns add "$S"
ip link add name t0 netns "$T" type veth peer name s0 netns "$S"
for f in rx tx sg tso gso gro lro; do
  ip netns exec "$T" ethtool -K t0 "$f" off >/dev/null 2>&1 || true
  ip netns exec "$S" ethtool -K s0 "$f" off >/dev/null 2>&1 || true
done
ip -n "$T" link set t0 address 02:5e:00:00:01:01 up
ip -n "$S" link set s0 address 02:5e:00:00:01:02 up
ip netns exec "$S" ip link set dev s0 xdpdrv obj "$B/sink.o" sec xdp
ip netns exec "$S" sh -c 'echo 1 > /sys/class/net/s0/threaded'
sleep 0.3
grep -l "^napi/s0-" /proc/[0-9]*/comm | cut -d/ -f3 | while read -r p; do
  taskset -pc 1 "$p" >/dev/null; chrt -f -p 50 "$p"
done
F=${1:?usage: generator_engines.sh FRAME_FILE}
sinkrx() { ip netns exec "$S" cat /sys/class/net/s0/statistics/rx_packets; }
one() {  # engine rate count
  local eng=$1 r=$2 n=$3 a b out
  a=$(sinkrx)
  case $eng in
    xdp) out=$(ip netns exec "$T" "$B/xdpgen" -f "$F" -t t0 -x t0 -o "$B/xdpgen.bpf.o" -d 50 -c 0 -P 50 -r "$r" -n "$n") ;;
    *) out=$(ip netns exec "$T" "$B/srgen" -f "$F" -t t0 -x t0 -m "$eng" -b 64 -d 50 -c 0 -P 50 -r "$r" -n "$n") ;;
  esac
  b=$(sinkrx)
  echo "$out" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); e=d["elapsed_ns"]/1e9; s=d["sent"]; rf=d["refused"]; o=s+rf; print(f"{sys.argv[1]:5} rate {float(sys.argv[2]):>9.0f} offered/s {o/e:>9.0f} sent/s {s/e:>9.0f} refused {rf:>7} sink/s {int(sys.argv[3])/e:>9.0f} lost {s-int(sys.argv[3]):>6} err {100*(o/e/float(sys.argv[2])-1) if float(sys.argv[2]) else 0:+.2f}%")' "$eng" "$r" "$((b-a))"
}
for _ in 1 2 3; do
  for r in 0 1000000 1400000 1800000 2200000; do
    n=$(( r ? r : 2000000 ))
    for eng in mmsg ring xdp; do one "$eng" "$r" "$n"; done
  done
done
