#!/usr/bin/env bash
set -euo pipefail
# pipes.sh: the SRv6Pipes bytestream-function node on a stock kernel.
#
# Functions (the contract is cfg_scripts/README.md):
#   pipes_router  the node's SID is a plain End (the router baseline);
#   pipes_proxy   the node's SID decapsulates (End.DX6 out of the veth pipes0 whose
#                 peer pipes1 is in the same namespace: the stock-kernel stand-in for
#                 SRv6Pipes' End.VNF and its nfv0 interface), nft TPROXY hands the TCP
#                 arriving on pipes1 to pipes_relay, which opens the next connection
#                 from the client's address (IPV6_TRANSPARENT) and applies
#                 SRPERF_PIPES_FUNC (relay | xor:N | xormask) to the bytestream both
#                 ways.  Locally sent packets to SRPERF_PIPES_DST_PREFIX are
#                 re-encapsulated toward SRPERF_PIPES_NEXT_SEGS (H.Encaps), replies
#                 to the relay's outbound sockets are diverted to it (nft socket).
#                 Unlike SRv6Pipes, the next segments are configured per node, not
#                 read from the SYN's SRH (no NFQUEUE).
#   clean         stops the relay and removes all of the above.
#   counters      the relay's counters (one JSON line) or {} when none runs.
# Variables:
#   all:   SRPERF_SID_SUT SRPERF_PIPES_TABLE SRPERF_PIPES_RUNDIR SRPERF_PIPES_DST_PREFIX
#   pipes_router: + SRPERF_OUT_IF
#   pipes_proxy:  + SRPERF_OUT_IF SRPERF_PIPES_OUT_NH SRPERF_PIPES_NEXT_SEGS
#                   SRPERF_PIPES_FUNC SRPERF_PIPES_RELAY SRPERF_PIPES_PORT
#                   SRPERF_PIPES_THREADS
# The node's base setup (addresses, routes to the SIDs, forwarding and seg6 sysctls,
# `ip sr tunsrc`) belongs to the testbed.

readonly PROG=pipes.sh
readonly BEHAVIORS=(pipes_router pipes_proxy)
readonly HELPERS=(counters)
# shellcheck source=SCRIPTDIR/contract.bash
source "$(dirname "${BASH_SOURCE[0]}")/contract.bash"

readonly CLEAN_VARS=(SRPERF_SID_SUT SRPERF_PIPES_TABLE SRPERF_PIPES_RUNDIR
	SRPERF_PIPES_DST_PREFIX)
readonly NFT_TABLE=srperf_pipes
readonly MARK=0x5e6
readonly VETH_IN=pipes0
readonly VETH_PEER=pipes1
# fixed (locally administered) MACs: a function run twice leaves the same state
readonly VETH_IN_MAC=02:5e:06:00:00:00
readonly VETH_PEER_MAC=02:5e:06:00:00:01
# End.DX6 resolves its nh6 by a route lookup (a link-local one would leave by the
# ingress port): a documentation address routed to the veth, with a static neighbour.
readonly PEER_NH=2001:db8:5e6::2

# run CMD...: run a command; on failure report it with its output and exit 1.
run() {
	local err rc=0
	err=$("$@" 2>&1) || rc=$?
	if ((rc != 0)); then
		die "$* failed: $err"
	fi
}

