#!/usr/bin/env bash
# srperf CFG script for SRNK: the SR proxy in the Linux kernel (SRNKv1, SRNKv2)
# of the SRNK paper, configured with its patched iproute2.
#
# Usage: bash srnk.sh FUNCTION      (bash srnk.sh functions lists them)
#
# The contract (exit codes, no defaults, idempotence, `functions`) is
# cfg_scripts/README.md.  The commands are those of the SRNK paper's
# appendices (A: SRNKv1, B: SRNKv2) for the paper's `fdf1::2` / `veth0` /
# table 100, with the VNF's SID, interface and table of this testbed:
#
#   SRNKv1 (per VNF i, table T = SRPERF_SRNK_TABLE_BASE + i):
#     ip -6 route add SID/128 encap seg6local action End.AD chain inbound \
#         oif IF nh6 NH age AGE dev IF
#     ip -6 rule add iif IF table T
#     ip -6 route add default encap seg6local action End.AD chain fromVNF \
#         iif IF dev IF table T
#   SRNKv2 (per VNF i, then one rule):
#     ip -6 route add SID/128 encap seg6local action End.AD oif IF nh6 NH age AGE dev IF
#     ip -6 rule add seg6local-behaviour End.AD
#
# End.AS: the appendices give no command for it.  The thesis says End.AS is
# End.AD with the learning disabled and its segment list configured
# statically; this script configures it with End.AD's attributes, `age`
# replaced by mainline iproute2's `srh segs SEGS` (an assumption, marked as
# such: no published SRNK End.AS syntax was found).
#
# NH is the VNF's address on its link (SRPERF_VNF_IP6; the paper's VNF
# answered on its SID).  A kernel or iproute2 without SRNK refuses the first
# command: exit 3 with iproute2's error (`unsupported: ...`).
#
# Functions:
#   end_ad         the dynamic proxy, SRNKv1 or v2 (SRPERF_SRNK_VERSION), `age`
#   end_as         the static proxy, v1 or v2 (see above)
#   end_baseline   the paper's "End" baseline: no proxy, each VNF SID routed to its
#                  (SR-aware) VNF, which runs End
#   clean          remove this script's routes and rules
#
# Variables (no defaults):
#   SRPERF_VNF_IF_PREFIX SRPERF_VNF_SID_BASE SRPERF_VNF_IP6   the VNFs (as ebpf.sh:
#                          VNF i is interface <prefix><i>, SID <base><i+1 in hex>)
#   SRPERF_SID_PREFIX SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF   route of the SIDs after a VNF
#   SRPERF_SRNK_VERSION    1 | 2
#   SRPERF_SRNK_AGE        End.AD's age, whole seconds
#   SRPERF_SRNK_TABLE_BASE SRNKv1: VNF i's fromVNF table is this + i
#   SRPERF_AS_SEGS         End.AS: SIDs after the VNF's own, comma-separated
#
# Exit status: 0 done (quiet); 1 a command failed; 2 usage error; 3 the SUT
# has no SRNK (iproute2's or the kernel's error).  After 1 or 3 nothing is
# configured.

set -euo pipefail

readonly PROG="srnk.sh"
readonly BEHAVIORS=(end_ad end_as end_baseline)
readonly HELPERS=()
# shellcheck source=SCRIPTDIR/contract.bash
source "$(dirname "${BASH_SOURCE[0]}")/contract.bash"

readonly CLEAN_VARS=(SRPERF_VNF_IF_PREFIX SRPERF_VNF_SID_BASE SRPERF_SID_PREFIX
	SRPERF_SRNK_TABLE_BASE)
readonly PROXY_VARS=(SRPERF_VNF_IF_PREFIX SRPERF_VNF_SID_BASE SRPERF_VNF_IP6 SRPERF_SID_PREFIX
	SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF SRPERF_SRNK_VERSION SRPERF_SRNK_TABLE_BASE)
readonly MAX_VNFS=256
readonly V2_RULE=(seg6local-behaviour End.AD)

run() {
	local err rc=0
	err="$("$@" 2>&1 >/dev/null)" || rc=$?
	if ((rc != 0)); then
		die "$* failed: ${err:-exit status $rc}"
	fi
}

# feature CMD...: a command only an SRNK kernel and iproute2 accept: on failure
# exit 3 with their error.
feature() {
	local err rc=0
	err="$("$@" 2>&1 >/dev/null)" || rc=$?
	if ((rc != 0)); then
		err="$(printf '%s' "$err" | tr '\n' ' ')"
		err="${err%"${err##*[![:space:]]}"}"
		unsupported "no SRNK on this SUT: ${err:-exit status $rc} (from: $*)"
	fi
}

vnf_sid() { printf '%s%x\n' "$SRPERF_VNF_SID_BASE" "$(($1 + 1))"; }

# vnf_count: VNF interfaces <prefix>0, 1, ... present in this namespace.
vnf_count() {
	local i=0
	while ((i < MAX_VNFS)) && ip link show dev "${SRPERF_VNF_IF_PREFIX}$i" >/dev/null 2>&1; do
		i=$((i + 1))
	done
	echo "$i"
}

need_vnfs() {
	VNF_N="$(vnf_count)"
	if ((VNF_N == 0)); then
		die "no VNF interface ${SRPERF_VNF_IF_PREFIX}0 in this namespace: bring the VNFs up first"
	fi
}

check_vars() {
	case "$SRPERF_SRNK_VERSION" in
	1 | 2) ;;
	*) usage_error "SRPERF_SRNK_VERSION must be 1 or 2, not '$SRPERF_SRNK_VERSION'" ;;
	esac
	if ! [[ "$SRPERF_SRNK_TABLE_BASE" =~ ^[1-9][0-9]*$ ]]; then
		usage_error "SRPERF_SRNK_TABLE_BASE must be a table number, not '$SRPERF_SRNK_TABLE_BASE'"
	fi
}

