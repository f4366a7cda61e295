"""The ``sut.transport.ssh`` block of a testbed: what loads, what is refused and how."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from srperf.config.loader import load_testbed
from srperf.config.model import expand_proxy_command
from srperf.errors import ConfigError
from srperf.transports.ssh import SshTransport


def _write(tmp_path: Path, ssh: dict[str, Any]) -> Path:
    data = {"name": "hw", "kind": "ssh",
            "sut": {"forwarder": "linux", "transport": {"kind": "ssh", "ssh": ssh}}}
    path = tmp_path / "tb.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "id").write_text("not checked at load time\n")
    (tmp_path / "keys" / "id").chmod(0o600)   # as OpenSSH, a key others may read is refused
    (tmp_path / "keys" / "known_hosts").write_text("")
    return tmp_path / "keys"


def test_ssh_block_loads_with_defaults_and_relative_paths(tmp_path: Path, keys: Path) -> None:
    tb = load_testbed(_write(tmp_path, {"host": "sut.example", "key_file": "keys/id",
                                        "known_hosts": "keys/known_hosts",
                                        "proxy_command": "ssh -W %h:%p jump"}))
    ssh = tb.sut.transport.ssh
    assert tb.sut.transport.kind == "ssh" and ssh is not None
    assert (ssh.user, ssh.port, ssh.tmp_base, ssh.keepalive_s) == ("root", 22, "/tmp", 5)
    assert ssh.key_file == str(keys / "id") and ssh.known_hosts == str(keys / "known_hosts")
    assert ssh.where == "ssh root@sut.example:22"


@pytest.mark.parametrize("key", ["key_file", "known_hosts"])
def test_missing_or_non_file_key_paths_are_refused(tmp_path: Path, keys: Path, key: str) -> None:
    good = {"host": "h", "key_file": str(keys / "id"), "known_hosts": str(keys / "known_hosts")}
    path = _write(tmp_path, {**good, key: "keys/nope"})
    with pytest.raises(ConfigError) as info:
        load_testbed(path)
    assert (info.value.file, info.value.key, info.value.value) == (
        str(path), f"sut.transport.ssh.{key}", "keys/nope")
    assert "does not exist" in str(info.value)
    with pytest.raises(ConfigError, match="not a regular file"):
        load_testbed(_write(tmp_path, {**good, key: str(keys)}))


def test_remote_dir_is_refused_with_what_replaced_it(tmp_path: Path) -> None:
    path = _write(tmp_path, {"host": "h", "remote_dir": "/tmp/srperf"})
    with pytest.raises(ConfigError) as info:
        load_testbed(path)
    assert info.value.key == "sut.transport.ssh.remote_dir"
    assert "tmp_base" in str(info.value) and "mktemp" in str(info.value)


@pytest.mark.parametrize("ssh,key", [
    ({"host": "h", "proxy_command": "nc %x %p"}, "sut.transport.ssh.proxy_command"),
    ({"host": "h", "tmp_base": "tmp"}, "sut.transport.ssh.tmp_base"),
    ({"host": "h", "keepalive_s": 0}, "sut.transport.ssh.keepalive_s"),
])
def test_bad_values_name_their_key(tmp_path: Path, ssh: dict, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_testbed(_write(tmp_path, ssh))
    assert info.value.key == key


def test_proxy_command_tokens_follow_openssh() -> None:
    assert expand_proxy_command("nc %h %p # %r 100%%", "203.0.113.2", 2222, "root") == \
        "nc 203.0.113.2 2222 # root 100%"
    assert expand_proxy_command("nc %h %p", "a b", 22, "u") == "nc 'a b' 22"
    with pytest.raises(ValueError, match="%n"):
        expand_proxy_command("nc %n", "h", 22, "u")
    with pytest.raises(ValueError):
        expand_proxy_command("nc %", "h", 22, "u")


@pytest.mark.netns
def test_testbed_yaml_from_sshd_node_reaches_the_sut(tmp_path: Path) -> None:
    """The documented way to point a testbed at a test sshd (tests/sshd.py)."""
    from sshd import sshd_in_new_namespaces

    server, client = f"sshq-{os.getpid()}-cs", f"sshq-{os.getpid()}-cc"
    with sshd_in_new_namespaces(server, client, tag=4) as node:
        path = _write(tmp_path, node.ssh_config())
        tb = load_testbed(path)
        assert tb.sut.transport.ssh is not None
        with SshTransport(tb.sut.transport.ssh) as transport:
            assert transport.where == f"ssh root@{node.host}:22"
            # the SUT is server_ns: it sees the management veth, the client does not
            links = transport.check(["ip", "-o", "link", "show"]).stdout
            assert node.server_if in links and node.client_if not in links