check_common() {
	if ! [[ "$SRPERF_PIPES_TABLE" =~ ^[0-9]+$ ]] || ((SRPERF_PIPES_TABLE < 1 ||
		SRPERF_PIPES_TABLE > 2000000000)); then
		usage_error "SRPERF_PIPES_TABLE=$SRPERF_PIPES_TABLE: a routing table number"
	fi
	if [[ "$SRPERF_PIPES_RUNDIR" != /* ]]; then
		usage_error "SRPERF_PIPES_RUNDIR=$SRPERF_PIPES_RUNDIR: an absolute path"
	fi
}

steer_table() { echo $((SRPERF_PIPES_TABLE + 1)); }

stop_relay() {
	local pidfile="$SRPERF_PIPES_RUNDIR/relay.pid" pid i
	[[ -f "$pidfile" ]] || return 0
	pid=$(<"$pidfile")
	if [[ "$pid" =~ ^[0-9]+$ ]] && kill "$pid" 2>/dev/null; then
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$pidfile"
}

clean() {
	need "${CLEAN_VARS[@]}"
	check_common
	stop_relay
	if nft list table ip6 "$NFT_TABLE" >/dev/null 2>&1; then
		run nft delete table ip6 "$NFT_TABLE"
	fi
	while ip -6 rule del fwmark "$MARK" lookup "$SRPERF_PIPES_TABLE" 2>/dev/null; do :; done
	while ip -6 rule del iif lo to "$SRPERF_PIPES_DST_PREFIX" lookup "$(steer_table)" \
		2>/dev/null; do :; done
	ip -6 route flush table "$SRPERF_PIPES_TABLE" 2>/dev/null || true
	ip -6 route flush table "$(steer_table)" 2>/dev/null || true
	ip -6 route del "$SRPERF_SID_SUT/128" 2>/dev/null || true
	if ip link show dev "$VETH_IN" >/dev/null 2>&1; then
		run ip link del dev "$VETH_IN"
	fi
}

pipes_router() {
	need "${CLEAN_VARS[@]}" SRPERF_OUT_IF
	check_common
	clean
	run ip -6 route add "$SRPERF_SID_SUT/128" encap seg6local action End dev "$SRPERF_OUT_IF"
}

check_proxy() {
	case "$SRPERF_PIPES_FUNC" in
	relay | xormask) ;;
	xor:*)
		if ! [[ "${SRPERF_PIPES_FUNC#xor:}" =~ ^[1-9][0-9]{0,3}$ ]]; then
			usage_error "SRPERF_PIPES_FUNC=$SRPERF_PIPES_FUNC: xor:N with N 1-1024"
		fi
		;;
	*) usage_error "SRPERF_PIPES_FUNC=$SRPERF_PIPES_FUNC: relay, xor:N or xormask" ;;
	esac
	if ! [[ "$SRPERF_PIPES_PORT" =~ ^[1-9][0-9]{0,4}$ ]] || ((SRPERF_PIPES_PORT > 65535)); then
		usage_error "SRPERF_PIPES_PORT=$SRPERF_PIPES_PORT: a TCP port"
	fi
	if ! [[ "$SRPERF_PIPES_THREADS" =~ ^([1-9]|1[0-6])$ ]]; then
		usage_error "SRPERF_PIPES_THREADS=$SRPERF_PIPES_THREADS: 1-16"
	fi
	if ! command -v nft >/dev/null; then
		unsupported "nft not found (nftables is needed for TPROXY)"
	fi
	if [[ ! -x "$SRPERF_PIPES_RELAY" ]]; then
		unsupported "$SRPERF_PIPES_RELAY: no such executable (srperf build makes pipes_relay)"
	fi
}

start_relay() {
	local log="$SRPERF_PIPES_RUNDIR/relay.log" i
	mkdir -p "$SRPERF_PIPES_RUNDIR"
	chmod 0700 "$SRPERF_PIPES_RUNDIR"
	# Created here, not by the background job's redirection, so the first grep below
	# never races the shell that starts the relay.
	: >"$log"
	setsid "$SRPERF_PIPES_RELAY" -p "$SRPERF_PIPES_PORT" -f "$SRPERF_PIPES_FUNC" \
		-t "$SRPERF_PIPES_THREADS" -s "$SRPERF_PIPES_RUNDIR/relay.stats" \
		</dev/null >"$log" 2>&1 &
	echo "$!" >"$SRPERF_PIPES_RUNDIR/relay.pid"
	for ((i = 0; i < 100; i++)); do
		if grep -q '^ready' "$log"; then
			return 0
		fi
		kill -0 "$!" 2>/dev/null || die "pipes_relay exited: $(<"$log")"
		sleep 0.05
	done
	die "pipes_relay did not get ready within 5 s: $(<"$log")"
}

# A veth set up is not yet forwarding: until the kernel's link watch marks it
# operationally up (up to about 1 s later) its qdisc drops every frame, so the first
# SYNs through a fresh relay were lost and a short wrk run completed no request.
wait_oper_up() {
	local dev i
	for dev in "$@"; do
		for ((i = 0; i < 150; i++)); do
			if ip -o link show dev "$dev" | grep -q 'state UP'; then
				break
			fi
			sleep 0.02
		done
		ip -o link show dev "$dev" | grep -q 'state UP' ||
			die "$dev did not come up within 3 s"
	done
}

pipes_proxy() {
	need "${CLEAN_VARS[@]}" SRPERF_OUT_IF SRPERF_PIPES_OUT_NH SRPERF_PIPES_NEXT_SEGS \
		SRPERF_PIPES_FUNC SRPERF_PIPES_RELAY SRPERF_PIPES_PORT SRPERF_PIPES_THREADS
	check_common
	check_proxy
	clean
	run ip link add "$VETH_IN" address "$VETH_IN_MAC" type veth peer name "$VETH_PEER" \
		address "$VETH_PEER_MAC"
	run ip link set dev "$VETH_IN" up
	run ip link set dev "$VETH_PEER" up
	wait_oper_up "$VETH_IN" "$VETH_PEER"
	run ip -6 route add "$PEER_NH/128" dev "$VETH_IN"
	run ip -6 neigh replace "$PEER_NH" lladdr "$VETH_PEER_MAC" dev "$VETH_IN" nud permanent
	run ip -6 route add "$SRPERF_SID_SUT/128" encap seg6local action End.DX6 nh6 "$PEER_NH" \
		dev "$VETH_IN"
	run ip -6 rule add fwmark "$MARK" lookup "$SRPERF_PIPES_TABLE"
	run ip -6 route add local ::/0 dev lo table "$SRPERF_PIPES_TABLE"
	run ip -6 rule add iif lo to "$SRPERF_PIPES_DST_PREFIX" lookup "$(steer_table)"
	run ip -6 route add "$SRPERF_PIPES_DST_PREFIX" encap seg6 mode encap \
		segs "$SRPERF_PIPES_NEXT_SEGS" via "$SRPERF_PIPES_OUT_NH" dev "$SRPERF_OUT_IF" \
		table "$(steer_table)"
	# TCP that no relay socket takes is dropped: without the last rule a relay that died
	# was bypassed and its node measured as a router.
	run nft -f - <<EOF
table ip6 $NFT_TABLE {
	chain prerouting {
		type filter hook prerouting priority mangle; policy accept;
		meta l4proto tcp socket transparent 1 meta mark set $MARK accept
		iifname "$VETH_PEER" meta l4proto tcp tproxy to :$SRPERF_PIPES_PORT meta mark set $MARK accept
		iifname "$VETH_PEER" meta l4proto tcp drop
	}
}
EOF
	start_relay
}

counters() {
	need SRPERF_PIPES_RUNDIR
	local pidfile="$SRPERF_PIPES_RUNDIR/relay.pid" stats="$SRPERF_PIPES_RUNDIR/relay.stats"
	local pid before i
	if [[ ! -f "$pidfile" ]]; then
		echo "{}"
		return 0
	fi
	pid=$(<"$pidfile")
	before=$(stat -c %i "$stats" 2>/dev/null || echo none)
	kill -USR1 "$pid" 2>/dev/null || die "pipes_relay (pid $pid) is not running"
	for ((i = 0; i < 50; i++)); do
		[[ "$(stat -c %i "$stats" 2>/dev/null || echo none)" != "$before" ]] && break
		sleep 0.02
	done
	cat "$stats"
}

main "$@"
