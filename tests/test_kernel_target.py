"""Kernel targets (srperf/testbeds/kernel_vm.py, srperf/kernel/, transports/console.py).

Fast, no namespaces: the ``kernel`` block's checks, the loader's, the initramfs
archive (read back by busybox cpio), the console agent driven by the real
ConsoleTransport over a unix socket (the agent runs here, in bash, as it does in
the guest).

Slow, ``netns``: a real guest (Debian's 6.1 cloud kernel under QEMU, TCG on this
host) booted by the testbed kind, every behavior of forwarder ``linux``
configured in it by ``cfg_scripts/linux.sh`` unchanged and verified on real
packets (End.DT4, End.DT6 in VRF mode and End.DT46 included: the guest kernel has
VRF), then torn down: no QEMU process, tap, namespace or file left.  The kernel
package is fetched once into the default cache (about 27 MB).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from srperf.behaviors import catalogue as B
from srperf.forwarders import registry as forwarders
from srperf.config.loader import load_testbed
from srperf.errors import ConfigError
from srperf.kernel.target import KernelTarget
from srperf.transports.base import TIMED_OUT
from srperf.transports.console import AGENT_SCRIPT, ConsoleTransport

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_61 = "linux-image-6.1.0-56-cloud-amd64-unsigned"


# --- the kernel block ----------------------------------------------------------------

@pytest.mark.parametrize("block, key", [
    (None, "kernel"),
    ({}, "kernel"),
    ({"package": PACKAGE_61, "image": "/boot/vmlinuz"}, "kernel"),
    ({"package": "vmlinuz"}, "kernel.package"),
    ({"package": PACKAGE_61, "accel": "hvf"}, "kernel.accel"),
    ({"package": PACKAGE_61, "memory_mb": 16}, "kernel.memory_mb"),
    ({"package": PACKAGE_61, "flavour": "cloud"}, "kernel.flavour"),
    ({"image": "/boot/vmlinuz"}, "kernel.image"),
    ({"package": PACKAGE_61, "cache_dir": "cache"}, "kernel.cache_dir"),
])
def test_kernel_block_refused_naming_the_key(block, key) -> None:
    with pytest.raises(ConfigError) as err:
        KernelTarget.from_mapping("tb.yaml", block)
    assert err.value.key == key and "tb.yaml" in str(err.value)


def test_kernel_testbed_files_load() -> None:
    for name in ("kernel-6.1", "kernel-6.12"):
        tb = load_testbed(ROOT / "testbed" / f"{name}.yaml")
        assert tb.kind == "kernel" and tb.sut.transport.kind == "console"
        target = KernelTarget.from_mapping(tb.source, tb.kernel)
        assert target.package and target.package.startswith("linux-image-6.")


def test_kernel_block_only_on_a_kernel_testbed(tmp_path: Path) -> None:
    path = tmp_path / "tb.yaml"
    path.write_text(f"name: k34v\nkind: virtual\nprefix: k34v\nkernel: {{package: {PACKAGE_61}}}\n")
    with pytest.raises(ConfigError, match="only a testbed of kind 'kernel'"):
        load_testbed(path)
    path.write_text(f"name: k34k\nkind: kernel\nprefix: k34k\nkernel: {{package: {PACKAGE_61}}}\n")
    with pytest.raises(ConfigError, match="console"):
        load_testbed(path)   # the transport must be named: console


# --- the initramfs -----------------------------------------------------------------------

def test_initramfs_holds_what_the_guest_needs(tmp_path: Path) -> None:
    """The 6.1 kernel's archive (from the cache the guest tests fill): init, agent, bash,
    iproute2 (and no busybox ip applet), the modules in modprobe's dependency order."""
    from srperf.kernel import initramfs
    from srperf.kernel.package import KernelImage, MANIFEST

    if not Path(initramfs.BUSYBOX).exists() or shutil.which("modprobe") is None:
        pytest.skip("busybox-static and kmod are installed by scripts/install.sh")
    cached = sorted(Path(KernelTarget.cache_dir).glob(f"{PACKAGE_61}_*/{MANIFEST}"))
    if not cached:
        pytest.skip(f"{PACKAGE_61} not in the kernel cache yet (the guest tests fetch it)")
    import json

    kernel = KernelImage(**json.loads(cached[-1].read_text()))
    order = [p.name for p in initramfs.module_order(kernel)]
    assert order == ["virtio_ring.ko", "virtio.ko", "virtio_pci_modern_dev.ko",
                     "virtio_pci_legacy_dev.ko", "virtio_pci.ko", "failover.ko",
                     "net_failover.ko", "virtio_net.ko", "vrf.ko"]
    out = initramfs.build(kernel, tmp_path / "initrd.gz")
    listing = subprocess.run(f"gzip -dc {out} | busybox cpio -t 2>/dev/null", shell=True,
                             capture_output=True, text=True, check=True).stdout.split()
    for name in ("init", "srperf-agent.sh", "bin/busybox", "bin/bash", "sbin/ip",
                 "lib/modules/00-virtio_ring.ko", "lib/modules/08-vrf.ko",
                 "etc/srperf-modules", "bin/sh", "bin/timeout", "bin/base64"):
        assert name in listing, name
    assert "bin/ip" not in listing   # busybox's ip knows no seg6


# --- the console agent, here ------------------------------------------------------------

