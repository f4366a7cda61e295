"""SshTransport against a real OpenSSH sshd in a network namespace (tests/sshd.py).

The client side reaches it through proxy_command (``ip netns exec CLIENT nc``);
the direct-socket path is exercised by a Python child running inside the
client namespace.  All traffic stays on the management veth between the two
``sshq-*`` namespaces this module creates.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from srperf.config.model import SshConfig
from srperf.errors import TransportError
from srperf.util.netns import CommandFailed
from srperf.transports.ssh import SshTransport
from sshd import SshdNode, sshd_in_new_namespaces
from test_transports import exercise_cfg, exercise_files

pytestmark = pytest.mark.netns

SERVER_NS = f"sshq-{os.getpid()}-s"
CLIENT_NS = f"sshq-{os.getpid()}-c"


@pytest.fixture(scope="module")
def node() -> Iterator[SshdNode]:
    if not os.path.exists("/usr/sbin/sshd") or not os.path.exists("/usr/bin/nc"):
        pytest.skip("needs OpenSSH's sshd and netcat-openbsd (scripts/install.sh)")
    with sshd_in_new_namespaces(SERVER_NS, CLIENT_NS, tag=3) as sshd:
        yield sshd


@pytest.fixture
def sshd(node: SshdNode) -> Iterator[SshdNode]:
    """The module's sshd, listening, with no session left over from another test."""
    node.start()
    yield node
    node.drop_sessions()
    node.start()


def cfg(node: SshdNode, **overrides: Any) -> SshConfig:
    return SshConfig(**node.ssh_config(**overrides))


def where(node: SshdNode) -> str:
    return f"ssh root@{node.host}:22"


def test_run_env_stdin_exit_status_and_stderr(sshd: SshdNode) -> None:
    with SshTransport(cfg(sshd)) as transport:
        assert transport.where == where(sshd)
        result = transport.run(["sh", "-c", 'cat; printf "%s" "$X" >&2; exit 5'],
                               env={"X": "a b'c $HOME"}, input_text="line 1\nline 2\n")
        assert result.returncode == 5
        assert result.stdout == "line 1\nline 2\n" and result.stderr == "a b'c $HOME"
        # more than the SSH window (2 MB) on both streams: read while it runs
        result = transport.run(["sh", "-c", "head -c 3000000 /dev/zero; "
                                "head -c 2500000 /dev/zero >&2"])
        assert result.ok and (len(result.stdout), len(result.stderr)) == (3000000, 2500000)
        with pytest.raises(CommandFailed, match=rf"^{where(sshd)}: false exited 1"):
            transport.check(["false"])
        assert transport.run(["no-such-command-srperf"]).returncode == 127


def test_timeout_stops_the_command_on_the_node(sshd: SshdNode) -> None:
    with SshTransport(cfg(sshd)) as transport:
        start = time.monotonic()
        result = transport.run(["sleep", "37.25"], timeout=0.5)
        assert result.returncode == 124 and "timed out after 0.5 s" in result.stderr
        assert time.monotonic() - start < 5
        time.sleep(0.3)
        left = subprocess.run(["pgrep", "-f", "sleep 37.25"], capture_output=True, text=True)
        assert left.stdout == "", "the timed-out command still runs on the node"
        assert transport.run(["true"]).ok  # the session survived


