#!/usr/bin/env bash
# srperf CFG script of the SRv6 fast path: XDP program chains (testbed/dataplanes/xdp).
#
#   bash xdp.sh FUNCTION        (on the SUT, e.g. ip netns exec SUT bash xdp.sh xdp_chain)
#
# The contract (exit codes, no defaults, idempotence, `functions`) is
# cfg_scripts/README.md.  In short: 0 done (quiet); 1 a command failed (stderr
# names it); 2 usage error (unknown function, missing/empty or invalid
# variable: stderr names it); 3 the SUT cannot do it (`unsupported: <reason>`).
# After exit 1 or 3 from a behavior nothing is configured.
#
# Functions:
#   xdp_chain   load xdp_fp.o, fill its maps with one chain and attach the dispatcher
#               fp_dispatch to the in-port (every fast-path behavior: srperf names the
#               chain's programs in SRPERF_XDP_CHAIN)
#   clean       detach the dispatcher, stop the pin holder, remove pins and our routes
#   counters    JSON dump of fp_stats (nothing when no fast path is attached)
#   flows       JSON dump of pm_counters, the mon step's per-flow counters (idem)
#   steps       JSON dump of fp_steps, the per-step statistics (runs, ns per program id;
#               zero unless SRPERF_XDP_STEP_STATS asked for them; nothing when no fast
#               path is attached)
#   prog_run    BPF_PROG_RUN of the attached dispatcher (the whole chain) over the frame
#               SRPERF_XDP_FRAME, SRPERF_XDP_REPEAT single runs: prints JSON, bpftool's
#               result of each run (retval, duration in ns) and data_out (the frame
#               out, hex); nothing when none is attached
#
# Variables (no defaults):
#   SRPERF_IN_IF, SRPERF_OUT_IF  SUT ports: the dispatcher on the in-port, fw/pass out of
#                         the out-port
#   SRPERF_TESTER_RX_MAC  fw static: the next hop's MAC
#   SRPERF_TESTER_RX_IP6, SRPERF_SID_PREFIX, SRPERF_DST_PREFIX6: the kernel's routes
#                         towards the tester (the slow path: a lookup miss, fw kernel,
#                         a chain without fw, and what bpf_fib_lookup reads)
#   SRPERF_TUNSRC         enc: outer source address
#   SRPERF_XDP_SIDS       enc: the SID table, first SID first, comma-separated (1..8)
#   SRPERF_XDP_OBJ        path ON THE SUT of xdp_fp.o
#   SRPERF_XDP_MODE       native | generic | auto (XDP attach mode; auto: generic on a
#                         veth in-port - a native redirect into a veth is dropped unless
#                         the peer's side runs XDP or GRO, which the tester owns -,
#                         native otherwise)
#   SRPERF_XDP_CHAIN      the chain: prog:operand,... (ids of FP_PROGS in xdp_fp.h; at most
#                         8 steps; enc 1..8 SIDs, fw 0 static / 1 fib / 2 kernel, mon 0|1)
#   SRPERF_XDP_ROUTE      the destination prefix (addr/len) the chain is installed on
#   SRPERF_XDP_FLOWS      mon: monitored flows, SID lists in SRH order (SIDs comma-
#                         separated, flows ';'-separated; flow i gets index i), or none
#   SRPERF_XDP_MARK       mon: 1 = colour packets with colour 0, 0 = count only
#   SRPERF_XDP_STEP_STATS per-step statistics in fp_steps (FP_F_* of xdp_fp.h): 0 off,
#                         1 runs, 3 runs and ns
#   SRPERF_XDP_FRAME      prog_run: the frame, hex;  SRPERF_XDP_REPEAT: runs (1..20000)
#
# Per function:
#   xdp_chain   all of the above but SRPERF_XDP_FRAME and SRPERF_XDP_REPEAT
#   prog_run    SRPERF_XDP_FRAME SRPERF_XDP_REPEAT
#   clean, counters, flows, steps   none
#
# Pins: /sys/fs/bpf/srperf-xdp-<netns name, or "default">.  The program array must
# keep a pin (the kernel empties a PROG_ARRAY when its last pin or file descriptor
# goes), and under `ip netns exec` /sys - and the bpffs this script mounts on it - is
# private to the command.  So xdp_chain leaves a holder process (`srperf-xdp-hold`,
# a shell loop) in the command's mount namespace, its PID in /run/srperf-xdp-<netns>.pid;
# `clean` stops it (the namespace, its bpffs and the pins go with it).  `counters`,
# `flows`, `prog_run` and `clean` find the programs through the attachment, never
# through the pins.  Every object this script loads says whose it is: fp_conf.owner =
# "srperf-xdp:<netns name>"; `clean` also sweeps what the attachment no longer shows
# (a holder whose PID file was lost, a detached dispatcher): the holders of this
# namespace by their command line, and the programs whose fp_conf names this
# namespace, whose fp_progs it empties (the kernel then frees the programs and maps
# once nothing else holds them).  Objects of other namespaces or programs are never
# touched.
set -euo pipefail

