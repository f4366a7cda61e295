"""IMIX in experiments: profiles and custom mixes, refused where the driver cannot send it."""

from __future__ import annotations

from pathlib import Path

import pytest

from srperf.config.loader import experiment_from_mapping
from srperf.config.model import Experiment, SearchConfig, TestbedConfig
from srperf.errors import ConfigError
from srperf.traffic.imix import IMIX_SIZE, PROFILES, mean_size, parse_imix, size_label
from srperf.measure.orchestrator import Orchestrator


def _exp(**kw):
    return experiment_from_mapping(dict({"name": "x", "behaviors": ["end"]}, **kw), "e.yaml")


def test_profile_and_custom_mix() -> None:
    assert _exp(packet_sizes=[64, "imix"]).imix == PROFILES["simple"]
    exp = _exp(packet_sizes=["imix"], imix=["64:7", "1500:1"])
    assert exp.packet_sizes == (IMIX_SIZE,) and exp.imix == ((64, 7), (1500, 1))
    assert mean_size(PROFILES["simple"]) == pytest.approx((64 * 7 + 594 * 4 + 1518) / 12)
    assert size_label(IMIX_SIZE) == "imix" and size_label(64) == "64"


@pytest.mark.parametrize("kw,key,words", [
    ({"packet_sizes": ["imix"], "imix": "fancy"}, "imix", "unknown IMIX profile"),
    ({"packet_sizes": ["imix"], "imix": ["64-7"]}, "imix", "is not 'SIZE:WEIGHT'"),
    ({"packet_sizes": ["imix"], "imix": ["20:1"]}, "imix", "outside 48..9000"),
    ({"packet_sizes": ["imix"], "imix": ["64:1", "64:2"]}, "imix", "listed twice"),
    ({"imix": "simple"}, "imix", "no 'imix' entry"),
    ({"packet_sizes": ["mix"]}, "packet_sizes[0]", "or 'imix'"),
])
def test_bad_mixes_name_the_key(kw, key, words) -> None:
    with pytest.raises(ConfigError) as e:
        _exp(**kw)
    assert f"e.yaml: {key} = " in str(e.value) and words in str(e.value)


def test_parse_refuses_empty() -> None:
    with pytest.raises(ValueError):
        parse_imix([])


def test_imix_on_the_simulated_testbed_is_refused_before_anything_starts(tmp_path: Path) -> None:
    exp = Experiment(name="x", behaviors=("end",), packet_sizes=(IMIX_SIZE,),
                     imix=PROFILES["simple"], search=SearchConfig(algorithm="bisect"))
    tb = TestbedConfig(name="sim", kind="simulated", source="tb.yaml")
    with pytest.raises(ConfigError, match="IMIX needs a driver that sends several frame "
                                          "sizes \\(trex, linux, not the model of a "
                                          "simulated testbed\\); tb.yaml uses tester.driver"):
        Orchestrator(exp, tb, tmp_path)
    assert not (tmp_path / "srperf.sqlite").exists()


# --- on the wire: the linux driver's engines (issue 43) ---------------------------------

MIX = ((64, 7), (594, 4), (1400, 1))


@pytest.mark.netns
@pytest.mark.parametrize("engine", ["packet", "xdp"])
def test_imix_on_the_wire(engine: str) -> None:
    """Both engines send the mix (linux_gen/mix.h): each packet one of the mix's frames,
    byte for byte, every checksum right, and per sum(weights) packets each frame weight
    times (the bytes the rx port counted say so exactly, whatever a capture misses)."""
    import socket

    from srperf.behaviors import catalogue
    from srperf.drivers.linux import LinuxGenerator
    from srperf.measure.bench_support import EBPF_TB
    from srperf.traffic import packets as P
    from srperf.traffic.packet_socket import ns_packet_socket, receive_frames
    from srperf.util.netns import link_stats, run, veth_pair_namespace
    from test_flows import checksums_ok

    beh = catalogue.get("end")
    frames = [(bytes(beh.build_frame(EBPF_TB, size)), w) for size, w in MIX]
    rounds = 100
    n = rounds * sum(w for _, w in MIX)
    with veth_pair_namespace("g4f") as ns:
        run(["ethtool", "-K", "t1", "gro", "on"], ns=ns)   # NAPI for t0's ndo_xdp_xmit
        gen = LinuxGenerator(ns, "t0", "t1", cpu=None, retries=0, engine=engine)
        sock = ns_packet_socket(ns, "t1")
        sock.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), 64 << 20)
        try:
            gen.prepare_mix(frames)
            gen.trial(10_000, 0.01)            # starts the engine (xdpgen's one-frame check)
            receive_frames(sock, timeout_s=0.3, count=10_000)
            before = link_stats(ns, "t1")
            t = gen.trial(20_000, n / 20_000)
            after = link_stats(ns, "t1")
            got = [f for f in receive_frames(sock, timeout_s=1.0, count=n) if P.is_test_frame(f)]
        finally:
            sock.close()
            gen.close()
    assert t.extra["engine"] == engine and t.extra["mix"] == [[len(f), w] for f, w in frames]
    assert t.intended == t.sent == t.received == n
    assert after["rx_bytes"] - before["rx_bytes"] == rounds * sum(len(f) * w for f, w in frames)
    assert len(got) >= 0.9 * n, f"captured {len(got)} of {n}"
    assert set(got) <= {f for f, _ in frames}
    assert all(checksums_ok(f) for f in set(got))
