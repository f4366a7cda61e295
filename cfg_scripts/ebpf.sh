#!/usr/bin/env bash
# srperf CFG script of the eBPF dataplane: SRv6 proxies for SR-unaware VNFs.
#
#   bash ebpf.sh FUNCTION        (run inside the SUT, e.g. ip netns exec SUT ...)
#
# Functions: end_ad end_as end_am end_cache end_baseline clean counters build.
# Every configuring function cleans first, so calling it twice is harmless.
# Exit 0: done; exit 3: the SUT cannot do it ("unsupported: <reason>" on
# stderr); any other exit: failure (stderr says why).
#
# The VNFs are attached by veths named ${SRPERF_VNF_IF_PREFIX}0, 1, ... in this
# namespace (srperf/testbeds/vnf.py makes them); VNF i has:
#   SID   ${SRPERF_VNF_SID_BASE}<i+1 in hex>          e.g. fc00:1:a::1
#   MAC   ${SRPERF_VNF_MAC_PREFIX}:<i, 2 bytes in hex>  e.g. 02:5e:00:10:00:00
#   next hop (baseline)  ${SRPERF_VNF_IP6} on that link (static neighbour)
#
# Parameters (environment, defaults in brackets):
#   SRPERF_IN_IF          SUT in-port, srp_inbound goes there [s0]
#   SRPERF_VNF_IF_PREFIX  [vnf]   SRPERF_VNF_SID_BASE [fc00:1:a::]
#   SRPERF_VNF_MAC_PREFIX   [02:5e:00:10]   SRPERF_VNF_IP6 [fe80::2]
#   SRPERF_VNF_COUNT      VNFs to configure [every vnf<i> interface present]
#   SRPERF_AD_AGE         End.AD: seconds between rewrites of the stored header [1]
#   SRPERF_AS_SRC         End.AS: outer source address [SRPERF_TESTER_TX_IP6, fd00:1::1]
#   SRPERF_AS_SEGS        End.AS: SIDs after the VNF's own, first first [SRPERF_SID_NEXT,
#                         fc00:2::1]
#   SRPERF_SID_PREFIX, SRPERF_TESTER_RX_IP6, SRPERF_TESTER_RX_IP4, SRPERF_OUT_IF,
#   SRPERF_DST_PREFIX6, SRPERF_DST_PREFIX4: routes to the tester's rx port
#                         [Addressing defaults]
#   SRPERF_CACHE_SIZE     caching proxy: LRU entries [65536]
#   SRPERF_CACHE_MISS     caching proxy: drop | pass [drop]
#   SRPERF_CACHE_NAT_KEY  caching proxy: 1 = inner source left out of the key [0]
#   SRPERF_EBPF_FIB       1 = return path by bpf_fib_lookup + redirect, 0 = kernel [1]
#   SRPERF_EBPF_DIR       directory of srproxy.c and its Makefile (needed to build)
#   SRPERF_BUILD_DIR      where objects go [$HOME/.cache/srperf/build/ebpf]
#   SRPERF_BPF_PIN_ROOT   bpffs directory for pins [/sys/fs/bpf/srperf]
set -euo pipefail

EXIT_UNSUPPORTED=3
ROUTE_PROTO=83            # routes of end_baseline carry this protocol number
FILTER_PREF=4242          # tc filter preference of our programs
PROG_PREFIX=srp_

BEH_AD=1
BEH_AS=2
BEH_AM=3
BEH_CACHE=4
F_MISS_PASS=1
F_NO_FIB=2
F_NAT_KEY=4

die() {
    echo "ebpf.sh: $*" >&2
    exit 1
}

unsupported() {
    echo "unsupported: $*" >&2
    exit "$EXIT_UNSUPPORTED"
}

log() {
    echo "ebpf.sh: $*" >&2
}

need_tools() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null 2>&1 || unsupported "$tool is not installed on the SUT"
    done
}

# --- parameters ------------------------------------------------------------------

