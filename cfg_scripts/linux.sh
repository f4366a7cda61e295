#!/usr/bin/env bash
# srperf CFG script for the Linux kernel forwarder.
#
# Usage: bash linux.sh FUNCTION      (bash linux.sh functions lists them)
#   FUNCTION is `clean` or one behavior of the catalogue (srperf/behaviors.py):
#   ipv4 ipv6 h_insert h_encaps h_encaps_v4 h_encaps_l2 h_encaps_red
#   h_encaps_l2_red end end_x end_t end_dx2 end_dx4 end_dx6 end_dt4 end_dt6
#   end_dt6_vrf end_dt46 end_b6_encaps end_next_csid
#   h_encaps_flows (loss monitoring's ingress node: H.Encaps, one SID list per flow)
#   (catalogue entry end_dt46_v4 is end_dt46 measured with inner IPv4)
#
# The contract (exit codes, no defaults, idempotence, `functions`) is
# cfg_scripts/README.md.  Every behavior function checks all its variables,
# then calls `clean`, then installs the routes the behavior needs; running a
# function twice gives the same state.  The SUT's base setup (addresses, static
# neighbours, sysctls, `ip sr tunsrc`) belongs to the testbed: this script
# neither needs to nor may change it.
#
# Exit status: 0 success (quiet); 1 a command failed (stderr names it);
# 2 usage error (unknown function, missing variable: stderr names it); 3 the
# running kernel cannot do the behavior: stderr says
# `unsupported: <step>: <kernel's error>`.  After 1 or 3 nothing is configured.
#
# Parameters come ONLY from the environment (srperf.behaviors.cfg_env builds
# them from the testbed's Addressing); every function needs CLEAN_VARS (below)
# and the variables its first `need` line adds:
#   SRPERF_IN_IF             SUT port facing the tester's tx port (e.g. s0)
#   SRPERF_OUT_IF            SUT port facing the tester's rx port (e.g. s1)
#   SRPERF_TESTER_RX_IP6     IPv6 next hop towards the tester rx port
#   SRPERF_TESTER_RX_IP4     IPv4 next hop towards the tester rx port
#   SRPERF_DST_PREFIX6       prefix of the test traffic's IPv6 destination
#   SRPERF_DST_PREFIX4       prefix of the test traffic's IPv4 destination
#   SRPERF_SID_SUT           the SUT's local SID (no C-SID behaviors)
#   SRPERF_SID_PREFIX        prefix of all other SIDs (routed to the tester rx)
#   SRPERF_ENCAP_SEGS        comma-separated SID list of the H.Encaps* policies
#   SRPERF_PM_ROUTES         h_encaps_flows: one H.Encaps route per monitored flow,
#                            DST=SID,SID;DST=SID,SID;... (srperf.pm.cases)
#   SRPERF_INSERT_SEGS       comma-separated SID list of the H.Insert policy
#   SRPERF_B6_SEGS           comma-separated SID list of the End.B6.Encaps policy
#   SRPERF_TABLE             routing table of End.T / End.DT* (number)
#   SRPERF_VRF_DEV           name of the VRF device End.DT4/DT6 (vrftable)/DT46 need
#   SRPERF_CSID_PREFIX       the SUT's C-SID (locator block + function)/len
#   SRPERF_CSID_BLOCK_PREFIX the C-SID locator block/len (routed to the tester rx)
#   SRPERF_CSID_LBLEN        C-SID locator block length, bits
#   SRPERF_CSID_NFLEN        C-SID node function length, bits
# cfg_env() exports more SRPERF_* variables (MACs, tunsrc, ...) for other
# forwarders' scripts; this script does not use them.

set -euo pipefail

readonly PROG="linux.sh"
readonly BEHAVIORS=(ipv4 ipv6 h_insert h_encaps h_encaps_v4 h_encaps_l2
	h_encaps_red h_encaps_l2_red end end_x end_t end_dx2 end_dx4 end_dx6
	end_dt4 end_dt6 end_dt6_vrf end_dt46 end_b6_encaps end_next_csid h_encaps_flows)
