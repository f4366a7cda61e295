#!/usr/bin/env bash
# srperf CFG script for VPP (FD.io Vector Packet Processing), configured with vppctl.
#
# Usage: bash vpp.sh FUNCTION      (bash vpp.sh functions lists them)
#
# The contract (exit codes, no defaults, idempotence, `functions`) is
# cfg_scripts/README.md.  Every behavior function checks all its variables,
# then calls `clean`, then configures the behavior; running it twice gives the
# same state.
#
# vppctl exits 0 even when a command fails, so every configuration command
# here must print nothing: any output fails the function (exit 1) with that
# text.  Behavior names are lowercase (`end.x`, not `End.X`).  A table that
# End.T/End.DT4/End.DT6 name must exist before the localsid is added (VPP
# accepts a missing one and crashes on the next `show sr localsids`): the
# functions create it first, `clean` deletes it last.
#
# Functions:
#   ipv6 ipv4                      plain forwarding to the destination prefix
#   h_insert                       policy (insert) steered from the IPv6 prefix
#   h_encaps h_encaps_v4           policy (encap) steered from the IPv6 / IPv4 prefix
#   h_encaps_l2                    policy (encap) steered from every frame of the in-port
#   end end_x end_t                endpoints
#   end_dx2 end_dx4 end_dx6        decapsulation and cross-connect
#   end_dt4 end_dt6                decapsulation and lookup in SRPERF_TABLE
#   end_b6_encaps end_b6           a policy (encap / insert) whose binding SID is
#                                  the SUT's SID: VPP has no End.B6* localsid, traffic
#                                  to a binding SID gets that policy
#   end_ad end_as end_am           SR proxies (VPP plugins srv6ad, srv6as, srv6am), one
#                                  localsid per VNF interface present
#   clean                          remove every localsid, policy, steering rule, route,
#                                  table and VNF host-interface of this script
#   setup                          helper: the SUT's base setup in VPP (the testbed's
#                                  part, never undone by clean): host-interfaces, link
#                                  addresses, static neighbours, encaps source
#   version                        helper: print VPP's version (one line)
#
# Variables (no defaults; a function needs those its `need` lines name):
#   SRPERF_VPPCTL           the vppctl command ON THE SUT (a name on PATH or a path)
#   SRPERF_VPP_CLI_SOCK     VPP's CLI socket ON THE SUT (vppctl -s)
#   SRPERF_VPP_IN_IF        VPP's name of the in-port (e.g. host-s0)
#   SRPERF_VPP_OUT_IF       VPP's name of the out-port (e.g. host-s1)
#   SRPERF_VPP_AF_PACKET    setup: 1 = create af_packet host-interfaces on the kernel
#                           ports SRPERF_IN_IF/SRPERF_OUT_IF, 0 = VPP owns the ports
#   SRPERF_VPP_RX_MODE      setup: rx-mode of the ports: polling | interrupt | adaptive
#                           (af_packet ports start in interrupt mode)
#   SRPERF_VPP_BSID         binding SID of the headend policies
#   SRPERF_IN_IF SRPERF_OUT_IF   kernel names of the ports (setup with af_packet)
#   SRPERF_SUT_IN_IP6 SRPERF_SUT_OUT_IP6 SRPERF_SUT_IN_IP4 SRPERF_SUT_OUT_IP4
#   SRPERF_LINK_PREFIX_LEN6 SRPERF_LINK_PREFIX_LEN4   link addresses (setup)
#   SRPERF_TESTER_TX_IP6 SRPERF_TESTER_TX_IP4 SRPERF_TESTER_TX_MAC
#   SRPERF_TESTER_RX_IP6 SRPERF_TESTER_RX_IP4 SRPERF_TESTER_RX_MAC  neighbours (setup);
#                           the RX ones are the next hops of every behavior
#   SRPERF_TUNSRC           encaps source address (setup)
#   SRPERF_DST_PREFIX6 SRPERF_DST_PREFIX4 SRPERF_SID_SUT SRPERF_SID_PREFIX SRPERF_TABLE
#   SRPERF_ENCAP_SEGS SRPERF_INSERT_SEGS SRPERF_B6_SEGS   comma-separated SID lists
#   SRPERF_VNF_IF_PREFIX SRPERF_VNF_SID_BASE SRPERF_VNF_MAC_PREFIX SRPERF_VNF_IP6
#                           the proxies' VNFs (as ebpf.sh: VNF i is the kernel
#                           interface <prefix><i> of this namespace, SID <base><i+1 hex>)
#   SRPERF_AS_SRC SRPERF_AS_SEGS   End.AS: outer source and SIDs after the VNF's own
#
# Exit status: 0 done (quiet); 1 a command failed or printed an error (stderr
# names the command and VPP's text); 2 usage error; 3 unsupported: the proxy
# plugin of the behavior is not loaded.  After 1 or 3 nothing is configured.