in_if() { echo "${SRPERF_IN_IF:-s0}"; }
vnf_prefix() { echo "${SRPERF_VNF_IF_PREFIX:-vnf}"; }
build_dir() { echo "${SRPERF_BUILD_DIR:-${HOME:-/root}/.cache/srperf/build/ebpf}"; }

ns_name() {
    local name
    name=$(ip netns identify "$$" 2>/dev/null || true)
    echo "${name:-default}"
}

pin_dir() { echo "${SRPERF_BPF_PIN_ROOT:-/sys/fs/bpf/srperf}/$(ns_name)"; }

# Number of VNFs: SRPERF_VNF_COUNT, else every <prefix><i> interface present.
vnf_count() {
    local n=0 prefix
    prefix=$(vnf_prefix)
    if [[ -n "${SRPERF_VNF_COUNT:-}" ]]; then
        echo "$SRPERF_VNF_COUNT"
        return
    fi
    while [[ -e "/sys/class/net/${prefix}${n}" ]]; do
        n=$((n + 1))
    done
    echo "$n"
}

vnf_sid() { printf '%s%x\n' "${SRPERF_VNF_SID_BASE:-fc00:1:a::}" "$(($1 + 1))"; }

vnf_mac() {
    printf '%s:%02x:%02x\n' "${SRPERF_VNF_MAC_PREFIX:-02:5e:00:10}" "$((($1 >> 8) & 255))" \
        "$(($1 & 255))"
}

require_vnfs() {
    local n i prefix
    n=$(vnf_count)
    prefix=$(vnf_prefix)
    [[ "$n" -ge 1 ]] ||
        die "no VNF interface ${prefix}0 in namespace $(ns_name): bring the VNFs up first"
    [[ "$n" -le 256 ]] || die "at most 256 VNFs (SRP_MAX_VNFS), asked for $n"
    for ((i = 0; i < n; i++)); do
        [[ -e "/sys/class/net/${prefix}${i}" ]] || die "VNF interface ${prefix}${i} missing"
    done
    echo "$n"
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

# --- build, load, attach ---------------------------------------------------------

object_path() { echo "$(build_dir)/srproxy-c${1}.o"; }

build() {
    local entries=${1:-${SRPERF_CACHE_SIZE:-65536}}
    need_tools make clang
    [[ -n "${SRPERF_EBPF_DIR:-}" ]] || die "SRPERF_EBPF_DIR (directory of srproxy.c) is not set"
    [[ -f "$SRPERF_EBPF_DIR/srproxy.c" ]] || die "no srproxy.c in SRPERF_EBPF_DIR=$SRPERF_EBPF_DIR"
    [[ "$entries" =~ ^[1-9][0-9]*$ ]] ||
        die "SRPERF_CACHE_SIZE must be a positive integer: $entries"
    mkdir -p "$(build_dir)"
    make -s -C "$SRPERF_EBPF_DIR" BUILD_DIR="$(build_dir)" CACHE_ENTRIES="$entries" \
        "$(object_path "$entries")" >&2 || die "building the eBPF dataplane failed"
}

# bpffs for the pins.  Under `ip netns exec` /sys is private to the command, so
# the mount (and the pins) last as long as the command; the attached programs
# keep programs and maps alive, and `counters`/`clean` find them through the
# attachments, never through the pins.  On a real SUT /sys/fs/bpf persists.
ensure_bpffs() {
    local root
    root=$(dirname "$(pin_dir)")
    mkdir -p "$root" 2>/dev/null || true
    if [[ "$(stat -f -c %T "$root" 2>/dev/null)" != "bpf_fs" ]]; then
        if [[ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" != "bpf_fs" ]]; then
            mount -t bpf bpf /sys/fs/bpf || unsupported "cannot mount a bpffs on /sys/fs/bpf"
        fi
        mkdir -p "$root"
        [[ "$(stat -f -c %T "$root")" == "bpf_fs" ]] || die "$root is not on a bpffs"
    fi
}

ensure_clsact() {
    local dev=$1
    if [[ "$(tc qdisc show dev "$dev" clsact)" != *clsact* ]]; then
        tc qdisc add dev "$dev" clsact
    fi
}

attach() {
    local dev=$1 prog=$2
    ensure_clsact "$dev"
    tc filter replace dev "$dev" ingress pref "$FILTER_PREF" handle 1 bpf \
        object-pinned "$(pin_dir)/$prog" direct-action
}

map_update() {
    local map=$1 key=$2 value=$3
    # shellcheck disable=SC2086 # byte lists are meant to split into words
    bpftool map update pinned "$(pin_dir)/maps/$map" key hex $key value hex $value
}

# Load srproxy (one object: both programs share its maps), attach srp_inbound
# to the in-port and srp_from_vnf to every VNF interface, fill the maps.
# $1 behavior number, $2 flags, $3 age (ns), $4 cache entries
load_proxy() {
    local behavior=$1 flags=$2 age_ns=$3 entries=$4
    local n i dev ifindex sut_mac obj dir hdr6 hdr4
    need_tools bpftool tc
    n=$(require_vnfs)
    base_routes
    build "$entries"
    obj=$(object_path "$entries")
    ensure_bpffs
    dir=$(pin_dir)
    rm -rf "$dir"
    mkdir -p "$dir"
    bpftool prog loadall "$obj" "$dir" pinmaps "$dir/maps" >&2 ||
        die "the kernel refused $obj (verifier log above)"
    [[ -e "$dir/srp_inbound" && -e "$dir/srp_from_vnf" ]] || die "programs missing in $dir"
    for ((i = 0; i < n; i++)); do
        dev="$(vnf_prefix)$i"
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
    for ((i = 0; i < n; i++)); do
        attach "$(vnf_prefix)$i" srp_from_vnf
    done
    attach "$(in_if)" srp_inbound
    log "$(behavior_name "$behavior") on $n VNF(s), pins in $dir"
}

behavior_name() {
    case "$1" in
        "$BEH_AD") echo End.AD ;;
        "$BEH_AS") echo End.AS ;;
        "$BEH_AM") echo End.AM ;;
        "$BEH_CACHE") echo caching proxy ;;
    esac
}