readonly PROG="xdp.sh"
readonly BEHAVIORS=(xdp_chain)
readonly HELPERS=(counters flows steps prog_run)
# shellcheck source=SCRIPTDIR/contract.bash
source "$(dirname "${BASH_SOURCE[0]}")/contract.bash"

readonly BPFFS=/sys/fs/bpf
readonly PIN_PREFIX=srperf-xdp-
readonly HOLDER_NAME=srperf-xdp-hold
readonly ROUTE_PROTO=84   # routes of this script carry this protocol number
readonly DISPATCHER=fp_dispatch
readonly MAX_STEPS=8      # FP_MAX_STEPS
readonly MAX_SIDS=8       # FP_MAX_SIDS
readonly MAX_PROGS=8      # FP_MAX_PROGS (fp_progs slots)
readonly MAX_FLOWS=1024   # PM_MAX_FLOWS
readonly MAX_FLOW_SIDS=8  # PM_MAX_SEGS
# FP_PROGS of xdp_fp.h: slot -> program
readonly STEP_PROGS=(fp_nop fp_end fp_enc fp_mon fp_fw fp_pass)
readonly ID_ENC=2 ID_MON=3 ID_FW=4

readonly CHAIN_VARS=(SRPERF_IN_IF SRPERF_OUT_IF SRPERF_TESTER_RX_MAC SRPERF_TESTER_RX_IP6
    SRPERF_SID_PREFIX SRPERF_DST_PREFIX6 SRPERF_TUNSRC SRPERF_XDP_SIDS SRPERF_XDP_OBJ
    SRPERF_XDP_MODE SRPERF_XDP_CHAIN SRPERF_XDP_ROUTE SRPERF_XDP_FLOWS SRPERF_XDP_MARK
    SRPERF_XDP_STEP_STATS)

# --- reporting -------------------------------------------------------------------

invalid() {
    usage_error "$1=${!1}: must be $2"
}

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

# --- names ------------------------------------------------------------------------

ns_name() {
    local name
    name=$(ip netns identify "$$" 2>/dev/null || true)
    echo "${name:-default}"
}

pin_dir() { echo "$BPFFS/$PIN_PREFIX$(ns_name)"; }

pid_file() { echo "/run/$PIN_PREFIX$(ns_name).pid"; }

# fp_conf.owner of the objects this namespace's xdp_chain loads (FP_OWNER_LEN bytes).
readonly OWNER_LEN=32
owner_text() { echo "srperf-xdp:$(ns_name)"; }

