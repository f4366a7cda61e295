#!/bin/bash
# Does a frame the SUT modified in place come back into xdpgen's page pool?
#
# Usage: /work/bin/traffic bench/xdpgen_recycle.sh DIR...
#   each DIR holds an xdpgen and its xdpgen.bpf.o (a build of some checkout).
# Topology: g4f-rt (tester: t0 sends, t1 receives) -- g4f-rr (a router namespace:
# r0, r1, IPv6 forwarding by the kernel).  The router rewrites the frame's Ethernet
# header in place, in the very page xdpgen's live frames sent; when the page comes
# back to the page pool, a build that does not rewrite the headers sends that
# rewritten frame (destination MAC t1's, not r0's) and the router drops it.
# Prints, per DIR, frames sent and received and the router's forwarded count.
set -euo pipefail
T=g4f-rt
R=g4f-rr
cleanup() { ip netns del "$T" 2>/dev/null || true; ip netns del "$R" 2>/dev/null || true; }
trap cleanup EXIT
ip netns add "$T"
ip netns add "$R"
ip link add t0 netns "$T" type veth peer name r0 netns "$R"
ip link add t1 netns "$T" type veth peer name r1 netns "$R"
for d in t0 t1; do ip -n "$T" link set "$d" up; done
for d in r0 r1; do ip -n "$R" link set "$d" up; done
ip netns exec "$T" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
ip netns exec "$R" sysctl -qw net.ipv6.conf.all.forwarding=1
ip netns exec "$R" ethtool -K r0 gro on    # NAPI on r0: veth's ndo_xdp_xmit needs it
ip netns exec "$T" ethtool -K t1 gro on
ip -n "$R" addr add fc00:1::1/64 dev r0 nodad
ip -n "$R" addr add fc00:2::1/64 dev r1 nodad
t1mac=$(ip netns exec "$T" cat /sys/class/net/t1/address)
r0mac=$(ip netns exec "$R" cat /sys/class/net/r0/address)
ip -n "$R" -6 neigh add fc00:2::2 lladdr "$t1mac" dev r1 nud permanent
frame=$(mktemp)
trap 'rm -f "$frame"; cleanup' EXIT
python3 - "$r0mac" > "$frame" <<'PY'
import sys
mac = bytes.fromhex(sys.argv[1].replace(":", ""))
payload = bytes(8) + bytes(20)          # UDP header (checksum 0: not checked here) + data
ip6 = (bytes.fromhex("60000000") + len(payload).to_bytes(2, "big") + bytes([17, 64])
       + bytes.fromhex("fc000001" + "0" * 23 + "2") + bytes.fromhex("fc000002" + "0" * 23 + "2"))
sys.stdout.buffer.write(mac + bytes.fromhex("020000000001" "86dd") + ip6 + payload)
PY
for dir in "$@"; do
    before=$(ip netns exec "$R" nstat -az Ip6OutForwDatagrams | awk '/Ip6OutForwDatagrams/ {print $2}')
    rep=$(ip netns exec "$T" "$dir/xdpgen" -f "$frame" -t t0 -x t1 -o "$dir/xdpgen.bpf.o" \
          -r 50000 -n 20000 -d 100)
    after=$(ip netns exec "$R" nstat -az Ip6OutForwDatagrams | awk '/Ip6OutForwDatagrams/ {print $2}')
    python3 -c 'import json, sys; d = json.loads(sys.argv[1]); print(sys.argv[2], "sent", d["sent"], "received", d["rx_packets_delta"], "forwarded", int(sys.argv[4]) - int(sys.argv[3]))' \
        "$rep" "$dir" "$before" "$after"
done