set -euo pipefail

readonly PROG="vpp.sh"
readonly BEHAVIORS=(ipv4 ipv6 h_insert h_encaps h_encaps_v4 h_encaps_l2 end end_x end_t
	end_dx2 end_dx4 end_dx6 end_dt4 end_dt6 end_b6_encaps end_b6 end_ad end_as end_am)
readonly HELPERS=(setup version)
# shellcheck source=SCRIPTDIR/contract.bash
source "$(dirname "${BASH_SOURCE[0]}")/contract.bash"

# What clean reads, so what every behavior needs (it cleans first).
readonly CLEAN_VARS=(SRPERF_VPPCTL SRPERF_VPP_CLI_SOCK SRPERF_VPP_IN_IF SRPERF_VPP_OUT_IF SRPERF_VPP_BSID
	SRPERF_SID_SUT SRPERF_SID_PREFIX SRPERF_DST_PREFIX6 SRPERF_DST_PREFIX4
	SRPERF_TESTER_RX_IP6 SRPERF_TESTER_RX_IP4 SRPERF_TABLE SRPERF_VNF_IF_PREFIX
	SRPERF_VNF_SID_BASE)
readonly PROXY_VARS=(SRPERF_VNF_IF_PREFIX SRPERF_VNF_SID_BASE SRPERF_VNF_MAC_PREFIX
	SRPERF_VNF_IP6 SRPERF_SID_PREFIX SRPERF_TESTER_RX_IP6 SRPERF_VPP_OUT_IF SRPERF_VPP_RX_MODE)
readonly MAX_VNFS=256

# vpp_missing: why this SUT cannot run vppctl against VPP (nothing when it can).
vpp_missing() {
	if ! command -v "$SRPERF_VPPCTL" >/dev/null 2>&1; then
		echo "no vppctl on the SUT (SRPERF_VPPCTL=$SRPERF_VPPCTL)"
	elif [[ ! -S "$SRPERF_VPP_CLI_SOCK" ]]; then
		echo "no VPP CLI socket $SRPERF_VPP_CLI_SOCK (VPP is not running)"
	fi
}

# ready: exit 3 unless VPP answers on its CLI socket (checked after `need`,
# before anything changes).
ready() {
	local why
	why="$(vpp_missing)"
	if [[ -n "$why" ]]; then
		unsupported "$why"
	fi
}