@pytest.fixture
def agent(tmp_path: Path):
    """The console agent served on a unix socket, as QEMU serves the guest's ttyS1."""
    script = tmp_path / "agent.sh"
    script.write_text(AGENT_SCRIPT)
    sock_path = str(tmp_path / "agent.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(sock_path)
    server.listen(1)
    procs: list[subprocess.Popen] = []

    def serve() -> None:
        conn, _ = server.accept()
        procs.append(subprocess.Popen(["bash", str(script)], stdin=conn, stdout=conn,
                                      env={**os.environ, "SRPERF_AGENT_DIR": str(tmp_path)}))
        conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    transport = ConsoleTransport(sock_path, label="k34 agent", tmp_base=str(tmp_path))
    try:
        yield transport
    finally:
        transport.close()
        for proc in procs:
            proc.wait(timeout=10)     # the agent ends when the socket closes
        server.close()


def test_console_transport_runs_commands(agent: ConsoleTransport, tmp_path: Path) -> None:
    res = agent.run(["sh", "-c", 'echo "out $X"; echo err >&2; exit 7'], env={"X": "a b'c"})
    assert (res.returncode, res.stdout, res.stderr) == (7, "out a b'c\n", "err\n")
    # stdin, binary-safe output, a marker-looking line in the output
    res = agent.run(["cat"], input_text="@@srperf 1 0 - -\nline2\n")
    assert res.ok and res.stdout == "@@srperf 1 0 - -\nline2\n"
    assert agent.run(["no-such-command-k34"]).returncode == 127
    # push keeps the mode, in the private work directory
    local = tmp_path / "script.sh"
    local.write_text("#!/bin/sh\necho pushed\n")
    local.chmod(0o750)
    remote = agent.push(local)
    assert remote.startswith(str(tmp_path) + "/srperf.")
    assert oct(os.stat(remote).st_mode & 0o777) == "0o750"
    assert agent.run([remote]).stdout == "pushed\n"


def test_console_transport_stops_a_command_at_its_timeout(agent: ConsoleTransport) -> None:
    res = agent.run(["sleep", "5"], timeout=1.0)
    assert res.returncode == TIMED_OUT and "timed out" in res.stderr
    assert agent.run(["echo", "next"]).stdout == "next\n"   # the agent serves on


# --- a real guest ------------------------------------------------------------------------

def _qemu_pids(name: str) -> list[int]:
    out = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if f"\0-name\0{name}\0".encode() in b"\0" + cmdline.read_bytes():
                out.append(int(cmdline.parent.name))
        except OSError:
            pass
    return out


@pytest.fixture(scope="module")
def guest(tmp_path_factory):
    """A 6.1 guest up as testbed k34 (torn down at the end, checked to leave nothing)."""
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("qemu-system-x86 is installed by scripts/install.sh")
    from srperf.testbeds import registry as testbeds

    path = tmp_path_factory.mktemp("k34") / "kernel.yaml"
    path.write_text((ROOT / "testbed" / "kernel-6.1.yaml").read_text()
                    .replace("name: kernel-6.1", "name: k34-kernel")
                    .replace("prefix: k61", "prefix: k34"))
    tb = load_testbed(path)
    testbed = testbeds.create(tb)
    testbed.down()
    try:
        assert testbed.up() is True
        yield testbed
    finally:
        testbed.close()
        testbed.down()
    spec = testbed.spec()
    assert not _qemu_pids(spec.name), "QEMU still runs after down"
    assert not Path(spec.run_dir).exists(), "the run directory is still there"
    assert tb.tester_ns not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                              text=True).stdout


netns_slow = [pytest.mark.netns, pytest.mark.slow]


@pytest.mark.netns
@pytest.mark.slow
def test_guest_is_the_named_kernel_and_recorded(guest) -> None:
    env = guest.environment(forwarders.get("linux"))
    kt = env["kernel_target"]
    assert kt["kernel"]["name"] == PACKAGE_61 and len(kt["kernel"]["sha256"]) == 64
    assert kt["uname_r"] == kt["kernel"]["release"] == "6.1.0-56-cloud-amd64"
    assert env["nodes"]["sut"]["kernel"] == kt["uname_r"]       # read in the guest
    assert kt["accelerator"] in ("kvm", "tcg")
    assert env["execution"]["mode"] == ("emulated" if kt["accelerator"] == "tcg" else "native")
    if kt["accelerator"] == "tcg":
        assert guest.label_line("x").startswith("[EMULATED tcg]")
    # the guest's NICs carry the testbed's names and MACs; the SUT's base setup is there
    sut = guest.node("sut")
    links = sut.check(["ip", "-br", "link"]).stdout
    for port in (guest.config.sut.in_port, guest.config.sut.out_port):
        assert port.name in links and port.mac in links
    assert sut.check(["ip", "sr", "tunsrc", "show"]).stdout.split()[-1] == \
        guest.config.addressing.tunsrc


@pytest.mark.netns
@pytest.mark.slow
def test_every_linux_behavior_configures_and_verifies_in_the_guest(guest) -> None:
    """cfg_scripts/linux.sh, unchanged, in the guest: every behavior (VRF ones included)
    configured, checked on real packets through the taps, cleaned."""
    linux = forwarders.get("linux")
    sut = guest.sut(linux, linux.parse_options({}))
    generator = guest.generator("ipv6")
    verified: dict[str, str] = {}
    sut.open()
    try:
        for name in linux.behaviors:
            behavior = B.get(name)
            sut.configure(behavior)
            try:
                verified[name] = sut.verify(behavior, generator, 64)
            finally:
                sut.unconfigure(behavior)
    finally:
        sut.close()
    assert set(verified) == set(linux.behaviors)
    assert {"end_dt4", "end_dt6_vrf", "end_dt46", "end_dt46_v4"} <= set(verified)
