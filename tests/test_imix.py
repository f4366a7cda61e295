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


def test_imix_on_the_linux_driver_is_refused_before_anything_starts(tmp_path: Path) -> None:
    exp = Experiment(name="x", behaviors=("end",), packet_sizes=(IMIX_SIZE,),
                     imix=PROFILES["simple"], search=SearchConfig(algorithm="bisect"))
    tb = TestbedConfig(name="sim", kind="simulated", source="tb.yaml")
    with pytest.raises(ConfigError, match="IMIX needs a driver that sends several frame "
                                          "sizes \\(trex\\); tb.yaml uses tester.driver"):
        Orchestrator(exp, tb, tmp_path)
    assert not (tmp_path / "srperf.sqlite").exists()