# vpp CMD...: one configuration command; VPP printing anything means it failed.
vpp() {
	local out rc=0
	out="$("$SRPERF_VPPCTL" -s "$SRPERF_VPP_CLI_SOCK" "$@" 2>&1)" || rc=$?
	out="$(printf '%s' "$out" | tr '\n' ' ')"
	out="${out%"${out##*[![:space:]]}"}"
	if ((rc != 0)) || [[ -n "$out" ]]; then
		die "vppctl $* failed: ${out:-exit status $rc}"
	fi
}

# show CMD...: a show command's output on stdout (exit 1 if vppctl itself fails).
show() {
	local out rc=0
	out="$("$SRPERF_VPPCTL" -s "$SRPERF_VPP_CLI_SOCK" "$@" 2>&1)" || rc=$?
	if ((rc != 0)); then
		die "vppctl $* failed: ${out:-exit status $rc}"
	fi
	printf '%s\n' "$out"
}

# mentions TEXT CMD...: true when the show command's output holds the word TEXT.
mentions() {
	local text="$1" out
	shift
	out="$(show "$@")"
	grep -qwF -- "$text" <<<"$out"
}

# segs_args CSV: "next S1 next S2 ..." for `sr policy add` / `end.as`.
segs_args() {
	local -a segs out=()
	local s
	IFS=, read -r -a segs <<<"$1"
	for s in "${segs[@]}"; do
		out+=(next "$s")
	done
	printf '%s\n' "${out[@]}"
}

vnf_sid() { printf '%s%x\n' "$SRPERF_VNF_SID_BASE" "$(($1 + 1))"; }
vnf_mac() {
	printf '%s:%02x:%02x\n' "$SRPERF_VNF_MAC_PREFIX" "$((($1 >> 8) & 255))" "$(($1 & 255))"
}

# vnf_count: how many VNF interfaces <prefix>0, 1, ... exist in this namespace.
vnf_count() {
	local i=0
	while ((i < MAX_VNFS)) && ip link show dev "${SRPERF_VNF_IF_PREFIX}$i" >/dev/null 2>&1; do
		i=$((i + 1))
	done
	echo "$i"
}

# table_exists FAMILY(4|6) N: VPP has table N (its summary names "ipv6-VRF:N,"; a
# missing table's summary is empty).
table_exists() {
	local out
	if [[ "$1" == 4 ]]; then
		out="$(show show ip fib table "$2" summary)"
	else
		out="$(show show ip6 fib table "$2" summary)"
	fi
	grep -qF -- "VRF:$2," <<<"$out"
}

# route FAMILY(4|6) PREFIX NH IF [TABLE]: a route of this script.
route() {
	local -a table=()
	if [[ -n "${5:-}" ]]; then table=(table "$5"); fi
	vpp ip route add "$2" "${table[@]}" via "$3" "$4"
}

sid_route() { route 6 "$SRPERF_SID_PREFIX" "$SRPERF_TESTER_RX_IP6" "$SRPERF_VPP_OUT_IF" "$@"; }
dst6_route() { route 6 "$SRPERF_DST_PREFIX6" "$SRPERF_TESTER_RX_IP6" "$SRPERF_VPP_OUT_IF" "$@"; }
dst4_route() { route 4 "$SRPERF_DST_PREFIX4" "$SRPERF_TESTER_RX_IP4" "$SRPERF_VPP_OUT_IF" "$@"; }

# tables: create SRPERF_TABLE (IPv4 and IPv6) before any localsid names it.
tables() {
	vpp ip table add "$SRPERF_TABLE"
	vpp ip6 table add "$SRPERF_TABLE"
}

localsid() {
	vpp sr localsid address "$SRPERF_SID_SUT" behavior "$@"
}

# policy BSID encap|insert SEGS_CSV
policy() {
	local -a next
	mapfile -t next < <(segs_args "$3")
	vpp sr policy add bsid "$1" "${next[@]}" "$2"
}

# del_routes TABLE: delete this script's routes from TABLE ("" = the default
# table); deleting a route VPP does not have is a no-op.
del_routes() {
	local -a t=()
	if [[ -n "$1" ]]; then t=(table "$1"); fi
	vpp ip route del "$SRPERF_SID_PREFIX" "${t[@]}" via "$SRPERF_TESTER_RX_IP6" "$SRPERF_VPP_OUT_IF"
	vpp ip route del "$SRPERF_DST_PREFIX6" "${t[@]}" via "$SRPERF_TESTER_RX_IP6" "$SRPERF_VPP_OUT_IF"
	vpp ip route del "$SRPERF_DST_PREFIX4" "${t[@]}" via "$SRPERF_TESTER_RX_IP4" "$SRPERF_VPP_OUT_IF"
}

clean() {
	need "${CLEAN_VARS[@]}"
	local i sid ifname
	# Without vppctl or a running VPP there is nothing of ours to remove.
	if [[ -n "$(vpp_missing)" ]]; then
		return 0
	fi
	# Steering first (it references the policies), then policies, then localsids.
	if mentions "$SRPERF_DST_PREFIX6" show sr steering-policies; then
		vpp sr steer del l3 "$SRPERF_DST_PREFIX6"
	fi
	if mentions "$SRPERF_DST_PREFIX4" show sr steering-policies; then
		vpp sr steer del l3 "$SRPERF_DST_PREFIX4"
	fi
	if mentions "$SRPERF_VPP_IN_IF" show sr steering-policies; then
		vpp sr steer del l2 "$SRPERF_VPP_IN_IF"
	fi
	for sid in "$SRPERF_VPP_BSID" "$SRPERF_SID_SUT"; do
		if mentions "$sid" show sr policies; then
			vpp sr policy del bsid "$sid"
		fi
	done
	local -a sids=("$SRPERF_SID_SUT")
	for ((i = 0; i < MAX_VNFS; i++)); do
		ifname="host-${SRPERF_VNF_IF_PREFIX}$i"
		mentions "$ifname" show interface || break
		sids+=("$(vnf_sid "$i")")
	done
	local localsids
	localsids="$(show show sr localsids)"
	for sid in "${sids[@]}"; do
		if grep -qwF -- "$sid" <<<"$localsids"; then
			vpp sr localsid del address "$sid"
		fi
	done
	for ((i = 0; i < MAX_VNFS; i++)); do
		mentions "host-${SRPERF_VNF_IF_PREFIX}$i" show interface || break
		vpp delete host-interface name "${SRPERF_VNF_IF_PREFIX}$i"
	done
	del_routes ""
	if table_exists 6 "$SRPERF_TABLE"; then
		vpp ip route del "$SRPERF_SID_PREFIX" table "$SRPERF_TABLE" via "$SRPERF_TESTER_RX_IP6" \
			"$SRPERF_VPP_OUT_IF"
		vpp ip route del "$SRPERF_DST_PREFIX6" table "$SRPERF_TABLE" via \
			"$SRPERF_TESTER_RX_IP6" "$SRPERF_VPP_OUT_IF"
		vpp ip6 table del "$SRPERF_TABLE"
	fi
	if table_exists 4 "$SRPERF_TABLE"; then
		vpp ip route del "$SRPERF_DST_PREFIX4" table "$SRPERF_TABLE" via \
			"$SRPERF_TESTER_RX_IP4" "$SRPERF_VPP_OUT_IF"
		vpp ip table del "$SRPERF_TABLE"
	fi
}

# --- helpers --------------------------------------------------------------------

# addr IF ADDR/LEN: give IF the address unless it has it already.
addr() {
	if ! mentions "$2" show interface address "$1"; then
		vpp set interface ip address "$1" "$2"
	fi
}

# host_if KERNEL_IF: the af_packet host-interface on it (VPP prints its name), with
# the kernel interface's MAC (VPP would pick a random one) and no checksum/GSO
# offload.
host_if() {
	local out mac
	if mentions "host-$1" show interface; then
		return 0
	fi
	mac="$(ip -o link show dev "$1" 2>/dev/null | sed -n 's|.* link/ether \([0-9a-f:]*\) .*|\1|p')"
	[[ -n "$mac" ]] || die "no Ethernet interface $1 in this namespace"
	out="$(show create host-interface name "$1" hw-addr "$mac" cksum-gso-disable)"
	out="${out%"${out##*[![:space:]]}"}"
	if [[ "$out" != "host-$1" ]]; then
		die "vppctl create host-interface name $1 hw-addr $mac cksum-gso-disable failed: $out"
	fi
}

setup() {
	need SRPERF_VPPCTL SRPERF_VPP_CLI_SOCK SRPERF_VPP_AF_PACKET SRPERF_VPP_IN_IF SRPERF_VPP_OUT_IF \
		SRPERF_SUT_IN_IP6 SRPERF_SUT_OUT_IP6 SRPERF_SUT_IN_IP4 SRPERF_SUT_OUT_IP4 \
		SRPERF_LINK_PREFIX_LEN6 SRPERF_LINK_PREFIX_LEN4 SRPERF_TESTER_TX_IP6 \
		SRPERF_TESTER_TX_IP4 SRPERF_TESTER_TX_MAC SRPERF_TESTER_RX_IP6 SRPERF_TESTER_RX_IP4 \
		SRPERF_TESTER_RX_MAC SRPERF_TUNSRC SRPERF_IN_IF SRPERF_OUT_IF SRPERF_VPP_RX_MODE
	case "$SRPERF_VPP_RX_MODE" in
	polling | interrupt | adaptive) ;;
	*) usage_error "SRPERF_VPP_RX_MODE must be polling, interrupt or adaptive, not '$SRPERF_VPP_RX_MODE'" ;;
	esac
	case "$SRPERF_VPP_AF_PACKET" in
	1)
		if [[ "$SRPERF_VPP_IN_IF" != "host-$SRPERF_IN_IF" ||
			"$SRPERF_VPP_OUT_IF" != "host-$SRPERF_OUT_IF" ]]; then
			usage_error "SRPERF_VPP_IN_IF/SRPERF_VPP_OUT_IF must be host-<SRPERF_IN_IF>/host-<SRPERF_OUT_IF> with SRPERF_VPP_AF_PACKET=1"
		fi
		ready
		host_if "$SRPERF_IN_IF"
		host_if "$SRPERF_OUT_IF"
		;;
	0) ready ;;
	*) usage_error "SRPERF_VPP_AF_PACKET must be 1 or 0, not '$SRPERF_VPP_AF_PACKET'" ;;
	esac
	local ifname
	for ifname in "$SRPERF_VPP_IN_IF" "$SRPERF_VPP_OUT_IF"; do
		vpp set interface state "$ifname" up
		vpp set interface rx-mode "$ifname" "$SRPERF_VPP_RX_MODE"
	done
	addr "$SRPERF_VPP_IN_IF" "$SRPERF_SUT_IN_IP6/$SRPERF_LINK_PREFIX_LEN6"
	addr "$SRPERF_VPP_IN_IF" "$SRPERF_SUT_IN_IP4/$SRPERF_LINK_PREFIX_LEN4"
	addr "$SRPERF_VPP_OUT_IF" "$SRPERF_SUT_OUT_IP6/$SRPERF_LINK_PREFIX_LEN6"
	addr "$SRPERF_VPP_OUT_IF" "$SRPERF_SUT_OUT_IP4/$SRPERF_LINK_PREFIX_LEN4"
	# No router advertisements towards the tester: they would be counted as traffic.
	vpp ip6 nd "$SRPERF_VPP_IN_IF" ra-suppress
	vpp ip6 nd "$SRPERF_VPP_OUT_IF" ra-suppress
	vpp set ip neighbor "$SRPERF_VPP_IN_IF" "$SRPERF_TESTER_TX_IP6" "$SRPERF_TESTER_TX_MAC" static
	vpp set ip neighbor "$SRPERF_VPP_IN_IF" "$SRPERF_TESTER_TX_IP4" "$SRPERF_TESTER_TX_MAC" static
	vpp set ip neighbor "$SRPERF_VPP_OUT_IF" "$SRPERF_TESTER_RX_IP6" "$SRPERF_TESTER_RX_MAC" static
	vpp set ip neighbor "$SRPERF_VPP_OUT_IF" "$SRPERF_TESTER_RX_IP4" "$SRPERF_TESTER_RX_MAC" static
	vpp set sr encaps source addr "$SRPERF_TUNSRC"
}