# del_exact TABLE PREFIX: delete every IPv6 route of exactly PREFIX in TABLE.
del_exact() {
	local tries=0
	while [[ -n "$(ip -6 route show exact "$2" table "$1" 2>/dev/null)" ]]; do
		run ip -6 route del "$2" table "$1"
		tries=$((tries + 1))
		((tries <= 16)) || die "cannot delete route $2 from table $1"
	done
}

clean() {
	need "${CLEAN_VARS[@]}"
	local i pref
	# SRNKv2's rule (only a patched iproute2 prints it).
	while ip -6 rule show 2>/dev/null | grep -q "seg6local-behaviour"; do
		run ip -6 rule del "${V2_RULE[@]}"
	done
	# SRNKv1's rules: iif <prefix><i> lookup <base + i>.
	while read -r pref; do
		[[ -n "$pref" ]] && run ip -6 rule del pref "$pref"
	done < <(ip -6 rule show 2>/dev/null |
		sed -n "s/^\([0-9]*\):.* iif ${SRPERF_VNF_IF_PREFIX}[0-9]* .*lookup [0-9]*.*/\1/p")
	# A VNF's routes go with its interface; those of the VNFs present now:
	local n
	n="$(vnf_count)"
	for ((i = 0; i < n; i++)); do
		del_exact main "$(vnf_sid "$i")/128"
		del_exact "$((SRPERF_SRNK_TABLE_BASE + i))" default
	done
	del_exact main "$SRPERF_SID_PREFIX"
}

sid_route() {
	run ip -6 route add "$SRPERF_SID_PREFIX" via "$SRPERF_TESTER_RX_IP6" dev "$SRPERF_OUT_IF"
}

# proxy ACTION ATTR...: SRNKv1 or v2 for every VNF; ATTR are the action's own
# attributes after `oif IF nh6 NH` (age N, or srh segs S).
proxy() {
	local action="$1" i ifname sid
	shift
	need_vnfs
	for ((i = 0; i < VNF_N; i++)); do
		ifname="${SRPERF_VNF_IF_PREFIX}$i"
		sid="$(vnf_sid "$i")"
		if [[ "$SRPERF_SRNK_VERSION" == 1 ]]; then
			local table=$((SRPERF_SRNK_TABLE_BASE + i))
			feature ip -6 route add "$sid/128" encap seg6local action "$action" chain inbound \
				oif "$ifname" nh6 "$SRPERF_VNF_IP6" "$@" dev "$ifname"
			run ip -6 rule add iif "$ifname" table "$table"
			feature ip -6 route add default encap seg6local action "$action" chain fromVNF \
				iif "$ifname" dev "$ifname" table "$table"
		else
			feature ip -6 route add "$sid/128" encap seg6local action "$action" \
				oif "$ifname" nh6 "$SRPERF_VNF_IP6" "$@" dev "$ifname"
		fi
	done
	if [[ "$SRPERF_SRNK_VERSION" == 2 ]]; then
		feature ip -6 rule add "${V2_RULE[@]}"
	fi
	sid_route
}

end_ad() {
	need "${CLEAN_VARS[@]}" "${PROXY_VARS[@]}" SRPERF_SRNK_AGE
	check_vars
	if ! [[ "$SRPERF_SRNK_AGE" =~ ^[0-9]+$ ]]; then
		usage_error "SRPERF_SRNK_AGE must be whole seconds, not '$SRPERF_SRNK_AGE'"
	fi
	clean
	proxy End.AD age "$SRPERF_SRNK_AGE"
}

end_as() {
	need "${CLEAN_VARS[@]}" "${PROXY_VARS[@]}" SRPERF_AS_SEGS
	check_vars
	clean
	proxy End.AS srh segs "$SRPERF_AS_SEGS"
}

# The baseline: plain forwarding of each VNF's SID to the VNF (which runs End).
end_baseline() {
	need "${CLEAN_VARS[@]}" SRPERF_VNF_IP6 SRPERF_TESTER_RX_IP6 SRPERF_OUT_IF
	local i
	clean
	need_vnfs
	for ((i = 0; i < VNF_N; i++)); do
		run ip -6 route add "$(vnf_sid "$i")/128" via "$SRPERF_VNF_IP6" \
			dev "${SRPERF_VNF_IF_PREFIX}$i"
	done
	sid_route
}

main "$@"
