#!/usr/bin/env bash
# srperf CFG script of the eBPF dataplane: SRv6 proxies for SR-unaware VNFs.
#
#   bash ebpf.sh FUNCTION        (on the SUT, e.g. ip netns exec SUT bash ebpf.sh end_ad)
#
# The contract (exit codes, no defaults, idempotence, `functions`) is
# cfg_scripts/README.md.  In short: 0 done (quiet); 1 a command failed (stderr
# names it); 2 usage error (unknown function, missing/empty or invalid
# variable: stderr names it); 3 the SUT cannot do it (`unsupported: <reason>`).
# After exit 1 or 3 from a behavior nothing is configured.
#
# Functions:
#   end_ad end_as end_am end_cache   the proxies (one srproxy object, srp_inbound on
#                                    the in-port, srp_from_vnf on every VNF port)
#   end_baseline                     SRNK's baseline: no proxy, the VNF SIDs routed to
#                                    the (SR-aware) VNFs
#   clean                            detach our programs, remove pins and our routes
#   counters                         JSON dump of the attached proxy's srp_stats map
#                                    (nothing when no proxy is attached)
#   build                            compile srproxy-c<SRPERF_CACHE_SIZE>.o on the SUT
#
# The VNFs are attached by veths named ${SRPERF_VNF_IF_PREFIX}0, 1, ... in this
# namespace (srperf/testbeds/vnf.py makes them): the script configures every
# such interface present, from 0 up.  VNF i has:
#   SID   ${SRPERF_VNF_SID_BASE}<i+1 in hex>            e.g. fc00:1:a::1
#   MAC   ${SRPERF_VNF_MAC_PREFIX}:<i, 2 bytes in hex>  e.g. 02:5e:00:10:00:00
#   next hop (baseline)  ${SRPERF_VNF_IP6} on that link (static neighbour)
#
# Variables (all required where listed; no defaults):
#   SRPERF_IN_IF          SUT in-port: srp_inbound goes there
#   SRPERF_OUT_IF, SRPERF_TESTER_RX_IP6, SRPERF_TESTER_RX_IP4: port and next hops
#                         towards the tester's rx port, for the routes of
#   SRPERF_SID_PREFIX, SRPERF_DST_PREFIX6, SRPERF_DST_PREFIX4 (the next SID after
#                         a VNF; bare packets of the caching proxy's "pass" policy)
#   SRPERF_VNF_IF_PREFIX, SRPERF_VNF_SID_BASE, SRPERF_VNF_MAC_PREFIX, SRPERF_VNF_IP6
#   SRPERF_AD_AGE         End.AD: seconds between rewrites of the stored header
#   SRPERF_AS_SRC         End.AS: outer source address
#   SRPERF_AS_SEGS        End.AS: SIDs after the VNF's own, first first, comma-separated
#   SRPERF_CACHE_SIZE     LRU entries of the caching proxy: selects the object
#                         srproxy-c<SIZE>.o, so every proxy needs it
#   SRPERF_CACHE_MISS     caching proxy: drop | pass
#   SRPERF_CACHE_NAT_KEY  caching proxy: 1 = a source-NAT VNF: the inner source (address
#                         and port) of packets from the in-port, the inner destination
#                         of the others (answers, de-NATed), left out of the key; 0 = not
#   SRPERF_CACHE_STALE    caching proxy: seconds after which an entry is stale (its packet
#                         was lost in the VNF) and replaced by a packet with the same key;
#                         0 = never (such a packet is dropped while the entry exists)
#   SRPERF_EBPF_FIB       1 = return path by bpf_fib_lookup + redirect, 0 = kernel
#   SRPERF_BUILD_DIR      directory ON THE SUT holding the objects (srproxy-c<SIZE>.o,
#                         vnf_drop.o); a missing srproxy object is built there
#   SRPERF_EBPF_DIR       directory ON THE SUT holding the sources (srproxy.c,
#                         srproxy.h, vnf_drop.c, Makefile)
#
# Per function:
#   end_ad        PROXY_VARS + SRPERF_AD_AGE
#   end_as        PROXY_VARS + SRPERF_AS_SRC SRPERF_AS_SEGS
#   end_am        PROXY_VARS
#   end_cache     PROXY_VARS + SRPERF_CACHE_MISS SRPERF_CACHE_NAT_KEY SRPERF_CACHE_STALE
#   end_baseline  ROUTE_VARS + SRPERF_VNF_IF_PREFIX SRPERF_VNF_SID_BASE SRPERF_VNF_IP6
#   build         SRPERF_EBPF_DIR SRPERF_BUILD_DIR SRPERF_CACHE_SIZE
#   clean, counters   none
# with ROUTE_VARS and PROXY_VARS as defined below.
#
# Pins go to /sys/fs/bpf/srperf-<netns name, or "default">, one directory per
# namespace (per testbed) with no parent shared between testbeds: `clean` removes
# its own directory only, so it never races another testbed's load, which once lost
# the shared /sys/fs/bpf/srperf between its mkdir and its pins when a concurrent
# `clean` removed that parent while empty.  Under `ip netns
# exec` /sys is private to the command, so the pins last as long as the command;
# the attached programs keep programs and maps alive, and `counters`/`clean`
# find them through the attachments, never through the pins.
set -euo pipefail

