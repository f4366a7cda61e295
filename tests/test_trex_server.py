"""trex_cfg.yaml generation, and TrexServer starting and stopping a server from a release
directory, with a test double of the release's t-rex-64 on this host (loopback)."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest
import yaml

from srperf.drivers.trex import TrexOptions
from srperf.drivers.trex_cfg import render_trex_cfg
from srperf.drivers.trex_server import TrexServer
from srperf.errors import ConfigError, GeneratorError
from srperf.transports.netns import NetnsTransport

DOUBLE = Path(__file__).parent / "doubles" / "trex_release" / "t-rex-64"


def test_cfg_for_pci_ports() -> None:
    text = render_trex_cfg(["0000:03:00.0", "03:00.1"], cores=2, prefix="srp",
                           port_info=[{"src_mac": "02:00:00:00:00:01",
                                       "dest_mac": "02:00:00:00:00:02"},
                                      {"src_mac": "02:00:00:00:00:03",
                                       "dest_mac": "02:00:00:00:00:04"}])
    (entry,) = yaml.safe_load(text)
    assert entry["version"] == 2 and entry["port_limit"] == 2 and entry["c"] == 2
    assert entry["interfaces"] == ["0000:03:00.0", "03:00.1"]
    assert entry["prefix"] == "srp" and "low_end" not in entry
    assert entry["port_info"][1]["dest_mac"] == "02:00:00:00:00:04"


def test_cfg_for_af_packet_ports_low_end() -> None:
    (entry,) = yaml.safe_load(render_trex_cfg(
        ["--vdev=net_af_packet0,iface=t0", "--vdev=net_af_packet1,iface=t1"], low_end=True))
    assert entry["low_end"] is True


def test_cfg_for_kernel_interfaces() -> None:
    """TRex 3.08 opens a kernel interface name as an AF_PACKET vdev itself, with a
    ring that suits the page size (how the opt-in test runs it on veths)."""
    (entry,) = yaml.safe_load(render_trex_cfg(["t0", "t1"], low_end=True, low_end_core=0))
    assert entry["interfaces"] == ["t0", "t1"] and entry["low_end_core"] == 0


def test_server_config_from_kernel_ports_and_cpu() -> None:
    opts = TrexOptions(release="/opt/trex", low_end=True)
    server = TrexServer(NetnsTransport(None), opts, "s26tb", ports=("t0", "t1"),
                        kernel_ports=True,
                        cpu=0)
    (entry,) = yaml.safe_load(server.config_text())
    assert entry["interfaces"] == ["t0", "t1"] and entry["low_end_core"] == 0


@pytest.mark.parametrize("interfaces,kwargs,match", [
    (["0000:03:00.0"], {}, "even number of ports"),
    (["eth 0", "eth1"], {}, "neither a PCI address"),
    (["veth0", "a-name-longer-than-15"], {}, "nor a kernel interface name"),
    (["03:00.0", "03:00.1"], {"cores": 0}, "cores must be at least 1"),
    (["03:00.0", "03:00.1"], {"port_info": [{"src_mac": "zz"}, {}]}, "not a MAC address"),
    (["03:00.0", "03:00.1"], {"port_info": [{}]}, "1 entries for 2 interfaces"),
])
def test_cfg_refuses(interfaces, kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        render_trex_cfg(interfaces, **kwargs)


def test_options_check_the_ports_given() -> None:
    with pytest.raises(ValueError, match="even number of ports, got 1"):
        TrexOptions(release="/opt/trex", interfaces=["03:00.0"])
    TrexOptions(release="/opt/trex")  # no interfaces: read from the tester's tx/rx


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_server_started_once_and_stopped(tmp_path: Path) -> None:
    release = tmp_path / "v3.04"
    release.mkdir()
    shutil.copy(DOUBLE, release / "t-rex-64")
    port = _free_port()
    opts = TrexOptions(release=str(release), interfaces=["03:00.0", "03:00.1"],
                       sync_port=port, async_port=_free_port(), hdrh=True, low_end=True)
    node = NetnsTransport(None)
    server = TrexServer(node, opts, "s26tb", ready_s=20)
    try:
        assert server.start() is True
        assert server.pid() is not None
        assert server.start() is False  # already running: not started twice
        args = (release / "args.txt").read_text().split()
        assert args == ["-i", "--cfg", str(release / "srperf_trex_cfg.s26tb.yaml"),
                        "--no-scapy-server", "--hdrh"]
        (entry,) = yaml.safe_load((release / "srperf_trex_cfg.s26tb.yaml").read_text())
        assert entry["zmq_rpc_port"] == port and entry["low_end"] is True
        assert entry["prefix"] == "srperf-s26tb"
    finally:
        stopped = server.stop()
    assert stopped is True and server.pid() is None
    with socket.socket() as s:  # nothing listens any more
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_server_that_exits_at_start_says_why(tmp_path: Path) -> None:
    release = tmp_path / "broken"
    release.mkdir()
    (release / "t-rex-64").write_text("#!/bin/sh\necho 'EAL: no huge pages'\nexit 1\n")
    (release / "t-rex-64").chmod(0o755)
    opts = TrexOptions(release=str(release), interfaces=["03:00.0", "03:00.1"],
                       sync_port=_free_port())
    server = TrexServer(NetnsTransport(None), opts, "s26tb", ready_s=10)
    with pytest.raises(GeneratorError, match="exited at start: EAL: no huge pages"):
        server.start()
    assert server.stop() is False


@pytest.mark.netns
def test_virtual_testbed_runs_the_server_in_its_tester_namespace(tmp_path: Path) -> None:
    """driver trex + release on a virtual testbed: ``up`` starts the server in the tester
    namespace on the veths (AF_PACKET, low_end_core = tester.cpu) with no XDP sink on the
    rx veth (it would starve TRex's receiver); ``down`` stops it."""
    from srperf.config.loader import load_testbed
    from srperf.util.netns import run
    from srperf.testbeds.virtual import VirtualTestbed

    release = tmp_path / "release"
    release.mkdir()
    shutil.copy(DOUBLE, release / "t-rex-64")
    cfg = tmp_path / "tb.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "trexvirt", "kind": "virtual", "prefix": "htrex",
        "tester": {"driver": "trex", "cpu": 0,
                   "options": {"release": str(release), "low_end": True}}}))
    vt = VirtualTestbed(load_testbed(cfg))
    try:
        assert vt.up() is True
        server = vt._trex_server()
        assert server is not None and server.pid() is not None and vt.is_up()
        (entry,) = yaml.safe_load((release / "srperf_trex_cfg.trexvirt.yaml").read_text())
        assert entry["interfaces"] == ["t0", "t1"] and entry["low_end_core"] == 0
        assert "xdp" not in run(["ip", "link", "show", "dev", "t1"], ns="htrex-tester").stdout
        # the server listens inside the tester namespace only
        assert run(["ss", "-Hltn", "sport = :4501"], ns="htrex-tester").stdout.strip()
    finally:
        vt.close()
        vt.down()
    assert not (release / "srperf_trex.trexvirt.pid").exists()  # stopped before the netns went
    assert not vt.namespaces()


