#!/usr/bin/env bash
# Install everything srperf needs on a Debian host (run as root):
# system packages, a virtualenv in .venv with srperf and its Python
# dependencies, then compile the traffic generator and the eBPF dataplane.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

APT_PACKAGES=(clang llvm libbpf-dev bpftool gcc make iproute2 ethtool shellcheck
              python3-venv util-linux procps openssh-client openssh-server nftables
              netcat-openbsd)
VENV="${SRPERF_VENV:-.venv}"
# The report and store tests open reports in headless Chromium and start a PostgreSQL server.
APT_PACKAGES+=(chromium postgresql)
# Stateful experiments (goodput, http) and profile trials use the real programs.
APT_PACKAGES+=(iperf3 wrk lighttpd nginx-light linux-perf curl)
# Loss monitoring's kernel-path nodes count with ip6tables (srh, u32, TOS) and ipset.
APT_PACKAGES+=(iptables ipset)
# The delay line's tests and bench measure the round trip it adds with ping.
APT_PACKAGES+=(iputils-ping)
# Kernel targets: QEMU boots a named kernel (TCG where KVM cannot) from an initramfs of
# busybox + iproute2 + bash and the kernel's own modules (modprobe --show-depends: kmod).
APT_PACKAGES+=(qemu-system-x86 busybox-static kmod)
# srperf provision --kernel is tested on a guest that boots the installed kernel with kexec
# (this host's own reboots stay as they were: kexec-tools/load_kexec is preseeded false).
APT_PACKAGES+=(kexec-tools)
# srperf kernel build (a kernel from source with a patch series; its tests patch a small tree).
APT_PACKAGES+=(bc bison flex patch xz-utils libelf-dev libssl-dev)

if [[ "$(id -u)" -ne 0 ]]; then
    echo "install.sh: run as root (apt-get, network namespaces, BPF)" >&2
    exit 1
fi

# One dpkg-query for all of them (a package dpkg has never heard of prints no line).
declare -A installed=()
while read -r pkg status; do
    [[ "$status" == "install ok installed" ]] && installed["$pkg"]=1
done < <(dpkg-query -W -f='${Package} ${Status}\n' "${APT_PACKAGES[@]}" 2>/dev/null || true)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    [[ -n "${installed[$pkg]:-}" ]] || missing+=("$pkg")
done
if [[ "${#missing[@]}" -gt 0 ]]; then
    echo "installing system packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    echo "kexec-tools kexec-tools/load_kexec boolean false" | debconf-set-selections
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
stamp="$VENV/.srperf-installed"
if [[ ! -f "$stamp" || pyproject.toml -nt "$stamp" ]]; then
    "$VENV/bin/pip" install -q --disable-pip-version-check -e '.[test]'
    touch "$stamp"
fi
"$VENV/bin/srperf" build >/dev/null
echo "srperf installed in $VENV"