readonly PROG="ebpf.sh"
readonly BEHAVIORS=(end_ad end_as end_am end_cache end_baseline)
readonly HELPERS=(counters build)
# shellcheck source=SCRIPTDIR/contract.bash
source "$(dirname "${BASH_SOURCE[0]}")/contract.bash"

readonly BPFFS=/sys/fs/bpf
readonly PIN_PREFIX=srperf-  # pins of namespace N: $BPFFS/srperf-N
readonly ROUTE_PROTO=83   # routes of this script carry this protocol number
readonly FILTER_PREF=4242 # tc filter preference of our programs
readonly PROG_PREFIX=srp_
readonly MAX_VNFS=256     # SRP_MAX_VNFS in srproxy.h

readonly BEH_AD=1
readonly BEH_AS=2
readonly BEH_AM=3
readonly BEH_CACHE=4
readonly F_MISS_PASS=1
readonly F_NO_FIB=2
readonly F_NAT_KEY=4

readonly ROUTE_VARS=(SRPERF_OUT_IF SRPERF_TESTER_RX_IP6 SRPERF_TESTER_RX_IP4
    SRPERF_SID_PREFIX SRPERF_DST_PREFIX6 SRPERF_DST_PREFIX4)
readonly PROXY_VARS=("${ROUTE_VARS[@]}" SRPERF_IN_IF SRPERF_VNF_IF_PREFIX
    SRPERF_VNF_SID_BASE SRPERF_VNF_MAC_PREFIX SRPERF_CACHE_SIZE SRPERF_EBPF_FIB
    SRPERF_BUILD_DIR SRPERF_EBPF_DIR)


# --- reporting -------------------------------------------------------------------

# invalid VAR WHAT: exit 2, VAR's value is not WHAT.
invalid() {
    usage_error "$1=${!1}: must be $2"
}

# run CMD...: run a command quietly; on failure exit 1 with it and its output.
run() {
    local out rc=0
    out=$("$@" 2>&1) || rc=$?
    if ((rc != 0)); then
        die "$* failed (exit status $rc): ${out:-no output}"
    fi
}

need_tools() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null 2>&1 || unsupported "$tool is not installed on the SUT"
    done
}

# --- parameters ------------------------------------------------------------------

ns_name() {
    local name
    name=$(ip netns identify "$$" 2>/dev/null || true)
    echo "${name:-default}"
}

pin_dir() { echo "$BPFFS/$PIN_PREFIX$(ns_name)"; }

# VNF_N: the number of VNF interfaces present, <prefix>0 .. <prefix>N-1.
VNF_N=0
find_vnfs() {
    need SRPERF_VNF_IF_PREFIX
    VNF_N=0
    while [[ -e "/sys/class/net/${SRPERF_VNF_IF_PREFIX}${VNF_N}" ]]; do
        VNF_N=$((VNF_N + 1))
    done
    ((VNF_N >= 1)) || die "no VNF interface ${SRPERF_VNF_IF_PREFIX}0 in namespace" \
        "$(ns_name): bring the VNFs up first"
    ((VNF_N <= MAX_VNFS)) || die "at most $MAX_VNFS VNFs (SRP_MAX_VNFS), found $VNF_N"
}

vnf_sid() { printf '%s%x\n' "$SRPERF_VNF_SID_BASE" "$(($1 + 1))"; }