def _testbed_on(release: Path, name: str, sync: int, async_: int, tmp_path: Path):
    """A testbed file whose tester runs TRex from ``release`` (loaded, nothing made)."""
    from srperf.config.loader import load_testbed

    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": name, "kind": "virtual", "prefix": name,
        "tester": {"driver": "trex", "cpu": 0,
                   "options": {"release": str(release), "low_end": True,
                               "sync_port": sync, "async_port": async_}}}))
    return load_testbed(cfg)


def test_two_testbeds_on_one_release_keep_their_own_server(tmp_path: Path) -> None:
    """Two testbeds share a TRex release: each has its own PID, config, log and DPDK
    prefix; the second on the first's RPC port is refused naming the first (not 'up'
    on the first's server), and stopping the second leaves the first's server alone."""
    from srperf.drivers.trex_server import managed_server

    release = tmp_path / "v3.08"
    release.mkdir()
    shutil.copy(DOUBLE, release / "t-rex-64")
    node = NetnsTransport(None)
    port_a, port_b = _free_port(), _free_port()
    a = managed_server(_testbed_on(release, "s26a", port_a, _free_port(), tmp_path), node,
                       kernel_ports=True)
    clash = managed_server(_testbed_on(release, "s26b", port_a, _free_port(), tmp_path),
                           node, kernel_ports=True)
    b = managed_server(_testbed_on(release, "s26b", port_b, _free_port(), tmp_path), node,
                       kernel_ports=True)
    assert a is not None and b is not None and clash is not None
    a.ready_s = b.ready_s = 20
    try:
        assert a.start() is True
        with pytest.raises(ConfigError, match=f"tester.options.sync_port = {port_a}: "
                                              "testbed s26a "):
            clash.start()
        Path(a.cfg_path).rename(a.cfg_path + ".kept")   # no config says whose the port is:
        with pytest.raises(GeneratorError, match=f"port {port_a} .* already in use "
                                                 "[(]by the TRex server of testbed s26a"):
            clash.start()                               # the listening port and PID tell
        Path(a.cfg_path + ".kept").rename(a.cfg_path)
        assert clash.pid() is None
        assert clash.stop() is False and a.pid() is not None  # b's down spares a's server
        assert b.start() is True
        assert {a.pid_path, a.cfg_path, a.log_path} & {b.pid_path, b.cfg_path, b.log_path} \
            == set()
        prefixes = {yaml.safe_load(Path(s.cfg_path).read_text())[0]["prefix"] for s in (a, b)}
        assert prefixes == {"srperf-s26a", "srperf-s26b"}
        assert b.stop() is True and a.pid() is not None
    finally:
        a.stop()
        b.stop()
    assert a.pid() is None


