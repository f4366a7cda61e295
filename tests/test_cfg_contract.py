"""The CFG-script contract (cfg_scripts/README.md), for every script and every function.

Static checks (no root): no defaults, ``set -euo pipefail``, shellcheck,
``functions`` and the behavior catalogue agree.

In namespaces (prefix ``cfgc``: a virtual testbed with two VNFs behind the
SUT), for every function a script lists:

- with no ``SRPERF_*`` variable it exits 2 naming the variables it needs, and
  changes nothing (or it needs none and succeeds);
- with exactly those variables, and with the full environment (``cfg_env`` +
  ``proxy_env``, objects built locally: for a local namespace, local paths are
  SUT paths) it exits 0, quietly, or 3 with an ``unsupported:`` line and nothing
  configured; twice gives the same SUT state as once;
- without any one of those variables it exits 2 naming exactly that one, and
  changes nothing;
- a behavior whose command fails (a bogus interface or SID) exits 1 naming
  it and leaves nothing configured;
- ``clean`` returns the SUT to the state before, twice.

Plus unknown functions and wrong argument counts (exit 2), and ebpf.sh's
objects on the SUT: a missing object is built there, or exit 3 when clang (or
bpftool, tc) is missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from srperf.behaviors import catalogue as B
from srperf.config.model import TestbedConfig
from srperf.forwarders import registry as forwarders
from srperf.resources import cfg_script, ebpf_dir
from sut_state import state_diff

SCRIPT_DIR = cfg_script("linux").parent
SCRIPTS = {p.stem: p for p in sorted(SCRIPT_DIR.glob("*.sh"))}
TB = TestbedConfig(name="cfgc", prefix="cfgc")
SUT = TB.sut_ns
VNF_COUNT = 2
NODEV = "cfgc-nodev"
# Variables whose bogus value (NODEV) makes a behavior's command fail, those
# used late (after part of the behavior is configured) first.
BREAKABLE = ("SRPERF_SID_SUT", "SRPERF_IN_IF", "SRPERF_OUT_IF")
VAR_RE = re.compile(r"\bSRPERF_[A-Z0-9_]+\b")
# The environment of every script run: ours, minus every SRPERF_* variable.
BASE_ENV = {k: v for k, v in os.environ.items() if not k.startswith("SRPERF_")}

netns = pytest.mark.netns


def functions(script: Path) -> list[str]:
    """What ``bash SCRIPT functions`` prints (needs no variable, no root)."""
    res = subprocess.run(["bash", str(script), "functions"], capture_output=True, text=True,
                         env=BASE_ENV, timeout=30)
    assert res.returncode == 0 and res.stderr == "", (script.name, res.returncode, res.stderr)
    return res.stdout.split("\n")[:-1] if res.stdout else []


CASES = [(name, fn) for name, path in SCRIPTS.items() for fn in functions(path)]


def catalogue_functions(forwarder: str) -> set[str]:
    """CFG functions of the catalogue's behaviors for ``forwarder``."""
    if forwarder == "pipes":   # stateful kinds only: outside the registry and catalogue
        from srperf.forwarders import pipes

        return set(pipes.BEHAVIOR_FUNCTIONS)
    functions = {B.get(name).cfg_function for name in forwarders.get(forwarder).behaviors}
    if forwarder == "linux":   # loss monitoring's ingress node (srperf.pm.cases)
        from srperf.pm.cases import INGRESS_CFG

        functions.add(INGRESS_CFG)
    return functions


# --- static ------------------------------------------------------------------------

def test_there_are_scripts_to_check() -> None:
    assert {"linux", "ebpf"} <= set(SCRIPTS)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_functions_list(name: str) -> None:
    listed = functions(SCRIPTS[name])
    assert listed, "functions printed nothing"
    assert len(set(listed)) == len(listed), listed
    assert "clean" in listed and "functions" not in listed
    for fn in listed:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", fn), fn


