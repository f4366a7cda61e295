"""``srperf validate`` takes the behaviors' IP packet lengths from header sizes
(:mod:`srperf.behaviors.frame_lengths`, no scapy): they must equal the lengths of the
frames scapy really builds, for every behavior every forwarder offers, on every shipped
testbed, at every size the shipped experiments use (and the edges around them)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from srperf.behaviors import catalogue as behaviors
from srperf.forwarders import registry as forwarders
from srperf.measure import preflight
from srperf.behaviors.frame_lengths import LENGTHS, ip_lengths
from srperf.config.loader import load_experiment, load_testbed
from srperf.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
ETH = 14


def _shipped_sizes() -> set[int]:
    sizes: set[int] = set()
    for path in sorted((ROOT / "experiments").glob("*.yaml")):
        sizes.update(int(s) for s in (yaml.safe_load(path.read_text()) or {})
                     .get("packet_sizes", []))
    return sizes


SIZES = sorted(_shipped_sizes() | {100, 128, 512, 1280, 1400, 1500})
TESTBEDS = ("virtual", "ssh", "trex", "simulated", "kernel-6.1")
OFFERED = sorted({b for f in forwarders.REGISTRY.values() for b in behaviors.names()
                  if f.offers(b)})


def _scapy_lengths(beh: behaviors.Behavior, tb: object, size: int) -> tuple[int, int]:
    frame = beh.build_frame(tb, size)
    sent = len(bytes(frame)) - ETH
    largest = sent
    if beh.expect is not None:
        largest = max(sent, len(bytes(beh.expected(tb, frame).frame)) - ETH)
    return sent, largest


def test_every_offered_behavior_has_its_lengths() -> None:
    assert OFFERED and set(OFFERED) <= set(LENGTHS), sorted(set(OFFERED) - set(LENGTHS))


@pytest.mark.parametrize("testbed", TESTBEDS)
def test_lengths_equal_the_scapy_frames(testbed: str) -> None:
    tb = load_testbed(ROOT / "testbed" / f"{testbed}.yaml")
    assert 64 in SIZES
    checked = 0
    for name in OFFERED:
        beh = behaviors.get(name)
        for size in sorted(set(SIZES) | {beh.min_packet_size}):
            if size < beh.min_packet_size:
                continue
            assert ip_lengths(beh, tb, size) == _scapy_lengths(beh, tb, size), (name, size)
            checked += 1
    assert checked >= len(OFFERED) * len(SIZES)


def test_below_the_smallest_size_the_frame_is_built_and_refused() -> None:
    tb = load_testbed(ROOT / "testbed" / "virtual.yaml")
    for name in OFFERED:
        beh = behaviors.get(name)
        below = beh.min_packet_size - 1
        assert ip_lengths(beh, tb, below) is None
        with pytest.raises(ValueError):
            beh.build_frame(tb, below)


def test_validate_reports_the_same_largest_size(tmp_path: Path) -> None:
    """The MTU error names the length the scapy frames have (H.Insert adds a 40-byte SRH)."""
    exp_file = tmp_path / "big.yaml"
    exp_file.write_text("name: big\nforwarder: linux\nbehaviors: [h_insert]\n"
                        "packet_sizes: [1500]\n")
    tb = load_testbed(ROOT / "testbed" / "virtual.yaml")
    with pytest.raises(ConfigError) as err:
        preflight.check_frames(load_experiment(exp_file), tb)
    built = _scapy_lengths(behaviors.get("h_insert"), tb, 1500)[1]
    assert f"puts {built}-byte IP packets" in str(err.value)
    assert "the largest size that fits is 1460" in str(err.value)
