"""Settings declared once: the schema, the loader and --set derive from the dataclass fields."""

from __future__ import annotations

import dataclasses

import jsonschema
import pytest

from srperf.config.model import SearchConfig
from srperf.config.rates import RateSpec
from srperf.forwarders.ebpf.forwarder import EbpfOptions, ProxySettings


def test_every_search_field_is_in_the_schema_with_its_doc_and_unit() -> None:
    schema = SearchConfig.json_schema()
    assert set(schema["properties"]) == {f.name for f in dataclasses.fields(SearchConfig)}
    assert schema["additionalProperties"] is False
    assert schema["properties"]["trial_duration_s"]["description"].endswith("(s)")
    assert "pps or % of line rate" in schema["properties"]["max_rate"]["description"]


def test_from_mapping_parses_each_field_with_its_own_parser() -> None:
    s = SearchConfig.from_mapping({"max_rate": "1.2Mpps", "min_rate": "5%",
                                   "thresholds_pct": [0, 0.5], "duration_sum_s": 4})
    assert s.max_rate == RateSpec(1.2e6) and s.min_rate == RateSpec(5.0, percent=True)
    assert s.thresholds_pct == (0.0, 0.5) and s.duration_sum_s == 4.0
    assert s.algorithm == SearchConfig().algorithm   # unset: the declared default


def test_nested_blocks_follow_their_own_dataclass() -> None:
    schema = EbpfOptions.json_schema()
    assert schema["properties"]["proxy"] == {**ProxySettings.json_schema(),
                                             "description": "the proxies' knobs"}
    opts = EbpfOptions.from_mapping({"vnf_count": 3, "proxy": {"age_s": 0}})
    assert opts.vnf_count == 3 and opts.proxy == ProxySettings(age_s=0)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"proxy": {"cache_miss": "maybe"}}, schema)


def test_describe_lists_every_setting_with_default_and_unit() -> None:
    lines = SearchConfig.describe()
    assert any(line.startswith("trial_duration_s [1.0 s]:") for line in lines)
    assert len(lines) == len(dataclasses.fields(SearchConfig))