def test_a_release_without_t_rex_64_names_the_key(tmp_path: Path) -> None:
    opts = TrexOptions(release=str(tmp_path / "no-such-release"),
                       interfaces=["03:00.0", "03:00.1"], sync_port=_free_port())
    with pytest.raises(GeneratorError, match="tester.options.release = .*no executable "
                                             "t-rex-64"):
        TrexServer(NetnsTransport(None), opts, "s26tb", ready_s=5).start()


def _local_tester_testbed(release: Path, name: str, sync: int, async_: int,
                          tmp_path: Path):
    """An SSH testbed whose tester (TRex from ``release``) runs on this host: its server
    listens in this host's own namespace, as any two on one tester host do."""
    from srperf.config.loader import load_testbed

    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": name, "kind": "ssh",
        "tester": {"driver": "trex",
                   "options": {"release": str(release), "low_end": True,
                               "interfaces": ["03:00.0", "03:00.1"],
                               "sync_port": sync, "async_port": async_}},
        "sut": {"transport": {"kind": "ssh", "ssh": {"host": "sut.invalid"}}}}))
    return load_testbed(cfg)


@pytest.mark.parametrize("clashing", ["async_port", "sync_port"])
def test_a_port_of_another_testbeds_server_is_refused_before_start(
        tmp_path: Path, clashing: str) -> None:
    """Two testbeds' servers in one namespace (one tester host) need four distinct ports:
    a second testbed with another RPC port but the first's publisher port (or its RPC port
    on the first's publisher port) is refused by validate (check_local) and by ``up``,
    naming its file, key and port and the first testbed; nothing of it starts.  (Before,
    only the RPC ports were compared: the second real server would have failed at start
    on the publisher port, or answered on the first's.)"""
    from srperf.measure import preflight
    from srperf.drivers.trex_server import managed_server

    release = tmp_path / "v3.08"
    release.mkdir()
    shutil.copy(DOUBLE, release / "t-rex-64")
    node = NetnsTransport(None)
    sync_a, async_a = _free_port(), _free_port()
    tb_a = _local_tester_testbed(release, "s26a", sync_a, async_a, tmp_path)
    ports_b = {"async_port": (_free_port(), async_a), "sync_port": (async_a, _free_port())}
    tb_b = _local_tester_testbed(release, "s26b", *ports_b[clashing], tmp_path)
    a, b = managed_server(tb_a, node), managed_server(tb_b, node)
    assert a is not None and b is not None
    a.ready_s = 20
    try:
        preflight.check_local(tb_b)   # a has never run: nothing to clash with yet
        assert a.start() is True
        with pytest.raises(ConfigError) as refused:
            preflight.check_local(tb_b)
        for error in (refused.value, pytest.raises(ConfigError, b.start).value):
            assert error.file == tb_b.source and error.key == f"tester.options.{clashing}"
            assert f"= {async_a}" in str(error) and "testbed s26a" in str(error)
            assert "zmq_pub_port" in str(error) and "same network namespace (host)" in \
                str(error)
        assert b.pid() is None and not Path(b.cfg_path).exists()
        # a virtual testbed's server listens in its tester namespace: the same ports there
        # are no clash with a's
        virtual = _testbed_on(release, "s26v", sync_a, async_a, tmp_path)
        preflight.check_trex_ports(virtual, release)
        # distinct ports: fine, and a stays up when that testbed's server stops
        ok = _local_tester_testbed(release, "s26b", _free_port(), _free_port(), tmp_path)
        preflight.check_local(ok)
    finally:
        a.stop()
    # a stopped, its config stays: the two would still clash whenever both are up
    with pytest.raises(ConfigError, match="testbed s26a"):
        preflight.check_local(tb_b)
    Path(a.cfg_path).unlink()   # testbed a is gone
    preflight.check_local(tb_b)


