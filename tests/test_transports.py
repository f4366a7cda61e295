"""Transports and the CFG manager: a local namespace, and SSH against a real sshd.

The SSH test starts OpenSSH's sshd on 127.0.0.1 (a free port) with throw-away
keys, so paramiko's real code path is exercised: host-key check, SFTP push,
exit status, stderr, environment and timeouts.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from srperf.forwarders.base import Forwarder
from srperf.sut_control import SutControl
from srperf.config.model import TestbedConfig
from srperf.config.model import SshConfig
from srperf.errors import CfgError, TransportError, UnsupportedBehavior
from srperf.transports.netns import NetnsTransport
from srperf.transports.ssh import SshTransport

FAKE_CFG = """#!/usr/bin/env bash
set -euo pipefail
case "$1" in
  ok) echo "${SRPERF_GREETING}" > "${SRPERF_OUT}" ;;
  unsupported) echo "unsupported: Error: kernel says no" >&2; exit 3 ;;
  clean) rm -f "${SRPERF_OUT}" ;;
  *) echo "boom" >&2; exit 1 ;;
esac
"""


def _fake_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "fake.sh"
    script.write_text(FAKE_CFG)
    monkeypatch.setattr("srperf.resources.cfg_script", lambda fwd: script)


def _exercise_cfg(transport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_script(tmp_path, monkeypatch)
    out = tmp_path / "out.txt"
    class FakeForwarder(Forwarder):
        name, script = "fake", "fake.sh"

    cfg = SutControl(FakeForwarder(), transport, TestbedConfig(name="t"))
    cfg.install()
    cfg.env = {"SRPERF_GREETING": "hello world", "SRPERF_OUT": str(out)}
    cfg.apply("ok", "behavior_ok")
    assert out.read_text().strip() == "hello world"
    with pytest.raises(UnsupportedBehavior) as info:
        cfg.apply("unsupported", "end_dt4")
    assert info.value.reason == "Error: kernel says no"
    with pytest.raises(CfgError, match="boom"):
        cfg.apply("broken", "x")
    cfg.clean()
    assert not out.exists()


@pytest.mark.netns
def test_netns_transport_runs_in_namespace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ns = "srpt-tr"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        transport = NetnsTransport(ns, workdir=tmp_path / "work")
        result = transport.run(["ip", "-o", "link", "show"])
        assert result.ok and "lo" in result.stdout and result.stdout.count("\n") == 1
        assert transport.run(["sh", "-c", "echo err >&2; exit 7"]).returncode == 7
        assert transport.run(["sleep", "5"], timeout=0.3).returncode == 124
        _exercise_cfg(transport, tmp_path, monkeypatch)
        transport.close()
        assert not (tmp_path / "work").exists()
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def sshd(tmp_path: Path):
    """A real OpenSSH server on 127.0.0.1 with throw-away host and client keys."""
    sshd_bin = shutil.which("sshd") or "/usr/sbin/sshd"
    if not os.path.exists(sshd_bin) or os.geteuid() != 0:
        pytest.skip("needs root and OpenSSH's sshd (scripts/install.sh installs it)")
    keys = tmp_path / "keys"
    keys.mkdir()
    for name in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)],
                       check=True)
    (keys / "authorized_keys").write_text((keys / "client.pub").read_text())
    port = _free_port()
    host_pub = (keys / "host.pub").read_text().split()
    (keys / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    config = keys / "sshd_config"
    config.write_text(f"""Port {port}
ListenAddress 127.0.0.1
HostKey {keys / 'host'}
AuthorizedKeysFile {keys / 'authorized_keys'}
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile {keys / 'sshd.pid'}
Subsystem sftp internal-sftp
""")
    Path("/run/sshd").mkdir(exist_ok=True)
    proc = subprocess.Popen([sshd_bin, "-D", "-e", "-f", str(config)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        else:
            pytest.fail("sshd did not start: " + proc.stderr.read().decode() if proc.stderr else "")
        yield SshConfig(host="127.0.0.1", port=port, user="root",
                        key_file=str(keys / "client"), known_hosts=str(keys / "known_hosts"),
                        remote_dir=str(tmp_path / "remote"), timeout_s=10)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_ssh_transport_against_real_sshd(sshd: SshConfig, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    with SshTransport(sshd) as transport:
        local = tmp_path / "payload.txt"
        local.write_text("pushed over sftp\n")
        remote = transport.push(local)
        assert remote == str(Path(sshd.remote_dir) / "payload.txt")
        result = transport.run(["cat", remote])
        assert result.ok and result.stdout == "pushed over sftp\n"
        result = transport.run(["sh", "-c", "echo to-stderr >&2; exit 5"])
        assert result.returncode == 5 and result.stderr.strip() == "to-stderr"
        result = transport.run(["sh", "-c", 'printf "%s" "$X"'], env={"X": "a b'c"})
        assert result.stdout == "a b'c"
        assert transport.run(["sleep", "5"], timeout=0.5).returncode == 124
        _exercise_cfg(transport, tmp_path, monkeypatch)


def test_ssh_transport_rejects_unknown_host_key(sshd: SshConfig, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty_known_hosts").write_text("")
    cfg = SshConfig(host=sshd.host, port=sshd.port, user="root", key_file=sshd.key_file,
                    known_hosts=str(tmp_path / "empty_known_hosts"), timeout_s=5)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.ssh/known_hosts either
    with pytest.raises(TransportError, match="127.0.0.1"):
        SshTransport(cfg).run(["true"])