readonly HELPERS=()
# shellcheck source=SCRIPTDIR/contract.bash
source "$(dirname "${BASH_SOURCE[0]}")/contract.bash"

# What clean reads, so what every behavior needs (it cleans first).
readonly CLEAN_VARS=(SRPERF_DST_PREFIX6 SRPERF_DST_PREFIX4 SRPERF_SID_SUT SRPERF_SID_PREFIX
	SRPERF_TESTER_RX_IP4 SRPERF_TABLE SRPERF_VRF_DEV SRPERF_CSID_PREFIX
	SRPERF_CSID_BLOCK_PREFIX)

# run CMD...: run an iproute2 command; on failure report it and exit 1.
run() {
	local err rc=0
	err="$("$@" 2>&1 >/dev/null)" || rc=$?
	if ((rc != 0)); then
		die "$* failed: ${err:-exit status $rc}"
	fi
}

# feature STEP CMD...: run a command whose failure means the kernel lacks a
# feature the behavior needs: exit 3 with the kernel's own error message (the
# EXIT trap then undoes what was configured).
feature() {
	local step="$1" err rc=0
	shift
	err="$("$@" 2>&1 >/dev/null)" || rc=$?
	if ((rc != 0)); then
		err="$(printf '%s' "$err" | tr '\n' ' ')"
		err="${err%"${err##*[![:space:]]}"}"
		unsupported "$step: ${err:-exit status $rc} (from: $*)"
	fi
}

# del_routes FAMILY PREFIX TABLE: delete every route of exactly PREFIX in TABLE;
# nothing to do when there is none (or when the table does not exist).
del_routes() {
	local family="$1" prefix="$2" table="$3" tries=0
	while [[ -n "$(ip "-$family" route show exact "$prefix" table "$table" 2>/dev/null)" ]]; do
		run ip "-$family" route del "$prefix" table "$table"
		tries=$((tries + 1))
		if ((tries > 16)); then
			die "cannot delete route $prefix from table $table"
		fi
	done
}

# flush_within FAMILY PREFIX TABLE: delete every route inside PREFIX (more specific
# ones: h_encaps_flows' per-flow routes); nothing to do when there is none.
flush_within() {
	local family="$1" prefix="$2" table="$3"
	if [[ -n "$(ip "-$family" route show root "$prefix" table "$table" 2>/dev/null)" ]]; then
		run ip "-$family" route flush root "$prefix" table "$table"
	fi
}

# Route every SID under SRPERF_SID_PREFIX (other than the SUT's) to the tester.
sid_route() {
	local table="${1:-main}"
	need SRPERF_SID_PREFIX SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF
	run ip -6 route add "$SRPERF_SID_PREFIX" via "$SRPERF_TESTER_RX_IP6" \
		dev "$SRPERF_OUT_IF" table "$table"
}

dst6_route() {
	local table="${1:-main}"
	need SRPERF_DST_PREFIX6 SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF
	run ip -6 route add "$SRPERF_DST_PREFIX6" via "$SRPERF_TESTER_RX_IP6" \
		dev "$SRPERF_OUT_IF" table "$table"
}

dst4_route() {
	local table="${1:-main}"
	need SRPERF_DST_PREFIX4 SRPERF_TESTER_RX_IP4 SRPERF_OUT_IF
	run ip -4 route add "$SRPERF_DST_PREFIX4" via "$SRPERF_TESTER_RX_IP4" \
		dev "$SRPERF_OUT_IF" table "$table"
}

# local_sid ACTION ARGS...: install the SUT's SID with a seg6local action.
local_sid() {
	need SRPERF_SID_SUT SRPERF_OUT_IF
	run ip -6 route add "$SRPERF_SID_SUT/128" encap seg6local action "$@" \
		dev "$SRPERF_OUT_IF"
}

clean() {
	need "${CLEAN_VARS[@]}"
	local table
	del_routes 4 "$SRPERF_TESTER_RX_IP4/32" main
	for table in main "$SRPERF_TABLE"; do
		del_routes 6 "$SRPERF_SID_SUT/128" "$table"
		del_routes 6 "$SRPERF_SID_PREFIX" "$table"
		del_routes 6 "$SRPERF_DST_PREFIX6" "$table"
		flush_within 6 "$SRPERF_DST_PREFIX6" "$table"
		del_routes 4 "$SRPERF_DST_PREFIX4" "$table"
		del_routes 6 "$SRPERF_CSID_PREFIX" "$table"
		del_routes 6 "$SRPERF_CSID_BLOCK_PREFIX" "$table"
	done
	if ip link show dev "$SRPERF_VRF_DEV" >/dev/null 2>&1; then
		run ip link del dev "$SRPERF_VRF_DEV"
		# vrf_table turned strict mode on with the device: back to the kernel's default.
		if [[ -e /proc/sys/net/vrf/strict_mode ]]; then
			run sysctl -qw net.vrf.strict_mode=0
		fi
	fi
}

# --- plain forwarding ---------------------------------------------------------

ipv6() {
	need "${CLEAN_VARS[@]}" SRPERF_DST_PREFIX6 SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF
	clean
	dst6_route
}

ipv4() {
	need "${CLEAN_VARS[@]}" SRPERF_DST_PREFIX4 SRPERF_TESTER_RX_IP4 SRPERF_OUT_IF
	clean
	dst4_route
}

# --- SR policy headend ----------------------------------------------------------

# encap_route FAMILY PREFIX MODE SEGS: steer PREFIX into a seg6 policy.
encap_route() {
	need SRPERF_OUT_IF
	run ip "-$1" route add "$2" encap seg6 mode "$3" segs "$4" dev "$SRPERF_OUT_IF"
}

h_insert() {
	need "${CLEAN_VARS[@]}" SRPERF_INSERT_SEGS SRPERF_DST_PREFIX6 SRPERF_SID_PREFIX \
		SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF
	clean
	sid_route
	encap_route 6 "$SRPERF_DST_PREFIX6" inline "$SRPERF_INSERT_SEGS"
}

h_encaps() {
	need "${CLEAN_VARS[@]}" SRPERF_ENCAP_SEGS SRPERF_DST_PREFIX6 SRPERF_SID_PREFIX \
		SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF
	clean
	sid_route
	encap_route 6 "$SRPERF_DST_PREFIX6" encap "$SRPERF_ENCAP_SEGS"
}

h_encaps_v4() {
	need "${CLEAN_VARS[@]}" SRPERF_ENCAP_SEGS SRPERF_DST_PREFIX4 SRPERF_SID_PREFIX \
		SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF
	clean
	sid_route
	encap_route 4 "$SRPERF_DST_PREFIX4" encap "$SRPERF_ENCAP_SEGS"
}

h_encaps_red() {
	need "${CLEAN_VARS[@]}" SRPERF_ENCAP_SEGS SRPERF_DST_PREFIX6 SRPERF_SID_PREFIX \
		SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF
	clean
	sid_route
	encap_route 6 "$SRPERF_DST_PREFIX6" encap.red "$SRPERF_ENCAP_SEGS"
}

# The ingress node of loss monitoring: H.Encaps as h_encaps does, plus one route per
# monitored flow (its destination, a /128 inside SRPERF_DST_PREFIX6) with the flow's
# own SID list, so N flows leave with N distinct SID lists.
h_encaps_flows() {
	need "${CLEAN_VARS[@]}" SRPERF_ENCAP_SEGS SRPERF_PM_ROUTES SRPERF_DST_PREFIX6 \
		SRPERF_SID_PREFIX SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF
	local -a entries
	local entry
	IFS=';' read -r -a entries <<<"$SRPERF_PM_ROUTES"
	for entry in "${entries[@]}"; do
		if [[ ! "$entry" =~ ^[0-9a-fA-F:]+=[0-9a-fA-F:,]+$ ]]; then
			usage_error "SRPERF_PM_ROUTES: '$entry' is not DST=SID,SID"
		fi
	done
	clean
	sid_route
	encap_route 6 "$SRPERF_DST_PREFIX6" encap "$SRPERF_ENCAP_SEGS"
	for entry in "${entries[@]}"; do
		encap_route 6 "${entry%%=*}/128" encap "${entry#*=}"
	done
}

# H.Encaps.L2: the kernel pushes the received Ethernet header back and
# encapsulates the whole frame of packets routed to the destination prefix.
h_encaps_l2() {
	need "${CLEAN_VARS[@]}" SRPERF_ENCAP_SEGS SRPERF_DST_PREFIX6 SRPERF_SID_PREFIX \
		SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF
	clean
	sid_route
	encap_route 6 "$SRPERF_DST_PREFIX6" l2encap "$SRPERF_ENCAP_SEGS"
}

h_encaps_l2_red() {
	need "${CLEAN_VARS[@]}" SRPERF_ENCAP_SEGS SRPERF_DST_PREFIX6 SRPERF_SID_PREFIX \
		SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF
	clean
	sid_route
	encap_route 6 "$SRPERF_DST_PREFIX6" l2encap.red "$SRPERF_ENCAP_SEGS"
}

# --- SRv6 endpoint, no decapsulation ---------------------------------------------

end() {
	need "${CLEAN_VARS[@]}" SRPERF_SID_SUT SRPERF_SID_PREFIX SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF
	clean
	sid_route
	local_sid End
}

end_x() {
	need "${CLEAN_VARS[@]}" SRPERF_SID_SUT SRPERF_SID_PREFIX SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF
	clean
	sid_route
	local_sid End.X nh6 "$SRPERF_TESTER_RX_IP6"
}

# End.T: the next SID is routed in SRPERF_TABLE only, so a lookup in the main
# table would not forward the packet.
end_t() {
	need "${CLEAN_VARS[@]}" SRPERF_TABLE SRPERF_SID_SUT SRPERF_SID_PREFIX SRPERF_TESTER_RX_IP6 \
		SRPERF_OUT_IF
	clean
	sid_route "$SRPERF_TABLE"
	local_sid End.T table "$SRPERF_TABLE"
}

end_b6_encaps() {
	need "${CLEAN_VARS[@]}" SRPERF_B6_SEGS SRPERF_SID_SUT SRPERF_SID_PREFIX \
		SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF
	clean
	sid_route
	local_sid End.B6.Encaps srh segs "$SRPERF_B6_SEGS"
}

# End with the NEXT-C-SID flavor: the SUT's C-SID prefix (block + function),
# every other C-SID of the block routed to the tester.
end_next_csid() {
	need "${CLEAN_VARS[@]}" SRPERF_CSID_PREFIX SRPERF_CSID_BLOCK_PREFIX SRPERF_CSID_LBLEN \
		SRPERF_CSID_NFLEN SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF
	clean
	run ip -6 route add "$SRPERF_CSID_BLOCK_PREFIX" via "$SRPERF_TESTER_RX_IP6" \
		dev "$SRPERF_OUT_IF"
	run ip -6 route add "$SRPERF_CSID_PREFIX" encap seg6local action End \
		flavors next-csid lblen "$SRPERF_CSID_LBLEN" nflen "$SRPERF_CSID_NFLEN" \
		dev "$SRPERF_OUT_IF"
}

# --- SRv6 endpoint with decapsulation ---------------------------------------------

end_dx2() {
	need "${CLEAN_VARS[@]}" SRPERF_SID_SUT SRPERF_OUT_IF
	clean
	local_sid End.DX2 oif "$SRPERF_OUT_IF"
}

# End.DX4 looks nh4 up and, when the route found has no gateway (nh4 is on a
# connected subnet), resolves the neighbour of the inner packet's destination
# instead of nh4.  A host route to nh4 through nh4 itself makes the kernel
# cross-connect to the adjacency nh4 as specified.
end_dx4() {
	need "${CLEAN_VARS[@]}" SRPERF_TESTER_RX_IP4 SRPERF_SID_SUT SRPERF_OUT_IF
	clean
	run ip -4 route add "$SRPERF_TESTER_RX_IP4/32" via "$SRPERF_TESTER_RX_IP4" \
		dev "$SRPERF_OUT_IF" onlink
	local_sid End.DX4 nh4 "$SRPERF_TESTER_RX_IP4"
}

end_dx6() {
	need "${CLEAN_VARS[@]}" SRPERF_TESTER_RX_IP6 SRPERF_SID_SUT SRPERF_OUT_IF
	clean
	local_sid End.DX6 nh6 "$SRPERF_TESTER_RX_IP6"
}

# End.DT6 in legacy mode (`table`): the inner destination is routed in
# SRPERF_TABLE only.  (end_dt6_vrf below is its `vrftable` mode.)
end_dt6() {
	need "${CLEAN_VARS[@]}" SRPERF_TABLE SRPERF_DST_PREFIX6 SRPERF_TESTER_RX_IP6 SRPERF_SID_SUT \
		SRPERF_OUT_IF
	clean
	dst6_route "$SRPERF_TABLE"
	local_sid End.DT6 table "$SRPERF_TABLE"
}

# vrf_table: the VRF device that End.DT4/End.DT6/End.DT46 (`vrftable`) require,
# with strict mode (the kernel refuses `vrftable` without it: one table, one VRF).
vrf_table() {
	need SRPERF_VRF_DEV SRPERF_TABLE
	feature "VRF device for table $SRPERF_TABLE" \
		ip link add "$SRPERF_VRF_DEV" type vrf table "$SRPERF_TABLE"
	run ip link set dev "$SRPERF_VRF_DEV" up
	feature "VRF strict mode" sysctl -qw net.vrf.strict_mode=1
}

end_dt4() {
	need "${CLEAN_VARS[@]}" SRPERF_VRF_DEV SRPERF_TABLE SRPERF_DST_PREFIX4 SRPERF_TESTER_RX_IP4 \
		SRPERF_SID_SUT SRPERF_OUT_IF
	clean
	vrf_table
	dst4_route "$SRPERF_TABLE"
	feature "End.DT4 vrftable $SRPERF_TABLE" \
		ip -6 route add "$SRPERF_SID_SUT/128" encap seg6local action End.DT4 \
		vrftable "$SRPERF_TABLE" dev "$SRPERF_OUT_IF"
}

# End.DT6 in VRF mode (RFC 8986 4.6 as the kernel implements it since 5.14): the
# inner destination is routed in the VRF device's table.
end_dt6_vrf() {
	need "${CLEAN_VARS[@]}" SRPERF_VRF_DEV SRPERF_TABLE SRPERF_DST_PREFIX6 SRPERF_TESTER_RX_IP6 \
		SRPERF_SID_SUT SRPERF_OUT_IF
	clean
	vrf_table
	dst6_route "$SRPERF_TABLE"
	feature "End.DT6 vrftable $SRPERF_TABLE" \
		ip -6 route add "$SRPERF_SID_SUT/128" encap seg6local action End.DT6 \
		vrftable "$SRPERF_TABLE" dev "$SRPERF_OUT_IF"
}

end_dt46() {
	need "${CLEAN_VARS[@]}" SRPERF_VRF_DEV SRPERF_TABLE SRPERF_DST_PREFIX4 SRPERF_TESTER_RX_IP4 \
		SRPERF_DST_PREFIX6 SRPERF_TESTER_RX_IP6 SRPERF_SID_SUT SRPERF_OUT_IF
	clean
	vrf_table
	dst4_route "$SRPERF_TABLE"
	dst6_route "$SRPERF_TABLE"
	feature "End.DT46 vrftable $SRPERF_TABLE" \
		ip -6 route add "$SRPERF_SID_SUT/128" encap seg6local action End.DT46 \
		vrftable "$SRPERF_TABLE" dev "$SRPERF_OUT_IF"
}

# --- dispatch (contract.bash) -------------------------------------------------------

main "$@"