def _fake_runtime(root: Path, prefix: str) -> Path:
    """What a TRex 3.08 server leaves in /var/run/dpdk/<prefix> (issue 49, item 13)."""
    d = root / prefix
    d.mkdir(parents=True)
    for name in ("config", "fbarray_memseg-2048k-0-0", "fbarray_memzone", "mp_socket"):
        (d / name).write_bytes(b"\0" * 64)
    return d


def test_stop_removes_the_servers_dpdk_runtime_dir_and_the_empty_bird_dir(
        tmp_path: Path) -> None:
    """The cleanup given a fake runtime dir and BIRD dir (a test double of /var/run/dpdk
    and /tmp/trex-bird: no TRex here): this testbed's runtime directory goes, another
    testbed's stays; the empty BIRD directory goes, a non-empty one stays."""
    release = tmp_path / "v3.08"
    release.mkdir()
    shutil.copy(DOUBLE, release / "t-rex-64")
    runtime, bird = tmp_path / "fake-var-run-dpdk", tmp_path / "fake-tmp-trex-bird"
    mine = _fake_runtime(runtime, "srperf-s49tb")
    other = _fake_runtime(runtime, "srperf-s49other")
    bird.mkdir()
    opts = TrexOptions(release=str(release), interfaces=["03:00.0", "03:00.1"],
                       sync_port=_free_port(), async_port=_free_port())
    server = TrexServer(NetnsTransport(None), opts, "s49tb", ready_s=20,
                        runtime_dir=str(runtime), bird_dir=str(bird))
    try:
        assert server.start() is True
        server.remove_leftovers()           # never while it runs
        assert mine.is_dir() and bird.is_dir()
    finally:
        assert server.stop() is True
    assert not mine.exists() and not bird.exists()
    assert other.is_dir() and len(list(other.iterdir())) == 4
    # a BIRD directory that holds something is not removed; nor is anything else
    bird.mkdir()
    (bird / "bird.conf").write_text("x")
    _fake_runtime(runtime, "srperf-s49tb")
    assert server.stop() is False           # not running: leftovers of a dead server go
    assert not mine.exists() and (bird / "bird.conf").exists()
    assert sorted(p.name for p in runtime.iterdir()) == ["srperf-s49other"]