# owner_bytes: "73 72 ..." (hex, NUL-padded to OWNER_LEN; the text cut to OWNER_LEN - 1)
owner_bytes() {
    local text i out=""
    text=$(owner_text)
    text=${text:0:$((OWNER_LEN - 1))}
    for ((i = 0; i < OWNER_LEN; i++)); do
        if ((i < ${#text})); then
            out+=$(printf '%02x ' "'${text:i:1}")
        else
            out+="00 "
        fi
    done
    echo "${out% }"
}

# --- byte encoding for bpftool ----------------------------------------------------

ip6_bytes() {
    local addr=$1 head tail g hex="" fill
    local -a hg=() tg=()
    [[ "$addr" =~ ^[0-9a-fA-F:]+$ ]] || return 1
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
        return 1
    fi
    for g in "${hg[@]}" "${tg[@]}"; do
        [[ ${#g} -le 4 && -n "$g" ]] || return 1
    done
    for g in "${hg[@]}"; do hex+=$(printf '%04x' "0x$g"); done
    for ((; fill > 0; fill--)); do hex+=0000; done
    for g in "${tg[@]}"; do hex+=$(printf '%04x' "0x$g"); done
    [[ ${#hex} -eq 32 ]] || return 1
    sed 's/../& /g; s/ $//' <<<"$hex"
}

mac_bytes() { tr ':' ' ' <<<"$1"; }

le32() {
    printf '%02x %02x %02x %02x' $(($1 & 255)) $((($1 >> 8) & 255)) $((($1 >> 16) & 255)) \
        $((($1 >> 24) & 255))
}

zeros() {
    local n=$1 out=""
    for ((; n > 0; n--)); do out+="00 "; done
    echo "${out% }"
}

# --- checks (before anything changes: exit 2 names the variable) ------------------

STEPS=()
check_chain() {
    local step prog op
    [[ "$SRPERF_XDP_CHAIN" =~ ^[0-9]+:[0-9]+(,[0-9]+:[0-9]+)*$ ]] ||
        invalid SRPERF_XDP_CHAIN "prog:operand,... (numbers)"
    IFS=, read -r -a STEPS <<<"$SRPERF_XDP_CHAIN"
    ((${#STEPS[@]} <= MAX_STEPS)) ||
        invalid SRPERF_XDP_CHAIN "at most $MAX_STEPS steps (FP_MAX_STEPS), not ${#STEPS[@]}"
    for step in "${STEPS[@]}"; do
        prog=$((10#${step%%:*}))
        op=$((10#${step#*:}))
        ((prog < STEPS_PROGS_N)) || invalid SRPERF_XDP_CHAIN "program ids 0..$((STEPS_PROGS_N - 1)) (FP_PROGS), not $prog"
        if ((prog == ID_ENC)); then
            ((op >= 1 && op <= MAX_SIDS)) ||
                invalid SRPERF_XDP_CHAIN "enc operand (SIDs) 1..$MAX_SIDS, not $op"
        elif ((prog == ID_FW)); then
            ((op <= 2)) || invalid SRPERF_XDP_CHAIN "fw operand 0 (static), 1 (fib) or 2 (kernel), not $op"
        elif ((prog == ID_MON)); then
            ((op <= 1)) || invalid SRPERF_XDP_CHAIN "mon operand 0 or 1, not $op"
        else
            ((op == 0)) || invalid SRPERF_XDP_CHAIN "operand 0 for program $prog, not $op"
        fi
    done
}
readonly STEPS_PROGS_N=${#STEP_PROGS[@]}

SIDS=()
check_sids() {
    local sid
    IFS=, read -r -a SIDS <<<"$SRPERF_XDP_SIDS"
    ((${#SIDS[@]} >= 1 && ${#SIDS[@]} <= MAX_SIDS)) ||
        invalid SRPERF_XDP_SIDS "1 to $MAX_SIDS IPv6 addresses (FP_MAX_SIDS)"
    for sid in "${SIDS[@]}"; do
        ip6_bytes "$sid" >/dev/null || invalid SRPERF_XDP_SIDS "IPv6 addresses, not '$sid'"
    done
}

FLOWS=()
check_flows() {
    local flow sid
    local -a segs=()
    FLOWS=()
    [[ "$SRPERF_XDP_FLOWS" == none ]] && return 0
    IFS=';' read -r -a FLOWS <<<"$SRPERF_XDP_FLOWS"
    ((${#FLOWS[@]} <= MAX_FLOWS)) || invalid SRPERF_XDP_FLOWS "at most $MAX_FLOWS flows"
    for flow in "${FLOWS[@]}"; do
        IFS=, read -r -a segs <<<"$flow"
        ((${#segs[@]} >= 1 && ${#segs[@]} <= MAX_FLOW_SIDS)) ||
            invalid SRPERF_XDP_FLOWS "flows of 1 to $MAX_FLOW_SIDS SIDs (PM_MAX_SEGS)"
        for sid in "${segs[@]}"; do
            ip6_bytes "$sid" >/dev/null || invalid SRPERF_XDP_FLOWS "IPv6 addresses, not '$sid'"
        done
    done
}

chain_checks() {
    need "${CHAIN_VARS[@]}"
    check_chain
    check_sids
    check_flows
    case "$SRPERF_XDP_MODE" in
        native | generic | auto) ;;
        *) invalid SRPERF_XDP_MODE "native, generic or auto" ;;
    esac
    case "$SRPERF_XDP_MARK" in
        0 | 1) ;;
        *) invalid SRPERF_XDP_MARK "0 or 1" ;;
    esac
    case "$SRPERF_XDP_STEP_STATS" in
        0 | 1 | 3) ;;
        *) invalid SRPERF_XDP_STEP_STATS "0 (off), 1 (runs) or 3 (runs and ns)" ;;
    esac
    if ! [[ "$SRPERF_XDP_ROUTE" =~ ^[0-9a-fA-F:]+/[0-9]{1,3}$ ]] ||
        ! ip6_bytes "${SRPERF_XDP_ROUTE%/*}" >/dev/null ||
        ((10#${SRPERF_XDP_ROUTE#*/} > 128)); then
        invalid SRPERF_XDP_ROUTE "an IPv6 prefix addr/len"
    fi
    ip6_bytes "$SRPERF_TUNSRC" >/dev/null || invalid SRPERF_TUNSRC "an IPv6 address"
    [[ "$SRPERF_TESTER_RX_MAC" =~ ^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$ ]] ||
        invalid SRPERF_TESTER_RX_MAC "a MAC address"
    need_tools bpftool ip
    [[ -f "$SRPERF_XDP_OBJ" ]] || unsupported "no object $SRPERF_XDP_OBJ on the SUT"
}

# --- load -------------------------------------------------------------------------

ensure_bpffs() {
    if [[ "$(stat -f -c %T "$BPFFS" 2>/dev/null)" != "bpf_fs" ]]; then
        local out
        out=$(mount -t bpf bpf "$BPFFS" 2>&1) || unsupported "cannot mount a bpffs on $BPFFS: $out"
        [[ "$(stat -f -c %T "$BPFFS")" == "bpf_fs" ]] || die "$BPFFS is not on a bpffs"
    fi
}

ifindex_of() {
    [[ -e "/sys/class/net/$1/ifindex" ]] || die "no interface $1 in namespace $(ns_name)"
    cat "/sys/class/net/$1/ifindex"
}

# The kernel's routes of the slow path (a lookup miss, fw kernel, a chain without fw,
# and the table bpf_fib_lookup reads).
base_routes() {
    run ip -6 route replace "$SRPERF_SID_PREFIX" via "$SRPERF_TESTER_RX_IP6" \
        dev "$SRPERF_OUT_IF" proto "$ROUTE_PROTO"
    run ip -6 route replace "$SRPERF_DST_PREFIX6" via "$SRPERF_TESTER_RX_IP6" \
        dev "$SRPERF_OUT_IF" proto "$ROUTE_PROTO"
}

# bpftool batch lines filling the maps (checks ran before).
map_commands() {
    local dir=$1 out_ifindex=$2 out_mac=$3 i step prog op value flow k
    local -a segs=()
    local maps="$dir/maps"
    for ((i = 0; i < STEPS_PROGS_N; i++)); do
        echo "map update pinned $maps/fp_progs key hex $(le32 "$i") value pinned $dir/${STEP_PROGS[i]}"
    done
    echo "map update pinned $maps/fp_conf key hex $(le32 0) value hex $(ip6_bytes "$SRPERF_TUNSRC") \
$(mac_bytes "$SRPERF_TESTER_RX_MAC") $(mac_bytes "$out_mac") $(zeros 4) $(owner_bytes)"
    for ((i = 0; i < ${#SIDS[@]}; i++)); do
        echo "map update pinned $maps/fp_sids key hex $(le32 "$i") value hex $(ip6_bytes "${SIDS[i]}")"
    done
    echo "map update pinned $maps/fp_tx key hex $(le32 0) value hex $(le32 "$out_ifindex")"
    value="$(le32 ${#STEPS[@]}) $(le32 "$SRPERF_XDP_STEP_STATS")"
    for ((i = 0; i < MAX_STEPS; i++)); do
        if ((i < ${#STEPS[@]})); then
            step=${STEPS[i]}
            prog=$((10#${step%%:*}))
            op=$((10#${step#*:}))
            value+=" $(le32 "$prog") $(le32 "$op")"
        else
            value+=" $(zeros 8)"
        fi
    done
    echo "map update pinned $maps/fp_routes key hex $(le32 $((10#${SRPERF_XDP_ROUTE#*/}))) \
$(ip6_bytes "${SRPERF_XDP_ROUTE%/*}") value hex $value"
    echo "map update pinned $maps/pm_state key hex $(le32 0) value hex $(le32 0) $(le32 "$SRPERF_XDP_MARK")"
    for ((i = 0; i < ${#FLOWS[@]}; i++)); do
        flow=${FLOWS[i]}
        IFS=, read -r -a segs <<<"$flow"
        value="$(printf '%02x' ${#segs[@]}) $(zeros 7)"
        for ((k = 0; k < MAX_FLOW_SIDS; k++)); do
            if ((k < ${#segs[@]})); then
                value+=" $(ip6_bytes "${segs[k]}")"
            else
                value+=" $(zeros 16)"
            fi
        done
        echo "map update pinned $maps/pm_flows key hex $value value hex $(le32 "$i")"
    done
}

attach_mode() {
    local mode=$SRPERF_XDP_MODE
    if [[ "$mode" == auto ]]; then
        if [[ "$(ip -d link show dev "$SRPERF_IN_IF")" == *" veth "* ]]; then
            mode=generic
        else
            mode=native
        fi
    fi
    if [[ "$mode" == native ]]; then echo xdpdrv; else echo xdpgeneric; fi
}

# The holder keeps this mount namespace (its bpffs, the pins) alive after the command,
# in a session of its own (clean ends it by its process group); in a named network
# namespace it ends by itself once the namespace is deleted (a testbed taken down
# without clean, e.g. after srperf was killed).
start_holder() {
    local pid ns loop file
    ns=$(ns_name)
    file=$(pid_file)
    if [[ "$ns" == default ]]; then
        loop="exec sleep infinity"
    else
        # gone with its namespace: its PID file too, if still its own
        loop="while [ -e /run/netns/$ns ]; do sleep 1; done; "
        loop+="[ \"\$(cat $file 2>/dev/null)\" = \"\$\$\" ] && rm -f $file"
    fi
    setsid bash -c "exec -a $HOLDER_NAME bash -c '$loop'" </dev/null >/dev/null 2>&1 &
    pid=$!
    echo "$pid" >"$file"
}

xdp_chain() {
    chain_checks
    local dir in_ifindex out_ifindex out_mac batch
    in_ifindex=$(ifindex_of "$SRPERF_IN_IF")
    out_ifindex=$(ifindex_of "$SRPERF_OUT_IF")
    out_mac=$(cat "/sys/class/net/$SRPERF_OUT_IF/address")
    clean
    base_routes
    ensure_bpffs
    dir=$(pin_dir)
    run mkdir -p "$dir"
    run bpftool prog loadall "$SRPERF_XDP_OBJ" "$dir" type xdp pinmaps "$dir/maps"
    batch=$(mktemp)
    map_commands "$dir" "$out_ifindex" "$out_mac" >"$batch"
    local rc=0 out
    out=$(bpftool batch file "$batch" 2>&1) || rc=$?
    rm -f "$batch"
    ((rc == 0)) || die "bpftool batch (filling the maps) failed: $out"
    start_holder
    run bpftool net attach "$(attach_mode)" pinned "$dir/$DISPATCHER" dev "$SRPERF_IN_IF"
    : "$in_ifindex"
}

# --- attachments (the source of truth for counters, prog_run and clean) ------------

# "dev prog_id mode" of every fp_dispatch attached (XDP) in this namespace.
attached() {
    local dev mode id
    bpftool net show 2>/dev/null | awk '
        /^xdp:/ { x = 1; next }
        /^[a-z_]+:$/ { x = 0 }
        x && $3 == "id" { dev = $1; sub(/\(.*/, "", dev); print dev, $2, $4 }' |
        while read -r dev mode id; do
            if [[ "$(bpftool prog show id "$id" 2>/dev/null)" == *" name $DISPATCHER "* ]]; then
                echo "$dev $id $mode"
            fi
        done
}

# the ids of the maps program PROG uses, comma-separated.
map_ids() {
    bpftool prog show id "$1" 2>/dev/null | sed -n 's/.*map_ids \([0-9,]*\).*/\1/p'
}

# the map of id MAP name NAME used by program PROG.
map_of() {
    local prog=$1 name=$2 id
    for id in $(map_ids "$prog" | tr ',' ' '); do
        if [[ "$(bpftool map show id "$id")" == *" name $name "* ]]; then
            echo "$id"
            return 0
        fi
    done
    return 1
}

stop_holder() {
    local file pid i
    file=$(pid_file)
    [[ -f "$file" ]] || return 0
    pid=$(cat "$file")
    if [[ "$pid" =~ ^[0-9]+$ && -r "/proc/$pid/cmdline" ]] &&
        [[ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" == "$HOLDER_NAME "* ]]; then
        kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do
            [[ -e "/proc/$pid" ]] || break
            sleep 0.1
        done
    fi
    rm -f "$file"
}

# ids of the programs (any fp_* name) loaded by this namespace's xdp_chain: those using
# an fp_conf whose owner is ours, and every program sharing their fp_ctx (one object).
own_programs() {
    local want id conf ctx prog
    local -a confs=() ctxs=()
    want=$(owner_bytes | sed 's/\([0-9a-f][0-9a-f]\)/"0x\1"/g; s/ /,/g')
    for id in $(bpftool map show 2>/dev/null | sed -n 's/^\([0-9]*\): array  name fp_conf .*/\1/p'); do
        if [[ "$(bpftool -j map lookup id "$id" key hex 00 00 00 00 2>/dev/null)" == *"$want"* ]]; then
            confs+=("$id")
        fi
    done
    ((${#confs[@]})) || return 0
    for prog in $(bpftool prog show 2>/dev/null | sed -n 's/^\([0-9]*\): xdp  name fp_.*/\1/p'); do
        for conf in "${confs[@]}"; do
            if [[ ",$(map_ids "$prog")," == *",$conf,"* ]]; then
                ctx=$(map_of "$prog" fp_ctx) && ctxs+=("$ctx")
            fi
        done
    done
    ((${#ctxs[@]})) || return 0
    for prog in $(bpftool prog show 2>/dev/null | sed -n 's/^\([0-9]*\): xdp  name fp_.*/\1/p'); do
        for ctx in "${ctxs[@]}"; do
            if [[ ",$(map_ids "$prog")," == *",$ctx,"* ]]; then
                echo "$prog"
                break
            fi
        done
    done
}

# What the attachment and the PID file no longer show: this namespace's holders (by
# their command line) ended, and the fp_progs of its programs emptied.
sweep() {
    local ns pid prog progs i
    local -a key=()
    ns=$(ns_name)
    if [[ "$ns" != default ]]; then
        for pid in $(pgrep -f "^$HOLDER_NAME -c while \[ -e /run/netns/$ns \]; do " 2>/dev/null); do
            kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
        done
    fi
    command -v bpftool >/dev/null 2>&1 || return 0
    for prog in $(own_programs | sort -u); do
        progs=$(map_of "$prog" fp_progs) || continue
        for ((i = 0; i < MAX_PROGS; i++)); do
            read -r -a key <<<"$(le32 "$i")"
            bpftool map delete id "$progs" key hex "${key[@]}" >/dev/null 2>&1 || true
        done
    done
}

clean() {
    local dev prog mode
    if command -v bpftool >/dev/null 2>&1; then
        while read -r dev prog mode; do
            [[ -n "$dev" ]] || continue
            ip link set dev "$dev" xdpgeneric off 2>/dev/null || true
            ip link set dev "$dev" xdpdrv off 2>/dev/null || true
            : "$prog" "$mode"
        done < <(attached)
    fi
    stop_holder
    sweep
    ip -6 route flush proto "$ROUTE_PROTO" 2>/dev/null || true
    if [[ "$(stat -f -c %T "$BPFFS" 2>/dev/null)" == "bpf_fs" ]]; then
        rm -rf "$(pin_dir)"
    fi
    if command -v bpftool >/dev/null 2>&1 && [[ -n "$(attached)" ]]; then
        die "clean: $DISPATCHER still attached: $(attached | tr '\n' ' ')"
    fi
}

# step_of DISPATCHER_ID STEP: the id of step program STEP loaded with that dispatcher
# (the one whose maps include the dispatcher's fp_ctx).
step_of() {
    local prog=$1 step=$2 ctx id
    ctx=$(map_of "$prog" fp_ctx) || return 1
    for id in $(bpftool prog show name "$step" 2>/dev/null | sed -n 's/^\([0-9]*\): .*/\1/p'); do
        if [[ ",$(bpftool prog show id "$id" | sed -n 's/.*map_ids \([0-9,]*\).*/\1/p')," == *",$ctx,"* ]]; then
            echo "$id"
            return 0
        fi
    done
    return 1
}

# dump_map NAME [STEP]: JSON dump of map NAME of the attached dispatcher (or of its
# step program STEP).
dump_map() {
    local name=$1 step=${2:-} dev prog mode id
    need_tools bpftool
    read -r dev prog mode < <(attached) || true
    [[ -n "${prog:-}" ]] || return 0
    if [[ -n "$step" ]]; then
        prog=$(step_of "$prog" "$step") || die "no $step program with the dispatcher on $dev"
    fi
    id=$(map_of "$prog" "$name") || die "no $name map on program $prog ($dev)"
    bpftool -j map dump id "$id"
    echo
    : "$mode"
}

counters() { dump_map fp_stats; }

flows() { dump_map pm_counters fp_mon; }

steps() { dump_map fp_steps; }

# prog_run: SRPERF_XDP_REPEAT single BPF_PROG_RUNs of the dispatcher over the frame, in
# one bpftool batch (a run with bpftool's own `repeat N` would run the chain again over
# the frame the previous run left: hop limit already decremented, headers already
# pushed).  Prints {"runs": [bpftool's result of each], "data_out": "<hex>"}.
prog_run() {
    need SRPERF_XDP_FRAME SRPERF_XDP_REPEAT
    [[ "$SRPERF_XDP_FRAME" =~ ^([0-9a-fA-F]{2})+$ ]] || invalid SRPERF_XDP_FRAME "hex bytes"
    if ! [[ "$SRPERF_XDP_REPEAT" =~ ^[1-9][0-9]{0,4}$ ]] || ((SRPERF_XDP_REPEAT > 20000)); then
        invalid SRPERF_XDP_REPEAT "1 to 20000"
    fi
    need_tools bpftool
    local dev prog mode data out rc=0 esc="" i
    read -r dev prog mode < <(attached) || true
    [[ -n "${prog:-}" ]] || return 0
    for ((i = 0; i < ${#SRPERF_XDP_FRAME}; i += 2)); do
        esc+="\\x${SRPERF_XDP_FRAME:i:2}"
    done
    data=$(mktemp)
    printf '%b' "$esc" >"$data"
    for ((i = 0; i < SRPERF_XDP_REPEAT; i++)); do
        echo "prog run id $prog data_in $data data_out $data.out repeat 1"
    done >"$data.batch"
    out=$(bpftool -j batch file "$data.batch" 2>&1) || rc=$?
    if ((rc == 0)); then
        out="{\"runs\": $out, \"data_out\": \"$(od -An -v -tx1 "$data.out" | tr -d ' \n')\"}"
    fi
    rm -f "$data" "$data.out" "$data.batch"
    ((rc == 0)) || die "bpftool prog run id $prog failed: $out"
    echo "$out"
    : "$dev" "$mode"
}

main "$@"