version() {
	need SRPERF_VPPCTL SRPERF_VPP_CLI_SOCK
	ready
	local out
	out="$(show show version)"
	out="${out%%$'\n'*}"
	if [[ "$out" != vpp* ]]; then
		die "vppctl show version: unexpected answer: $out"
	fi
	printf '%s\n' "$out"
}

# --- plain forwarding ---------------------------------------------------------------

ipv6() {
	need "${CLEAN_VARS[@]}"
	ready
	clean
	dst6_route
}

ipv4() {
	need "${CLEAN_VARS[@]}"
	ready
	clean
	dst4_route
}

# --- SR policy headend --------------------------------------------------------------

h_insert() {
	need "${CLEAN_VARS[@]}" SRPERF_INSERT_SEGS
	ready
	clean
	sid_route
	policy "$SRPERF_VPP_BSID" insert "$SRPERF_INSERT_SEGS"
	vpp sr steer l3 "$SRPERF_DST_PREFIX6" via bsid "$SRPERF_VPP_BSID"
}

h_encaps() {
	need "${CLEAN_VARS[@]}" SRPERF_ENCAP_SEGS
	ready
	clean
	sid_route
	policy "$SRPERF_VPP_BSID" encap "$SRPERF_ENCAP_SEGS"
	vpp sr steer l3 "$SRPERF_DST_PREFIX6" via bsid "$SRPERF_VPP_BSID"
}