vnf_mac() {
    printf '%s:%02x:%02x\n' "$SRPERF_VNF_MAC_PREFIX" "$((($1 >> 8) & 255))" "$(($1 & 255))"
}

# Values checked before anything changes (exit 2 names the variable).
check_cache_size() {
    need SRPERF_CACHE_SIZE
    [[ "$SRPERF_CACHE_SIZE" =~ ^[1-9][0-9]*$ ]] || invalid SRPERF_CACHE_SIZE "a positive integer"
}

# FIB_FLAG: the flag SRPERF_EBPF_FIB asks for.
FIB_FLAG=0
check_fib() {
    need SRPERF_EBPF_FIB
    case "$SRPERF_EBPF_FIB" in
        1) FIB_FLAG=0 ;;
        0) FIB_FLAG=$F_NO_FIB ;;
        *) invalid SRPERF_EBPF_FIB "0 or 1" ;;
    esac
}

# --- byte encoding for bpftool ----------------------------------------------------

# IPv6 address -> 16 bytes as "aa bb ..." (no embedded IPv4 notation).
ip6_bytes() {
    local addr=$1 head tail g hex="" fill
    local -a hg=() tg=()
    if [[ "$addr" == *::* ]]; then
        head=${addr%%::*}
        tail=${addr#*::}
    else
        head=$addr
        tail=""
    fi
    [[ -n "$head" ]] && IFS=: read -r -a hg <<<"$head"
    [[ -n "$tail" ]] && IFS=: read -r -a tg <<<"$tail"
    fill=$((8 - ${#hg[@]} - ${#tg[@]}))
    if [[ "$addr" != *::* && "$fill" -ne 0 ]] || [[ "$fill" -lt 0 ]]; then
        die "not an IPv6 address: $addr"
    fi
    for g in "${hg[@]}"; do hex+=$(printf '%04x' "0x$g"); done
    for ((; fill > 0; fill--)); do hex+=0000; done
    for g in "${tg[@]}"; do hex+=$(printf '%04x' "0x$g"); done
    [[ ${#hex} -eq 32 ]] || die "not an IPv6 address: $addr"
    sed 's/../& /g; s/ $//' <<<"$hex"
}

mac_bytes() { tr ':' ' ' <<<"$1"; }

le32() {
    printf '%02x %02x %02x %02x' $(($1 & 255)) $((($1 >> 8) & 255)) $((($1 >> 16) & 255)) \
        $((($1 >> 24) & 255))
}

le64() { echo "$(le32 $(($1 & 0xffffffff))) $(le32 $((($1 >> 32) & 0xffffffff)))"; }

zeros() {
    local n=$1 out=""
    for ((; n > 0; n--)); do out+="00 "; done
    echo "${out% }"
}

# --- objects: on the SUT, built there when missing ----------------------------------

object_name() { echo "srproxy-c${SRPERF_CACHE_SIZE}.o"; }

object_path() { echo "$SRPERF_BUILD_DIR/$(object_name)"; }

# make_object: compile srproxy-c<SRPERF_CACHE_SIZE>.o into SRPERF_BUILD_DIR with
# the Makefile of SRPERF_EBPF_DIR (make rebuilds it when a source is newer).
make_object() {
    need SRPERF_EBPF_DIR SRPERF_BUILD_DIR SRPERF_CACHE_SIZE
    local src
    for src in Makefile srproxy.c srproxy.h; do
        [[ -f "$SRPERF_EBPF_DIR/$src" ]] ||
            die "no $src in SRPERF_EBPF_DIR=$SRPERF_EBPF_DIR: push the sources first"
    done
    run mkdir -p "$SRPERF_BUILD_DIR"
    run make -s -C "$SRPERF_EBPF_DIR" BUILD_DIR="$SRPERF_BUILD_DIR" \
        CACHE_ENTRIES="$SRPERF_CACHE_SIZE" "$(object_path)"
}

# ensure_object: the object for SRPERF_CACHE_SIZE; built on the SUT when it is
# missing and clang and make are there, else the SUT cannot run this proxy.
ensure_object() {
    need SRPERF_EBPF_DIR SRPERF_BUILD_DIR SRPERF_CACHE_SIZE
    [[ -f "$(object_path)" ]] && return 0
    local tool
    for tool in clang make; do
        command -v "$tool" >/dev/null 2>&1 ||
            unsupported "no object $(object_name) in $SRPERF_BUILD_DIR and no $tool on the" \
                "SUT to build it"
    done
    make_object
}

build() {
    need SRPERF_EBPF_DIR SRPERF_BUILD_DIR SRPERF_CACHE_SIZE
    check_cache_size
    local tool
    for tool in clang make; do
        command -v "$tool" >/dev/null 2>&1 ||
            unsupported "no $tool on the SUT to build $(object_name)"
    done
    make_object
}

# --- load, attach ---------------------------------------------------------------------

# bpffs for the pins (see the header).  On a real SUT /sys/fs/bpf persists.
ensure_bpffs() {
    if [[ "$(stat -f -c %T "$BPFFS" 2>/dev/null)" != "bpf_fs" ]]; then
        local out
        out=$(mount -t bpf bpf "$BPFFS" 2>&1) ||
            unsupported "cannot mount a bpffs on $BPFFS: $out"
        [[ "$(stat -f -c %T "$BPFFS")" == "bpf_fs" ]] || die "$BPFFS is not on a bpffs"
    fi
}

ensure_clsact() {
    local dev=$1
    if [[ "$(tc qdisc show dev "$dev" clsact)" != *clsact* ]]; then
        run tc qdisc add dev "$dev" clsact
    fi
}

attach() {
    local dev=$1 prog=$2
    ensure_clsact "$dev"
    run tc filter replace dev "$dev" ingress pref "$FILTER_PREF" handle 1 bpf \
        object-pinned "$(pin_dir)/$prog" direct-action
}

map_update() {
    local map=$1 key=$2 value=$3
    # shellcheck disable=SC2086 # byte lists are meant to split into words
    run bpftool map update pinned "$(pin_dir)/maps/$map" key hex $key value hex $value
}

# The checks every proxy makes before it changes anything: values (exit 2),
# tools and object (exit 3), VNF interfaces (exit 1).
proxy_checks() {
    need "${PROXY_VARS[@]}"
    check_cache_size
    check_fib
    need_tools bpftool tc
    ensure_object
    find_vnfs
}

# Load srproxy (one object: both programs share its maps), attach srp_from_vnf
# to every VNF interface and srp_inbound to the in-port, fill the maps.
# $1 behavior number, $2 flags, $3 age (ns).  proxy_checks ran before.
load_proxy() {
    local behavior=$1 flags=$2 age_ns=$3
    local i dev ifindex sut_mac obj dir hdr6 hdr4
    need "${PROXY_VARS[@]}"
    base_routes
    obj=$(object_path)
    ensure_bpffs
    dir=$(pin_dir)
    run rm -rf "$dir"
    run mkdir -p "$dir"
    run bpftool prog loadall "$obj" "$dir" pinmaps "$dir/maps"
    [[ -e "$dir/srp_inbound" && -e "$dir/srp_from_vnf" ]] || die "programs missing in $dir"
    # the NAT's inside (SRPERF_CACHE_NAT_KEY): packets entering on the in-port
    map_update srp_inside "$(le32 0)" "$(le32 "$(cat "/sys/class/net/$SRPERF_IN_IF/ifindex")")"
    for ((i = 0; i < VNF_N; i++)); do
        dev="${SRPERF_VNF_IF_PREFIX}$i"
        ifindex=$(cat "/sys/class/net/$dev/ifindex")
        sut_mac=$(cat "/sys/class/net/$dev/address")
        # struct srp_vnf: behavior, ifindex, vnf_mac, sut_mac, flags, age_ns
        map_update srp_vnf "$(le32 "$i")" "$(le32 "$behavior") $(le32 "$ifindex") \
$(mac_bytes "$(vnf_mac "$i")") $(mac_bytes "$sut_mac") $(le32 "$flags") $(le64 "$age_ns")"
        map_update srp_iface "$(le32 "$ifindex")" "$(le32 "$i")"
        map_update srp_sid "$(ip6_bytes "$(vnf_sid "$i")")" "$(le32 "$i")"
        if [[ "$behavior" -eq "$BEH_AS" ]]; then
            hdr6=$(static_header "$i" 41)
            hdr4=$(static_header "$i" 4)
            map_update srp_hdr "$(le32 $((2 * i)))" "$hdr6"
            map_update srp_hdr "$(le32 $((2 * i + 1)))" "$hdr4"
        fi
    done
    # Attach the return path first: no packet reaches a VNF before its way back exists.
    for ((i = 0; i < VNF_N; i++)); do
        attach "${SRPERF_VNF_IF_PREFIX}$i" srp_from_vnf
    done
    attach "$SRPERF_IN_IF" srp_inbound
}

# struct srp_hdr for End.AS: the outer IPv6 + SRH pushed on packets from VNF $1
# (inner next header $2): SID list = VNF's SID, then SRPERF_AS_SEGS; SL points
# at the first SID after the VNF's; source SRPERF_AS_SRC; hop limit 64.
static_header() {
    local i=$1 nh=$2 n sl hdr srh len k
    local -a segs=()
    need SRPERF_AS_SRC SRPERF_AS_SEGS
    IFS=, read -r -a segs <<<"$SRPERF_AS_SEGS"
    segs=("$(vnf_sid "$i")" "${segs[@]}")
    n=${#segs[@]}
    sl=$((n - 2))
    # SRH: next header, hdr ext len, type 4, SL, last entry, flags, tag
    srh="$(printf '%02x %02x 04 %02x %02x 00 00 00' "$nh" $((2 * n)) "$sl" $((n - 1)))"
    for ((k = n - 1; k >= 0; k--)); do
        srh+=" $(ip6_bytes "${segs[k]}")"
    done
    # IPv6: version 6, payload length filled in per packet, next header 43, hop limit 64
    hdr="60 00 00 00 00 00 2b 40 $(ip6_bytes "$SRPERF_AS_SRC") $(ip6_bytes "${segs[1]}") $srh"
    len=$((40 + 8 + 16 * n))
    echo "$(zeros 4) $(le32 "$len") $(zeros 8) $hdr $(zeros $((320 - len)))"
}

# Routes every function needs: SIDs under SRPERF_SID_PREFIX (the next SID after
# a VNF) and the inner destinations (bare packets of the caching proxy's "pass"
# miss policy) go to the tester's rx port.
base_routes() {
    need "${ROUTE_VARS[@]}"
    run ip -6 route replace "$SRPERF_SID_PREFIX" via "$SRPERF_TESTER_RX_IP6" \
        dev "$SRPERF_OUT_IF" proto "$ROUTE_PROTO"
    run ip -6 route replace "$SRPERF_DST_PREFIX6" via "$SRPERF_TESTER_RX_IP6" \
        dev "$SRPERF_OUT_IF" proto "$ROUTE_PROTO"
    run ip -4 route replace "$SRPERF_DST_PREFIX4" via "$SRPERF_TESTER_RX_IP4" \
        dev "$SRPERF_OUT_IF" proto "$ROUTE_PROTO"
}

# --- attachments (the source of truth for counters and clean) ---------------------

# "dev prog_id" for each srp_* program attached to a tc hook in this namespace.
attached() {
    bpftool net show 2>/dev/null | awk -v p="$PROG_PREFIX" '
        /^tc:/ { tc = 1; next }
        /^[a-z_]+:$/ { tc = 0 }
        tc && $3 ~ "^" p { dev = $1; sub(/\(.*/, "", dev); print dev, $5 }'
}

# --- behaviors ----------------------------------------------------------------------

end_ad() {
    need "${PROXY_VARS[@]}" SRPERF_AD_AGE
    [[ "$SRPERF_AD_AGE" =~ ^[0-9]+([.][0-9]+)?$ ]] || invalid SRPERF_AD_AGE "seconds >= 0"
    local age_ns
    age_ns=$(awk -v a="$SRPERF_AD_AGE" 'BEGIN { printf "%.0f\n", a * 1e9 }')
    proxy_checks
    clean
    load_proxy "$BEH_AD" "$FIB_FLAG" "$age_ns"
}

end_as() {
    need "${PROXY_VARS[@]}" SRPERF_AS_SRC SRPERF_AS_SEGS
    local -a segs=()
    IFS=, read -r -a segs <<<"$SRPERF_AS_SEGS"
    ((${#segs[@]} <= 16)) ||
        invalid SRPERF_AS_SEGS "at most 16 SIDs (17 with the VNF's fit the stored header)"
    proxy_checks
    clean
    load_proxy "$BEH_AS" "$FIB_FLAG" 0
}

end_am() {
    need "${PROXY_VARS[@]}"
    proxy_checks
    clean
    load_proxy "$BEH_AM" "$FIB_FLAG" 0
}

end_cache() {
    need "${PROXY_VARS[@]}" SRPERF_CACHE_MISS SRPERF_CACHE_NAT_KEY SRPERF_CACHE_STALE
    local flags=0 stale_ns
    case "$SRPERF_CACHE_MISS" in
        drop) ;;
        pass) flags=$((flags | F_MISS_PASS)) ;;
        *) invalid SRPERF_CACHE_MISS "drop or pass" ;;
    esac
    case "$SRPERF_CACHE_NAT_KEY" in
        0) ;;
        1) flags=$((flags | F_NAT_KEY)) ;;
        *) invalid SRPERF_CACHE_NAT_KEY "0 or 1" ;;
    esac
    [[ "$SRPERF_CACHE_STALE" =~ ^[0-9]+([.][0-9]+)?([eE]-?[0-9]+)?$ ]] ||
        invalid SRPERF_CACHE_STALE "seconds >= 0"
    stale_ns=$(awk -v a="$SRPERF_CACHE_STALE" 'BEGIN { printf "%.0f\n", a * 1e9 }')
    proxy_checks
    clean
    load_proxy "$BEH_CACHE" $((flags | FIB_FLAG)) "$stale_ns"
}

# SRNK's baseline: no proxy on the SUT, the VNF is SR-aware and runs End on its
# SID itself (vnf.py configures that); the SUT routes each VNF SID to its VNF.
end_baseline() {
    need "${ROUTE_VARS[@]}" SRPERF_VNF_IF_PREFIX SRPERF_VNF_SID_BASE SRPERF_VNF_IP6
    local i
    find_vnfs
    clean
    base_routes
    for ((i = 0; i < VNF_N; i++)); do
        run ip -6 route replace "$(vnf_sid "$i")/128" via "$SRPERF_VNF_IP6" \
            dev "${SRPERF_VNF_IF_PREFIX}$i" proto "$ROUTE_PROTO"
    done
}

# clean: every srp_* program attached in this namespace, its filter and (when
# nothing else is left on it) its clsact qdisc; our routes; our pins.
clean() {
    local dev prog qdisc_filters
    if command -v bpftool >/dev/null 2>&1; then
        while read -r dev prog; do
            [[ -n "$dev" ]] || continue
            tc filter del dev "$dev" ingress pref "$FILTER_PREF" 2>/dev/null || true
            qdisc_filters=$( (tc filter show dev "$dev" ingress
                tc filter show dev "$dev" egress) 2>/dev/null || true)
            if [[ -z "$qdisc_filters" ]]; then
                tc qdisc del dev "$dev" clsact 2>/dev/null || true
            fi
            : "$prog"
        done < <(attached)
    fi
    ip -6 route flush proto "$ROUTE_PROTO" 2>/dev/null || true
    ip -4 route flush proto "$ROUTE_PROTO" 2>/dev/null || true
    if [[ "$(stat -f -c %T "$BPFFS" 2>/dev/null)" == "bpf_fs" ]]; then
        rm -rf "$(pin_dir)"   # this namespace's own; nothing shared is removed
    fi
    if [[ -n "$(attached)" ]]; then
        die "clean: srp_* programs still attached: $(attached | tr '\n' ' ')"
    fi
}

# JSON dump of the srp_stats map (per-CPU u64 counters, srproxy.h order) of the
# proxy attached in this namespace; nothing when no proxy is attached.
counters() {
    local dev prog map_ids id
    need_tools bpftool
    read -r dev prog < <(attached) || true
    [[ -n "${prog:-}" ]] || return 0
    map_ids=$(bpftool prog show id "$prog" | sed -n 's/.*map_ids \([0-9,]*\).*/\1/p' | tr ',' ' ')
    for id in $map_ids; do
        if [[ "$(bpftool map show id "$id")" == *" name srp_stats "* ]]; then
            bpftool -j map dump id "$id"
            echo
            return 0
        fi
    done
    die "no srp_stats map on program $prog ($dev)"
}

# --- dispatch (contract.bash) ---------------------------------------------------------

main "$@"