# struct srp_hdr for End.AS: the outer IPv6 + SRH pushed on packets from VNF $1
# (inner next header $2): SID list = VNF's SID, then SRPERF_AS_SEGS; SL points
# at the first SID after the VNF's; source SRPERF_AS_SRC; hop limit 64.
static_header() {
    local i=$1 nh=$2 src segs_csv n sl hdr srh len k
    local -a segs=()
    src=${SRPERF_AS_SRC:-${SRPERF_TESTER_TX_IP6:-fd00:1::1}}
    segs_csv=${SRPERF_AS_SEGS:-${SRPERF_SID_NEXT:-fc00:2::1}}
    IFS=, read -r -a segs <<<"$segs_csv"
    segs=("$(vnf_sid "$i")" "${segs[@]}")
    n=${#segs[@]}
    [[ "$n" -le 17 ]] || die "End.AS: at most 17 SIDs fit the stored header"
    sl=$((n - 2))
    # SRH: next header, hdr ext len, type 4, SL, last entry, flags, tag
    srh="$(printf '%02x %02x 04 %02x %02x 00 00 00' "$nh" $((2 * n)) "$sl" $((n - 1)))"
    for ((k = n - 1; k >= 0; k--)); do
        srh+=" $(ip6_bytes "${segs[k]}")"
    done
    # IPv6: version 6, payload length filled in per packet, next header 43, hop limit 64
    hdr="60 00 00 00 00 00 2b 40 $(ip6_bytes "$src") $(ip6_bytes "${segs[1]}") $srh"
    len=$((40 + 8 + 16 * n))
    echo "$(zeros 4) $(le32 "$len") $(zeros 8) $hdr $(zeros $((320 - len)))"
}

fib_flag() {
    case "${SRPERF_EBPF_FIB:-1}" in
        1) echo 0 ;;
        0) echo "$F_NO_FIB" ;;
        *) die "SRPERF_EBPF_FIB must be 0 or 1" ;;
    esac
}