h_encaps_v4() {
	need "${CLEAN_VARS[@]}" SRPERF_ENCAP_SEGS
	ready
	clean
	sid_route
	policy "$SRPERF_VPP_BSID" encap "$SRPERF_ENCAP_SEGS"
	vpp sr steer l3 "$SRPERF_DST_PREFIX4" via bsid "$SRPERF_VPP_BSID"
}

# H.Encaps.L2: VPP steers every frame received on the in-port (the port is
# put in L2 mode by the steering rule).
h_encaps_l2() {
	need "${CLEAN_VARS[@]}" SRPERF_ENCAP_SEGS
	ready
	clean
	sid_route
	policy "$SRPERF_VPP_BSID" encap "$SRPERF_ENCAP_SEGS"
	vpp sr steer l2 "$SRPERF_VPP_IN_IF" via bsid "$SRPERF_VPP_BSID"
}

# --- SRv6 endpoints -----------------------------------------------------------------

end() {
	need "${CLEAN_VARS[@]}"
	ready
	clean
	sid_route
	localsid end
}

end_x() {
	need "${CLEAN_VARS[@]}"
	ready
	clean
	sid_route
	localsid end.x "$SRPERF_VPP_OUT_IF" "$SRPERF_TESTER_RX_IP6"
}

# End.T: the next SID is routed in SRPERF_TABLE only.
end_t() {
	need "${CLEAN_VARS[@]}"
	ready
	clean
	tables
	sid_route "$SRPERF_TABLE"
	localsid end.t "$SRPERF_TABLE"
}

