"""The eBPF dataplane's programs and CFG script, without traffic.

Builds (warning-free), verifier acceptance of every program on this kernel,
counter naming, the script's own cases of the CFG-script contract (unknown
function, clean on a clean SUT, missing VNFs; tests/test_cfg_contract.py
checks the rest for every script).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from srperf.config.model import TestbedConfig
from srperf.forwarders.ebpf.counters import counter_names, parse_dump
from srperf.util.netns import run
from srperf.resources import cfg_script, ebpf_dir

SCRIPT = cfg_script("ebpf")
NS = "ebp-load"


def make(build_dir: Path, *targets: str, **variables: str) -> subprocess.CompletedProcess:
    argv = ["make", "-C", str(ebpf_dir()), f"BUILD_DIR={build_dir}",
            *[f"{k}={v}" for k, v in variables.items()], *targets]
    return subprocess.run(argv, capture_output=True, text=True)


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """srproxy (cache of 65536 and of 64 entries) and vnf_drop, built from scratch."""
    out = tmp_path_factory.mktemp("ebpf-build")
    for variables in ({}, {"CACHE_ENTRIES": "64"}):
        proc = make(out, **variables)
        assert proc.returncode == 0, proc.stderr
        # -Werror is in the Makefile; any diagnostic at all is a failure here
        assert "warning" not in proc.stderr.lower(), proc.stderr
    return out


def test_build_outputs_outside_the_source_tree(objects: Path) -> None:
    assert {p.name for p in objects.iterdir()} >= {"srproxy-c65536.o", "srproxy-c64.o",
                                                    "vnf_drop.o"}
    assert not list(ebpf_dir().glob("*.o"))


def test_makefile_fails_on_a_warning(tmp_path: Path) -> None:
    """-Werror really is on: a source with a warning does not build."""
    src = tmp_path / "src"
    shutil.copytree(ebpf_dir(), src)
    text = (src / "vnf_drop.c").read_text()
    (src / "vnf_drop.c").write_text(text.replace("__u32 zero = 0, idx = 0;",
                                                 "__u32 zero = 0, idx = 0, unused;"))
    proc = subprocess.run(["make", "-C", str(src), f"BUILD_DIR={tmp_path / 'out'}"],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert "unused" in proc.stderr


def test_counter_names_from_header() -> None:
    names = counter_names()
    assert names[0] == "in_packets" and "cache_race" in names and "err" in names
    assert len(set(names)) == len(names)
    header = (ebpf_dir() / "srproxy.h").read_text()
    # every name is a real enum member used by the program
    program = (ebpf_dir() / "srproxy.c").read_text()
    for name in names:
        assert f"SRP_{name}" in program, f"counter {name} is never incremented"
    assert "SRP_NSTATS" in header


def test_parse_dump_formatted_and_raw() -> None:
    names = counter_names()
    formatted = [{"key": ["0x00"] * 4, "values": [],
                  "formatted": {"key": 0, "values": [{"cpu": 0, "value": 5},
                                                     {"cpu": 1, "value": 7}]}},
                 {"key": ["0x1a", "0", "0", "0"], "values": [],
                  "formatted": {"key": len(names) - 1, "values": [{"cpu": 0, "value": 1}]}}]
    counts = parse_dump(json.dumps(formatted))
    assert counts[names[0]] == 12 and counts[names[-1]] == 1 and counts["in_ad"] == 0
    raw = [{"key": ["0x04", "0x00", "0x00", "0x00"],
            "values": [{"cpu": 0, "value": ["0x01", "0x01"] + ["0x00"] * 6},
                       {"cpu": 1, "value": ["0x02"] + ["0x00"] * 7}]}]
    assert parse_dump(json.dumps(raw))[names[4]] == 257 + 2
    assert parse_dump("") == {}


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_shellcheck_clean() -> None:
    proc = subprocess.run(["shellcheck", "-x", str(SCRIPT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


# --- in a namespace ---------------------------------------------------------------

@pytest.fixture()
def bare_ns():
    """A namespace with nothing in it (no VNF, no testbed)."""
    run(["ip", "netns", "add", NS])
    try:
        yield NS
    finally:
        run(["ip", "netns", "del", NS], check=False)


def _load_all(ns: str, obj: Path) -> dict[str, object]:
    """bpftool prog loadall in ``ns`` (private bpffs): programs and map facts."""
    script = (
        "set -e; mount -t bpf bpf /sys/fs/bpf; mkdir -p /sys/fs/bpf/t; "
        f"bpftool prog loadall {obj} /sys/fs/bpf/t pinmaps /sys/fs/bpf/t/maps; "
        "ls /sys/fs/bpf/t; echo ---; "
        "for m in /sys/fs/bpf/t/maps/*; do bpftool -j map show pinned $m; done")
    res = run(["sh", "-c", script], ns=ns, check=False)
    assert res.ok, res.stderr[-3000:]
    progs_text, maps_text = res.stdout.split("---")
    maps = {}
    for line in maps_text.split("\n"):
        if not line.strip():
            continue
        info = json.loads(line)
        maps[info["name"]] = info
    return {"progs": set(progs_text.split()) - {"maps"}, "maps": maps}


@pytest.mark.netns
def test_verifier_accepts_srproxy(objects: Path, bare_ns: str) -> None:
    for entries in (65536, 64):
        loaded = _load_all(bare_ns, objects / f"srproxy-c{entries}.o")
        assert loaded["progs"] == {"srp_inbound", "srp_from_vnf"}
        maps = loaded["maps"]
        assert maps["srp_stats"]["max_entries"] == len(counter_names())
        assert maps["srp_cache"]["max_entries"] == entries
        assert maps["srp_cache"]["type"] == "lru_hash"


@pytest.mark.netns
def test_verifier_accepts_vnf_drop(objects: Path, bare_ns: str) -> None:
    loaded = _load_all(bare_ns, objects / "vnf_drop.o")
    assert loaded["progs"] == {"vnf_drop"}
    assert set(loaded["maps"]) == {"vnf_drop_cfg", "vnf_drop_stats"}


def _script(ns: str, function: str, **env: str) -> subprocess.CompletedProcess:
    argv = ["ip", "netns", "exec", ns, "env", *[f"{k}={v}" for k, v in env.items()],
            "bash", str(SCRIPT), function]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


@pytest.mark.netns
def test_unknown_function_is_a_usage_error(bare_ns: str) -> None:
    proc = _script(bare_ns, "end_bogus")
    assert proc.returncode == 2
    assert "unknown function 'end_bogus'" in proc.stderr and "end_cache" in proc.stderr
    assert "unsupported" not in proc.stderr


@pytest.mark.netns
def test_clean_succeeds_when_nothing_is_configured(bare_ns: str) -> None:
    for _ in range(2):
        proc = _script(bare_ns, "clean")
        assert proc.returncode == 0, proc.stderr
    assert _script(bare_ns, "counters").stdout.strip() == ""


@pytest.mark.netns
def test_missing_vnfs_fail_and_leave_nothing(objects: Path, bare_ns: str) -> None:
    from ebpf_helpers import local_env

    tb = TestbedConfig(name="t")
    run(["ip", "link", "add", tb.sut.in_port.name, "type", "veth", "peer", "name", "s0p"],
        ns=bare_ns)
    env = {**local_env(tb), "SRPERF_BUILD_DIR": str(objects)}
    proc = _script(bare_ns, "end_ad", **env)
    assert proc.returncode == 1
    assert "no VNF interface vnf0" in proc.stderr
    assert "srp_" not in run(["bpftool", "net", "show"], ns=bare_ns).stdout
    assert run(["ip", "-6", "route", "show", "proto", "83"], ns=bare_ns).stdout == ""


def test_end_ad_experiment_loads() -> None:
    from srperf.config.loader import load_experiment
    from srperf.resources import find_config

    exp = load_experiment(find_config("end_ad", "experiment"))
    assert exp.forwarder == "ebpf" and set(exp.behaviors) == {"end_ad", "end_baseline"}
    assert exp.options["vnf_count"] == 1


def test_proxy_behaviors_are_registered() -> None:
    from srperf.behaviors import catalogue as behaviors
    from srperf.forwarders import registry as forwarders
    from srperf.forwarders.base import Prepared

    names = set(forwarders.get("ebpf").behaviors)
    assert {"end_ad", "end_ad_v4", "end_as", "end_am", "end_cache", "end_cache_v4",
            "end_baseline"} <= names
    for name in names:
        beh = behaviors.get(name)
        assert beh.needs_vnf and beh.kind == "proxy" and "ebpf" in forwarders.offering(name)
    fwd = forwarders.get("ebpf")
    prepared = Prepared(env={"SRPERF_EBPF_DIR": "/sut/dir", "SRPERF_BUILD_DIR": "/sut/dir"})
    env = fwd.env(TestbedConfig(name="t"), fwd.parse_options({"proxy": {"age_s": 0.5}}),
                  prepared)
    assert env["SRPERF_EBPF_DIR"] == "/sut/dir" and env["SRPERF_AD_AGE"] == "0.5"
    assert env["SRPERF_CACHE_STALE"] == "0.001"
    with pytest.raises(ValueError, match="cache_stale_s"):
        fwd.parse_options({"proxy": {"cache_stale_s": -1}})
    assert env["SRPERF_IN_IF"] == "s0"
