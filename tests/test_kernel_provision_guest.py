"""srperf provision --kernel for real: Debian's 6.12 kernel installed on a guest that srperf
booted with Debian's 6.1 kernel and that plays the SSH host (srperf/kernel/guest_sshd.py:
this host's OpenSSH sshd in the guest's initramfs, reached only through namespace
k4b-mgmt and its tap device).

One guest for the module (QEMU TCG here, about a minute in all): ``--check`` says it
differs (exit 1); a boot method the guest lacks (grub: it is booted with -kernel and has
no boot loader) is refused before anything is copied, and the guest still runs 6.1;
then the kernel is copied over SSH (SHA-256 checked on the guest), installed as files
(depmod, the guest's update-initramfs: a test double of initramfs-tools, named in
guest_sshd), loaded with kexec and booted; SSH comes back with a new boot id and
``uname -r`` is 6.12; ``--check`` says so (exit 0).  Afterwards nothing is left: no QEMU
process, tap, namespace or file.  The kernels come from the kernel cache (fetched once).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from srperf.cli.entry import main
from srperf.config.loader import load_testbed
from srperf.kernel import package, qemu
from srperf.kernel.guest_sshd import SshGuest
from srperf.kernel.target import KernelTarget
from srperf.util.netns import netns_exists

pytestmark = [pytest.mark.netns, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "k4b"


def _target(name: str) -> KernelTarget:
    tb = load_testbed(ROOT / "testbed" / f"{name}.yaml")
    return KernelTarget.from_mapping(tb.source, tb.kernel)


@pytest.fixture(scope="module")
def guest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SshGuest, Path]]:
    keys = tmp_path_factory.mktemp("k4b-keys")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / "key")],
                   check=True)
    k61 = package.fetch(_target("kernel-6.1"))
    package.fetch(_target("kernel-6.12"))   # cached: the test times no download
    g = SshGuest(k61, PREFIX, (keys / "key.pub").read_text(), tag=29)
    try:
        with g:
            (keys / "known_hosts").write_text(g.known_hosts_line)
            yield g, keys
    finally:
        # nothing left behind: no QEMU, no namespace (and so no tap), no file
        assert qemu.pid_of(g.spec) is None
        assert not netns_exists(g.netns)
        assert not g.run_dir.exists()


def _testbed(tmp_path: Path, g: SshGuest, keys: Path, **kernel: object) -> str:
    data = {"name": "k4b-guest", "kind": "ssh", "prefix": PREFIX,
            "tester": {"driver": "linux", "tx": {"name": "t0"}, "rx": {"name": "t1"}},
            "sut": {"forwarder": "linux", "in": {"name": "s0"}, "out": {"name": "s1"},
                    "transport": {"kind": "ssh", "ssh": g.ssh_config(
                        str(keys / "known_hosts"), str(keys / "key"))}},
            "provision": {"kernel": {"reboot_timeout_s": 180, **kernel}}}
    path = tmp_path / f"guest-{len(kernel)}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_provision_installs_612_on_a_61_guest_and_boots_it(guest, tmp_path: Path,
                                                           capsys) -> None:
    g, keys = guest
    k612 = package.fetch(_target("kernel-6.12"))
    tb = _testbed(tmp_path, g, keys)

    assert main(["provision", tb, "--kernel", "kernel-6.12", "--check"]) == 1
    out = capsys.readouterr().out
    assert f"sut: kernel {k612.release}: DIFFERS" in out
    assert "the SUT runs 6.1.0-56-cloud-amd64" in out

    # a failed install: the SUT keeps (running and booting) its kernel
    grub = _testbed(tmp_path, g, keys, boot="grub")
    assert main(["provision", grub, "--kernel", "kernel-6.12"]) == 1
    err = capsys.readouterr().err
    assert f"{grub}: provision.kernel.boot = 'grub'" in err and "grub-reboot" in err
    assert main(["provision", tb, "--kernel", "kernel-6.12", "--check"]) == 1
    capsys.readouterr()

    assert main(["provision", tb, "--kernel", "kernel-6.12"]) == 0
    out = capsys.readouterr().out
    assert "copy: srperf-kernel-" in out and "install (files): done" in out
    assert "arm: load it (kexec): done" in out and f"reboot (kexec) into {k612.release}" in out
    assert f"sut: kernel {k612.release}: done (was 6.1.0-56-cloud-amd64; install files, " \
        "boot kexec" in out
    assert f"srperf-sshguest: ready {k612.release}" in Path(g.spec.console_log).read_text()

    assert main(["provision", tb, "--kernel", "kernel-6.12", "--check"]) == 0
    assert f"sut: kernel {k612.release}: as described" in capsys.readouterr().out
    assert main(["provision", tb, "--kernel", "kernel-6.12"]) == 0     # idempotent
    assert "nothing to do" in capsys.readouterr().out