@pytest.mark.parametrize("name", forwarders.names())
def test_catalogue_behaviors_are_offered(name: str) -> None:
    """Every behavior this forwarder declares is a function of its script."""
    script_name = forwarders.get(name).script.removesuffix(".sh")
    wanted = catalogue_functions(name)
    missing = wanted - set(functions(SCRIPTS[script_name]))
    assert not missing, f"{script_name}.sh lacks the forwarder's functions {sorted(missing)}"


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_no_defaults_and_strict_mode(name: str) -> None:
    text = SCRIPTS[name].read_text()
    defaults = re.findall(r"\$\{SRPERF_[A-Z0-9_]+:?[-=+?][^}]*\}", text)
    assert not defaults, f"{name}.sh gives variables defaults: {defaults}"
    code = [line for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]
    assert code[0] == "set -euo pipefail", f"{name}.sh starts with {code[0]!r}"


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_reads_only_variables_srperf_supplies(name: str) -> None:
    """Every SRPERF_* name in the script is one the Python side exports."""
    used = set(VAR_RE.findall(SCRIPTS[name].read_text()))
    unknown = used - set(full_env())
    assert not unknown, f"{name}.sh uses {sorted(unknown)}, which srperf never sets"


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_shellcheck(name: str) -> None:
    res = subprocess.run(["shellcheck", "-x", str(SCRIPTS[name])], capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stdout + res.stderr


# --- running the scripts in the SUT namespace ----------------------------------------

def full_env() -> dict[str, str]:
    from ebpf_helpers import local_env
    from srperf.forwarders.srnk import SrnkOptions, srnk_env
    from srperf.forwarders.vpp import VppOptions, vpp_env

    from srperf.forwarders import pipes

    node = pipes.PipesNode(sid=TB.addressing.sid_sut, out_if=TB.sut.out_port.name,
                           out_nh=TB.addressing.tester_rx_ip6,
                           next_segs=(TB.addressing.sid_next,),
                           dst_prefix=TB.addressing.dst_prefix6, function="relay")
    pipes_env = pipes.node_env(node, pipes.PipesOptions(), str(pipes.build_relay()),
                               f"/tmp/{TB.prefix}-pipes-run")
    from xdp_helpers import env as xdp_env
    from srperf.forwarders.xdp.forwarder import XdpOptions

    xdp = {**xdp_env(TB, XdpOptions(), "xdp_enc_mon_fw"),
           "SRPERF_XDP_FRAME": "00" * 60, "SRPERF_XDP_REPEAT": "2"}
    from srperf.forwarders.linux import FORWARDER as LINUX

    pm = LINUX.behavior_env(TB, LINUX.parse_options({}), "h_encaps.ebpf_tc.f4.mark")
    return {**pipes_env, **srnk_env(TB, SrnkOptions()), **vpp_env(TB, VppOptions()),
            **xdp, **pm, **local_env(TB)}


def script(name: str, *args: str, env: dict[str, str] | None = None,
           path: str | None = None) -> subprocess.CompletedProcess:
    """``bash SCRIPT ARGS`` in the SUT namespace with exactly ``env`` as SRPERF_* variables."""
    run_env = dict(BASE_ENV, **(env or {}))
    if path is not None:
        run_env["PATH"] = path
    return subprocess.run(["ip", "netns", "exec", SUT, "bash", str(SCRIPTS[name]), *args],
                          capture_output=True, text=True, env=run_env, timeout=120)


def named(stderr: str) -> set[str]:
    return set(VAR_RE.findall(stderr))


_SNAPSHOT = r"""
sec() { printf '\n@@%s\n' "$1"; }
sec routes6; ip -j -6 route show table all
sec routes4; ip -j -4 route show table all
sec rules6; ip -j -6 rule show
sec rules4; ip -j -4 rule show
sec links; ip -j link show
sec addrs; ip -j addr show
sec neigh; ip -j neigh show nud permanent
sec tunsrc; ip sr tunsrc show
sec qdiscs; tc -j qdisc show
for dev in /sys/class/net/*; do
    dev=${dev##*/}
    for dir in ingress egress; do
        sec "filters $dev $dir"; tc -j filter show dev "$dev" "$dir" 2>/dev/null || true
    done
done
sec bpfnet; bpftool -j net show
sec sysctls
for key in net/ipv6/conf/all/forwarding net/ipv4/ip_forward net/ipv6/conf/all/seg6_enabled \
        net/vrf/strict_mode; do
    if [ -e "/proc/sys/$key" ]; then echo "$key=$(cat "/proc/sys/$key")"; fi
done
"""
VOLATILE = {"id", "prog_id", "map_ids", "ifindex", "refcnt", "operstate", "linkmode",
            "txqlen", "stats", "stats64", "valid_life_time", "preferred_life_time"}


def _canon(value: object) -> object:
    """JSON without the fields that change on every reload (ids, counters)."""
    if isinstance(value, dict):
        return {k: _canon(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return sorted((_canon(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


def _bpf_objects(bpfnet: object) -> list[str]:
    """Name of every program attached in the SUT and of each map it uses."""
    found = []
    for family in bpfnet if isinstance(bpfnet, list) else [bpfnet]:
        for kind, entries in (family or {}).items():
            for entry in entries or []:
                prog_id = entry.get("id", entry.get("prog_id"))
                if prog_id is None:
                    continue
                prog = json.loads(subprocess.run(
                    ["bpftool", "-j", "prog", "show", "id", str(prog_id)],
                    capture_output=True, text=True, check=True).stdout)
                maps = []
                for map_id in prog.get("map_ids", []):
                    info = json.loads(subprocess.run(
                        ["bpftool", "-j", "map", "show", "id", str(map_id)],
                        capture_output=True, text=True, check=True).stdout)
                    maps.append(f"{info.get('name')}:{info.get('type')}:"
                                f"{info.get('max_entries')}")
                found.append(f"{kind} {entry.get('devname')} {entry.get('kind')} "
                             f"{prog.get('name')} maps {sorted(maps)}")
    return sorted(found)


def sut_state() -> dict[str, object]:
    """Everything a CFG script may touch on the SUT, ids left out."""
    res = subprocess.run(["ip", "netns", "exec", SUT, "sh", "-c", _SNAPSHOT],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    state: dict[str, object] = {}
    for block in res.stdout.split("\n@@")[1:]:
        key, _, body = block.partition("\n")
        body = body.strip()
        if key in ("tunsrc", "sysctls"):
            state[key] = body
            continue
        data = json.loads(body) if body else []
        if key == "bpfnet":
            state["bpf"] = _bpf_objects(data)
        state[key] = _canon(data)
    return state


def assert_state(expected: dict[str, object], what: str) -> None:
    diff = state_diff(sut_state(), expected)
    assert not diff, f"{what}:\n{diff}"


@pytest.fixture(scope="module")
def objects() -> None:
    """The eBPF objects, built locally (the SUT's build dir, for a local namespace)."""
    from srperf.forwarders.ebpf.build import build_all

    build_all()


@pytest.fixture(scope="module")
def testbed(objects):
    """A virtual testbed with VNFs; removed even when a test fails."""
    from srperf.testbeds.virtual import VirtualTestbed
    from srperf.testbeds.vnf import VnfSet

    vt = VirtualTestbed(TB)
    vnfs = VnfSet(TB, count=VNF_COUNT)
    try:
        vt.up()
        vnfs.up()
        yield vt
    finally:
        vnfs.down()
        vt.down()


@pytest.fixture(scope="module")
def baseline(testbed) -> dict[str, object]:
    """The SUT as the testbed made it, once the kernel stopped adding routes of its own."""
    import time

    state = sut_state()
    for _ in range(25):
        time.sleep(0.2)
        again = sut_state()
        if again == state:
            return state
        state = again
    raise AssertionError("the SUT's state kept changing for 5 s after the testbed came up")


@pytest.fixture()
def restore(baseline):
    """Clean with every script after the test, even when it fails."""
    yield baseline
    env = full_env()
    for name in SCRIPTS:
        script(name, "clean", env=env)


def _run_ok(name: str, fn: str, env: dict[str, str], helper: bool
            ) -> subprocess.CompletedProcess:
    res = script(name, fn, env=env)
    assert res.returncode in (0, 3), (fn, res.returncode, res.stderr)
    if res.returncode == 3:
        assert re.search(r"^unsupported: \S", res.stderr, re.M), res.stderr
    elif not helper:
        assert (res.stdout, res.stderr) == ("", ""), f"{fn} must be quiet on success"
    else:
        assert res.stderr == "", res.stderr
    return res


@netns
@pytest.mark.parametrize("name,fn", CASES, ids=[f"{n}-{f}" for n, f in CASES])
def test_function_follows_the_contract(name: str, fn: str, restore) -> None:
    baseline = restore
    full = full_env()
    helper = fn != "clean" and fn not in catalogue_functions(name)
    assert_state(baseline, "the SUT was not clean before the test")

    # 1. No variable at all: exit 2 naming every variable it needs, nothing changed.
    res = script(name, fn)
    if res.returncode == 0:
        needs: set[str] = set()
    else:
        assert res.returncode == 2, (res.returncode, res.stderr)
        needs = named(res.stderr)
        assert needs, f"exit 2 names no SRPERF_ variable: {res.stderr}"
        assert_state(baseline, "an exit 2 changed the SUT")
    assert needs <= set(full), f"needs variables srperf never sets: {needs - set(full)}"

    # 2. Exactly those variables, then again with the full environment: same state.
    first = _run_ok(name, fn, {k: full[k] for k in needs}, helper)
    configured = sut_state()
    if first.returncode == 3 or helper:
        assert not state_diff(configured, baseline), \
            f"{'unsupported' if first.returncode == 3 else 'a helper'} changed the SUT:\n" \
            + state_diff(configured, baseline)
    again = _run_ok(name, fn, full, helper)
    assert again.returncode == first.returncode, (again.returncode, again.stderr)
    assert_state(configured, f"{fn} again changed the SUT")

    # 3. Without any one variable it needs: exit 2 naming exactly it, nothing changed.
    for var in sorted(needs):
        res = script(name, fn, env={k: v for k, v in full.items() if k != var})
        assert res.returncode == 2, (var, res.returncode, res.stderr)
        assert named(res.stderr) == {var}, (var, res.stderr)
    assert_state(configured, "an exit 2 changed the SUT")

    # 4. clean returns the SUT to the state before, and is idempotent.
    for _ in range(2):
        res = script(name, "clean", env=full)
        assert (res.returncode, res.stdout, res.stderr) == (0, "", ""), res.stderr
        assert_state(baseline, f"clean after {fn} did not restore the SUT")

    # 5. A command that fails (early or after part of the behavior is configured):
    #    exit 1 naming it, nothing left configured.
    if helper or fn == "clean" or first.returncode != 0:
        return
    breakable = [var for var in BREAKABLE if var in needs]
    for var in breakable:
        res = script(name, fn, env=dict(full, **{var: NODEV}))
        if res.returncode == 0:     # only clean read it (tolerantly)
            assert script(name, "clean", env=full).returncode == 0
            continue
        assert res.returncode == 1, (var, res.returncode, res.stderr)
        assert NODEV in res.stderr, res.stderr
        assert_state(baseline, f"{fn} failing on {var}={NODEV} left configuration behind")
        break
    else:
        pytest.fail(f"no bogus {breakable} made {fn} fail")


@netns
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_usage_errors(name: str, restore) -> None:
    known = functions(SCRIPTS[name])
    for env in ({}, full_env()):
        res = script(name, "no_such_function", env=env)
        assert res.returncode == 2, res.stderr
        assert "unknown function 'no_such_function'" in res.stderr
        assert all(fn in res.stderr for fn in known), res.stderr
        assert "unsupported" not in res.stderr
    for args in ((), ("clean", "extra")):
        res = script(name, *args, env=full_env())
        assert res.returncode == 2 and "usage" in res.stderr, (args, res.stderr)
    assert_state(restore, "a usage error changed the SUT")


# --- ebpf.sh: objects and tools on the SUT --------------------------------------------

def path_without(tmp_path: Path, *hidden: str) -> str:
    """A PATH with every command of ours except those whose name starts with ``hidden``."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            target = fake / entry.name
            if entry.name.startswith(hidden) or target.exists() or target.is_symlink():
                continue
            target.symlink_to(entry.path)
    return str(fake)


def ebpf_env(build_dir: Path, **extra: str) -> dict[str, str]:
    return dict(full_env(), SRPERF_BUILD_DIR=str(build_dir), SRPERF_CACHE_SIZE="64", **extra)


@netns
def test_ebpf_missing_object_without_clang_is_unsupported(tmp_path: Path, restore) -> None:
    build = tmp_path / "build"
    res = script("ebpf", "end_cache", env=ebpf_env(build),
                 path=path_without(tmp_path, "clang"))
    assert res.returncode == 3, res.stderr
    assert res.stderr == (f"unsupported: no object srproxy-c64.o in {build} and no clang on "
                          "the SUT to build it\n")
    assert_state(restore, "an unsupported proxy changed the SUT")


@netns
@pytest.mark.parametrize("tool", ["bpftool", "tc"])
def test_ebpf_missing_tool_is_unsupported(tool: str, tmp_path: Path, restore) -> None:
    res = script("ebpf", "end_ad", env=full_env(), path=path_without(tmp_path, tool))
    assert res.returncode == 3, res.stderr
    assert res.stderr == f"unsupported: {tool} is not installed on the SUT\n"
    assert_state(restore, "an unsupported proxy changed the SUT")


@netns
def test_ebpf_missing_sources_fail(tmp_path: Path, restore) -> None:
    empty = tmp_path / "src"
    empty.mkdir()
    res = script("ebpf", "end_am", env=ebpf_env(tmp_path / "build",
                                                SRPERF_EBPF_DIR=str(empty)))
    assert res.returncode == 1, res.stderr
    assert f"no Makefile in SRPERF_EBPF_DIR={empty}" in res.stderr
    assert_state(restore, "a failed proxy changed the SUT")


@netns
def test_ebpf_builds_a_missing_object_on_the_sut(tmp_path: Path, restore) -> None:
    """Sources pushed, object not: end_cache builds srproxy-c64.o there and loads it."""
    src = tmp_path / "pushed"
    shutil.copytree(ebpf_dir(), src)
    build = tmp_path / "build"
    res = script("ebpf", "end_cache", env=ebpf_env(build, SRPERF_EBPF_DIR=str(src)))
    assert (res.returncode, res.stderr) == (0, "")
    assert (build / "srproxy-c64.o").is_file()
    assert not list(src.glob("*.o")), "objects belong in SRPERF_BUILD_DIR"
    caches = [line for line in sut_state()["bpf"] if "srp_cache:lru_hash:64'" in line]
    assert caches, sut_state()["bpf"]


@netns
def test_ebpf_invalid_value_is_a_usage_error(restore) -> None:
    for fn, var, value in (("end_cache", "SRPERF_CACHE_MISS", "maybe"),
                           ("end_cache", "SRPERF_CACHE_STALE", "-1"),
                           ("end_ad", "SRPERF_AD_AGE", "soon"),
                           ("end_am", "SRPERF_CACHE_SIZE", "0"),
                           ("end_as", "SRPERF_EBPF_FIB", "yes")):
        res = script("ebpf", fn, env=dict(full_env(), **{var: value}))
        assert res.returncode == 2, (fn, res.stderr)
        assert named(res.stderr) == {var}, res.stderr
    assert_state(restore, "an invalid value changed the SUT")