age_ns() {
    local age=${SRPERF_AD_AGE:-1}
    [[ "$age" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "SRPERF_AD_AGE must be seconds >= 0: $age"
    awk -v a="$age" 'BEGIN { printf "%.0f\n", a * 1e9 }'
}

# Routes every function needs: SIDs under SRPERF_SID_PREFIX (the next SID after
# a VNF) and the inner destinations (bare packets of the caching proxy's "pass"
# miss policy) go to the tester's rx port.
base_routes() {
    local out=${SRPERF_OUT_IF:-s1} via6=${SRPERF_TESTER_RX_IP6:-fd00:2::1}
    local via4=${SRPERF_TESTER_RX_IP4:-192.0.2.1}
    ip -6 route replace "${SRPERF_SID_PREFIX:-fc00::/16}" via "$via6" dev "$out" proto "$ROUTE_PROTO"
    ip -6 route replace "${SRPERF_DST_PREFIX6:-2001:2:0:b::/64}" via "$via6" dev "$out" \
        proto "$ROUTE_PROTO"
    ip -4 route replace "${SRPERF_DST_PREFIX4:-198.19.0.0/16}" via "$via4" dev "$out" \
        proto "$ROUTE_PROTO"
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
    clean
    load_proxy "$BEH_AD" "$(fib_flag)" "$(age_ns)" "${SRPERF_CACHE_SIZE:-65536}"
}

end_as() {
    clean
    load_proxy "$BEH_AS" "$(fib_flag)" 0 "${SRPERF_CACHE_SIZE:-65536}"
}

end_am() {
    clean
    load_proxy "$BEH_AM" "$(fib_flag)" 0 "${SRPERF_CACHE_SIZE:-65536}"
}

end_cache() {
    local flags
    clean
    flags=$(fib_flag)
    case "${SRPERF_CACHE_MISS:-drop}" in
        drop) ;;
        pass) flags=$((flags | F_MISS_PASS)) ;;
        *) die "SRPERF_CACHE_MISS must be drop or pass" ;;
    esac
    case "${SRPERF_CACHE_NAT_KEY:-0}" in
        0) ;;
        1) flags=$((flags | F_NAT_KEY)) ;;
        *) die "SRPERF_CACHE_NAT_KEY must be 0 or 1" ;;
    esac
    load_proxy "$BEH_CACHE" "$flags" 0 "${SRPERF_CACHE_SIZE:-65536}"
}

# SRNK's baseline: no proxy on the SUT, the VNF is SR-aware and runs End on its
# SID itself (vnf.py configures that); the SUT routes each VNF SID to its VNF.
end_baseline() {
    local n i via
    clean
    n=$(require_vnfs)
    base_routes
    via=${SRPERF_VNF_IP6:-fe80::2}
    for ((i = 0; i < n; i++)); do
        ip -6 route replace "$(vnf_sid "$i")/128" via "$via" dev "$(vnf_prefix)$i" \
            proto "$ROUTE_PROTO"
    done
    log "baseline: $n VNF SID route(s) via the VNFs (End runs inside each VNF)"
}

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
    if [[ "$(stat -f -c %T "$(dirname "$(pin_dir)")" 2>/dev/null)" == "bpf_fs" ]]; then
        rm -rf "$(pin_dir)"
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

# A configuring function that fails leaves nothing half configured.
on_exit() {
    local rc=$1
    if [[ "$rc" -ne 0 ]]; then
        clean >/dev/null 2>&1 || true
    fi
}

main() {
    local fn=${1:-}
    case "$fn" in
        end_ad | end_as | end_am | end_cache | end_baseline)
            trap 'on_exit $?' EXIT
            "$fn"
            trap - EXIT
            ;;
        clean | counters) "$fn" ;;
        build) build "${SRPERF_CACHE_SIZE:-65536}" ;;
        "") die "usage: ebpf.sh FUNCTION: end_ad end_as end_am end_cache end_baseline clean" \
            "counters build" ;;
        *) unsupported "the eBPF dataplane has no function $fn" ;;
    esac
}

main "$@"