# End.B6.Encaps / End.B6 (insert): the SUT's SID is the binding SID of a policy.
end_b6_encaps() {
	need "${CLEAN_VARS[@]}" SRPERF_B6_SEGS
	ready
	clean
	sid_route
	policy "$SRPERF_SID_SUT" encap "$SRPERF_B6_SEGS"
}

end_b6() {
	need "${CLEAN_VARS[@]}" SRPERF_B6_SEGS
	ready
	clean
	sid_route
	policy "$SRPERF_SID_SUT" insert "$SRPERF_B6_SEGS"
}

# --- SRv6 endpoints with decapsulation ------------------------------------------------

end_dx2() {
	need "${CLEAN_VARS[@]}"
	ready
	clean
	localsid end.dx2 "$SRPERF_VPP_OUT_IF"
}

end_dx4() {
	need "${CLEAN_VARS[@]}"
	ready
	clean
	localsid end.dx4 "$SRPERF_VPP_OUT_IF" "$SRPERF_TESTER_RX_IP4"
}

end_dx6() {
	need "${CLEAN_VARS[@]}"
	ready
	clean
	localsid end.dx6 "$SRPERF_VPP_OUT_IF" "$SRPERF_TESTER_RX_IP6"
}

end_dt4() {
	need "${CLEAN_VARS[@]}"
	ready
	clean
	tables
	dst4_route "$SRPERF_TABLE"
	localsid end.dt4 "$SRPERF_TABLE"
}

end_dt6() {
	need "${CLEAN_VARS[@]}"
	ready
	clean
	tables
	dst6_route "$SRPERF_TABLE"
	localsid end.dt6 "$SRPERF_TABLE"
}

# --- SR proxies (plugins) ----------------------------------------------------------------

# proxy_plugin NAME: exit 3 when VPP has not loaded the plugin NAME (e.g. srv6ad).
proxy_plugin() {
	if ! mentions "${1}_plugin.so" show plugins; then
		unsupported "VPP plugin ${1}_plugin.so is not loaded ('show plugins' does not list it)"
	fi
}

# proxy BEHAVIOR ARGS...: one localsid per VNF, on its own host-interface, with
# the VNF's MAC as a static neighbour.
proxy() {
	local behavior="$1" i n ifname
	shift
	n="$(vnf_count)"
	if ((n == 0)); then
		die "no VNF interface ${SRPERF_VNF_IF_PREFIX}0 in this namespace"
	fi
	sid_route
	for ((i = 0; i < n; i++)); do
		ifname="host-${SRPERF_VNF_IF_PREFIX}$i"
		host_if "${SRPERF_VNF_IF_PREFIX}$i"
		vpp set interface state "$ifname" up
		vpp set interface rx-mode "$ifname" "$SRPERF_VPP_RX_MODE"
		vpp enable ip6 interface "$ifname"
		vpp set ip neighbor "$ifname" "$SRPERF_VNF_IP6" "$(vnf_mac "$i")" static
		vpp sr localsid address "$(vnf_sid "$i")" behavior "$behavior" nh "$SRPERF_VNF_IP6" \
			oif "$ifname" iif "$ifname" "$@"
	done
}

end_ad() {
	need "${CLEAN_VARS[@]}" "${PROXY_VARS[@]}"
	ready
	clean
	proxy_plugin srv6ad
	proxy end.ad
}

end_as() {
	need "${CLEAN_VARS[@]}" "${PROXY_VARS[@]}" SRPERF_AS_SRC SRPERF_AS_SEGS
	ready
	clean
	proxy_plugin srv6as
	local -a next
	mapfile -t next < <(segs_args "$SRPERF_AS_SEGS")
	proxy end.as src "$SRPERF_AS_SRC" "${next[@]}"
}

end_am() {
	need "${CLEAN_VARS[@]}" "${PROXY_VARS[@]}"
	ready
	clean
	proxy_plugin srv6am
	proxy end.am
}

# --- dispatch (contract.bash) -------------------------------------------------------

main "$@"