def test_workdir_push_and_cleanup(sshd: SshdNode, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # The node's file system is this host's: check the results directly.
    base = tmp_path / "base"
    base.mkdir()
    transport = SshTransport(cfg(sshd, tmp_base=str(base)))
    work = exercise_files(transport, tmp_path, str(base))
    exercise_cfg(transport, tmp_path, monkeypatch)
    with SshTransport(cfg(sshd, tmp_base=str(base))) as other:
        assert other.workdir() != work
    transport.close()
    transport.close()  # idempotent
    assert os.listdir(base) == []


def test_unknown_host_key(sshd: SshdNode, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(TransportError) as info:
        SshTransport(cfg(sshd, known_hosts=str(empty))).run(["true"])
    msg = str(info.value)
    assert msg.startswith(f"{where(sshd)}: unknown host key")
    assert str(empty) in msg and "SHA256:" in msg and "ssh-keyscan" in msg


def test_changed_host_key(sshd: SshdNode, tmp_path: Path) -> None:
    other = Path(sshd.new_key(f"other_host_{time.monotonic_ns()}") + ".pub").read_text().split()
    known = tmp_path / "known_hosts"
    known.write_text(f"{sshd.host} {other[0]} {other[1]}\n")
    with pytest.raises(TransportError, match=rf"^{where(sshd)}: host key mismatch"):
        SshTransport(cfg(sshd, known_hosts=str(known))).run(["true"])


def test_refused_key(sshd: SshdNode) -> None:
    stranger = sshd.new_key(f"stranger_{time.monotonic_ns()}")
    with pytest.raises(TransportError) as info:
        SshTransport(cfg(sshd, key_file=stranger)).run(["true"])
    msg = str(info.value)
    assert msg.startswith(f"{where(sshd)}: authentication failed")
    assert stranger in msg and "authorized_keys" in msg


def test_connection_refused_through_proxy(sshd: SshdNode) -> None:
    sshd.stop()
    with pytest.raises(TransportError, match=rf"^{where(sshd)}: connection refused"):
        SshTransport(cfg(sshd)).run(["true"])


def test_unreachable_and_timeout_through_proxy(sshd: SshdNode) -> None:
    off_link = "203.0.113.254"  # no route in the client namespace: nothing is sent
    with pytest.raises(TransportError, match=rf"^ssh root@{off_link}:22: host unreachable"):
        SshTransport(cfg(sshd, host=off_link)).run(["true"])
    start = time.monotonic()
    silent = sshd.unused_ips[0]
    with pytest.raises(TransportError, match=rf"^ssh root@{silent}:22: no answer within 1 s"):
        SshTransport(cfg(sshd, host=silent, timeout_s=1)).run(["true"])
    assert time.monotonic() - start < 6


DIRECT = """
import json, sys
from srperf.config.model import SshConfig
from srperf.transports.ssh import SshTransport
from srperf.errors import TransportError
try:
    with SshTransport(SshConfig(**json.loads(sys.argv[1]))) as t:
        print("ok", t.run(["echo", "hi"]).stdout.strip())
except TransportError as exc:
    print(exc)
"""


def _direct(node: SshdNode, **overrides: Any) -> str:
    """Connect without a proxy from a Python child inside the client namespace."""
    config = node.ssh_config(proxy_command=None, **overrides)
    proc = subprocess.run(["ip", "netns", "exec", node.client_ns, sys.executable, "-c", DIRECT,
                           json.dumps(config)], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[1])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_direct_connection_and_its_failures(sshd: SshdNode) -> None:
    assert _direct(sshd) == "ok hi"
    assert _direct(sshd, host="203.0.113.254").startswith(
        "ssh root@203.0.113.254:22: host unreachable")
    silent = sshd.unused_ips[1]
    assert _direct(sshd, host=silent, timeout_s=1).startswith(
        f"ssh root@{silent}:22: no answer within 1 s")
    sshd.stop()
    assert _direct(sshd).startswith(f"{where(sshd)}: connection refused")


def _run_in_thread(transport: SshTransport, argv: list[str]) -> tuple[threading.Thread, dict]:
    box: dict[str, Any] = {}

    def body() -> None:
        try:
            box["result"] = transport.run(argv, timeout=60)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            box["error"] = exc
        box["t"] = time.monotonic()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, box


def test_dropped_session_then_reconnect(sshd: SshdNode) -> None:
    transport = SshTransport(cfg(sshd, keepalive_s=2))
    work = transport.workdir()
    thread, box = _run_in_thread(transport, ["sleep", "41.5"])
    time.sleep(1.0)
    assert sshd.drop_sessions() > 0
    dropped = time.monotonic()
    thread.join(15)
    assert not thread.is_alive(), "run() hung after the session dropped"
    assert "result" not in box, f"run() returned {box.get('result')} after a drop"
    assert box["t"] - dropped < 10
    message = str(box["error"])
    assert message.startswith(f"{where(sshd)}: connection lost") and "reconnect()" in message
    with pytest.raises(TransportError, match=rf"^{where(sshd)}: connection lost"):
        transport.run(["true"])
    transport.reconnect()  # sshd still listens: the node can be cleaned
    assert transport.run(["echo", "back"]).stdout == "back\n"
    assert transport.workdir() == work and Path(work).is_dir()
    transport.close()
    assert not Path(work).exists()


def test_close_after_a_drop_still_removes_the_workdir(sshd: SshdNode) -> None:
    transport = SshTransport(cfg(sshd, keepalive_s=1))
    work = transport.workdir()
    sshd.drop_sessions()
    time.sleep(0.2)
    with pytest.raises(TransportError, match="connection lost"):
        transport.run(["true"])
    transport.close()
    assert not Path(work).exists()


def test_reconnect_while_sshd_is_down_says_so(sshd: SshdNode) -> None:
    transport = SshTransport(cfg(sshd))
    assert transport.run(["true"]).ok
    sshd.stop()
    with pytest.raises(TransportError, match=rf"^{where(sshd)}: connection refused"):
        transport.reconnect()
    sshd.start()
    transport.reconnect()
    assert transport.run(["true"]).ok
    transport.close()
