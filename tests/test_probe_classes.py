"""Issue 44's "other classes" of the probe and the README's promises, one test per class
the suite did not cover yet (docs/root-safety.md, "Other classes: where each is
refused", lists every class with the test that covers it).  Each bad input is refused
before anything starts: exit 2, the file (or option), the key and the value named.
Nothing here makes a namespace or boots a guest: ``testbed up`` is watched by a double
of ``KernelTestbed.up`` that fails the test if it is ever reached.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from srperf import resources
from srperf.results.store import ResultStore
from srperf.util.host import host_cpus, host_memory_mb
from cli_call import call_main as _call
from refusals import assert_refused

KERNEL_61 = yaml.safe_load((resources.testbed_dir() / "kernel-6.1.yaml").read_text())
QUICK = yaml.safe_load((resources.experiments_dir() / "quick.yaml").read_text())


def _ktb(tmp_path: Path, name: str = "k.yaml", **kernel: Any) -> Path:
    """kernel-6.1 with prefix c4cq, its cache in ``tmp_path`` and ``kernel`` changed
    (a None value removes the key)."""
    data = copy.deepcopy(KERNEL_61)
    data.update(name="c4cq", prefix="c4cq")
    block = data["kernel"]
    block["cache_dir"] = str(tmp_path / "cache")
    for key, value in kernel.items():
        if value is None:
            block.pop(key, None)
        else:
            block[key] = value
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def _built_elsewhere(tmp_path: Path) -> tuple[Path, Path]:
    image = tmp_path / "k" / "vmlinuz-6.1.0-c4c"
    modules = tmp_path / "k" / "lib" / "modules" / "6.1.0-c4c"
    modules.mkdir(parents=True)
    image.write_bytes(b"MZ not a kernel")
    (modules / "modules.dep").write_text("")
    return image, modules


@pytest.fixture
def no_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """``testbed up`` must be refused before the testbed makes anything."""
    from srperf.testbeds.kernel_vm import KernelTestbed

    def up(self: KernelTestbed) -> bool:
        raise AssertionError("testbed up went on to make the testbed")

    monkeypatch.setattr(KernelTestbed, "up", up)


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    """An SSH testbed whose SUT is a TEST-NET address (provision --dry-run only)."""
    import subprocess

    keys = tmp_path / "keys"
    keys.mkdir(mode=0o700)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / "id")],
                   check=True)
    pub = (keys / "id.pub").read_text().split()
    (keys / "known_hosts").write_text(f"203.0.113.250 {pub[0]} {pub[1]}\n")
    data = {"name": "c4c-lab", "kind": "ssh", "prefix": "c4cl",
            "tester": {"driver": "linux", "tx": {"name": "t0"}, "rx": {"name": "t1"}},
            "sut": {"forwarder": "linux", "in": {"name": "s0"}, "out": {"name": "s1"},
                    "transport": {"kind": "ssh", "ssh": {
                        "host": "203.0.113.250", "key_file": str(keys / "id"),
                        "known_hosts": str(keys / "known_hosts")}}}}
    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


# -- package names and versions that are apt options or carry shell words ------------------
@pytest.mark.parametrize(("key", "value"), [
    ("package", "-oAPT::Get::AllowUnauthenticated=1"), ("package", "linux-image-6.1;id"),
    ("package", "linux-image-$(id)"), ("package", "linux-image-6.1 --reinstall"),
    ("version", "--allow-unauthenticated"), ("version", "6.1.192-2;id"),
    ("version", "$(id)"), ("version", "6.1 -y"),
])
def test_a_package_or_version_that_is_an_option_or_shell_words_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: str) -> None:
    path = _ktb(tmp_path, **{key: value})
    code, _, err = _call(["validate", str(path)], capsys)
    assert_refused(code, err, str(path), (f"kernel.{key}", repr(value)))


@pytest.mark.parametrize(("key", "value"), [
    ("source", "-olinux-source-6.1"), ("source", "linux-source-6.1;id"),
    ("version", "--allow-unauthenticated"), ("version", "-o"), ("version", "6.1.1-1;id"),
])
def test_a_source_package_or_version_that_is_an_option_or_shell_words_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: str) -> None:
    build = {"source": "linux-source-6.1", key: value}
    path = _ktb(tmp_path, package=None, build=build)
    code, _, err = _call(["validate", str(path)], capsys)
    assert_refused(code, err, str(path), (f"kernel.build.{key}", repr(value)))


# -- image and modules paths: missing, relative, a device, the wrong kind, not a release ----
@pytest.mark.parametrize("case", ["image-missing", "image-relative", "image-device",
                                  "image-directory", "modules-missing", "modules-relative",
                                  "modules-device", "modules-file", "modules-no-depmod",
                                  "modules-not-a-release"])
def test_an_image_or_modules_path_that_cannot_be_booted_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    image, modules = _built_elsewhere(tmp_path)
    odd = tmp_path / "odd" / "modules"
    odd.mkdir(parents=True)
    (odd / "modules.dep").write_text("")
    bad: dict[str, Any] = {
        "image-missing": {"image": str(tmp_path / "nope")},
        "image-relative": {"image": "vmlinuz-6.1.0-c4c"},
        "image-device": {"image": "/dev/zero"},
        "image-directory": {"image": str(modules)},
        "modules-missing": {"modules_dir": str(modules.parent / "6.1.0-gone")},
        "modules-relative": {"modules_dir": "lib/modules/6.1.0-c4c"},
        "modules-device": {"modules_dir": "/dev/6.1.0-c4c"},
        "modules-file": {"modules_dir": str(image.parent / "6.1.0-file")},
        "modules-no-depmod": {},
        "modules-not-a-release": {"modules_dir": str(odd)},
    }[case]
    if case == "modules-file":
        Path(bad["modules_dir"]).write_text("x")
    if case == "modules-no-depmod":
        (modules / "modules.dep").unlink()
    kernel = {"package": None, "image": str(image), "modules_dir": str(modules), **bad}
    path = _ktb(tmp_path, **kernel)
    key = "kernel.image" if case.startswith("image") else "kernel.modules_dir"
    code, _, err = _call(["validate", str(path)], capsys)
    assert_refused(code, err, str(path), (key,))


@pytest.mark.parametrize("what", ["image", "modules"])
def test_a_missing_kernel_is_refused_by_up_and_provision_before_anything(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], no_up: None, lab: Path,
        what: str) -> None:
    """It was exit 1 from ``testbed up`` and a plan (exit 0) from ``provision --dry-run``."""
    image, modules = _built_elsewhere(tmp_path)
    gone = image if what == "image" else modules
    path = _ktb(tmp_path, package=None, image=str(image), modules_dir=str(modules))
    if what == "image":
        image.unlink()
    else:
        (modules / "modules.dep").unlink()
        modules.rmdir()
    key = "kernel.image" if what == "image" else "kernel.modules_dir"
    for argv in (["testbed", "up", str(path)],
                 ["provision", str(lab), "--kernel", str(path), "--dry-run"]):
        code, out, err = _call(argv, capsys)
        assert_refused(code, err, str(path), (key, str(gone), "no such"))
        assert out == "", out


def test_a_missing_image_does_not_keep_testbed_down_from_working(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The check is where the kernel is used: loading the file for ``down`` or
    ``status`` still works once the image is gone."""
    image, modules = _built_elsewhere(tmp_path)
    path = _ktb(tmp_path, package=None, image=str(image), modules_dir=str(modules))
    image.unlink()
    code, out, err = _call(["testbed", "status", str(path)], capsys)
    assert code == 0 and "down" in out, err


# -- the guest's CPU and memory against this host ---------------------------------------------
@pytest.mark.parametrize("case", ["host-cpu-is-the-testers", "more-cpus-than-the-host",
                                  "more-memory-than-the-host"])
def test_a_guest_that_does_not_fit_this_host_is_refused_before_anything_is_made(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], no_up: None, case: str) -> None:
    tester_cpu = KERNEL_61["tester"]["cpu"]
    memory = host_memory_mb()
    if case == "more-memory-than-the-host" and (memory is None or memory + 1 > 65536):
        pytest.skip("this host's memory is unknown or above the key's own bound")
    if case == "host-cpu-is-the-testers" and tester_cpu not in host_cpus():
        pytest.skip("the shipped tester.cpu is not a CPU of this host")
    key, value = {"host-cpu-is-the-testers": ("host_cpu", tester_cpu),
                  "more-cpus-than-the-host": ("cpus", len(host_cpus()) + 1),
                  "more-memory-than-the-host": ("memory_mb", (memory or 0) + 1)}[case]
    if key == "cpus" and value > 64:
        pytest.skip("this host has more CPUs than the key's own bound")
    path = _ktb(tmp_path, **{key: value})
    for argv in (["validate", str(path)], ["testbed", "up", str(path)]):
        code, _, err = _call(argv, capsys)
        assert_refused(code, err, str(path), (f"kernel.{key} = {value}",))


def test_a_host_cpu_beyond_the_host_is_refused_by_up_before_anything_is_made(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], no_up: None) -> None:
    path = _ktb(tmp_path, host_cpu=max(host_cpus()) + 1)
    code, _, err = _call(["testbed", "up", str(path)], capsys)
    assert_refused(code, err, str(path), ("kernel.host_cpu", "not a CPU of this host"))


# -- latency ------------------------------------------------------------------------------------
def _exp(tmp_path: Path, **blocks: Any) -> Path:
    data = copy.deepcopy(QUICK)
    data.update(blocks)
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_thousands_of_latency_fractions_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fractions = [round(0.0001 * (i + 1), 4) for i in range(3000)]
    path = _exp(tmp_path, latency={"enabled": True, "fractions": fractions})
    code, _, err = _call(["validate", str(path)], capsys)
    assert_refused(code, err, str(path), ("latency.fractions", "limit of 20 entries"))


def test_a_latency_stream_above_the_line_rate_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    virtual = yaml.safe_load((resources.testbed_dir() / "virtual.yaml").read_text())
    line = int(virtual["tester"]["line_rate_pps"])
    path = _exp(tmp_path, latency={"enabled": True, "stream_pps": line + 1})
    code, _, err = _call(["validate", str(path), "--testbed", "virtual"], capsys)
    assert_refused(code, err, str(path), (f"latency.stream_pps = {line + 1}", "line rate"))
    ok = _exp(tmp_path, latency={"enabled": True, "stream_pps": line})
    code, out, err = _call(["validate", str(ok), "--testbed", "virtual"], capsys)
    assert code == 0, err


# -- trend and suites ----------------------------------------------------------------------------
@pytest.mark.parametrize("flag", ["--testbed", "--html", "--suite", "--experiment"])
def test_trend_refuses_an_empty_name(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     flag: str) -> None:
    """An empty name was read as "no filter" (exit 0, every testbed's history)."""
    with ResultStore(tmp_path / "srperf.sqlite") as store:
        store.end_run(store.begin_run("c4c", "simulated", "linux", {}), "finished")
    code, out, err = _call(["trend", "--results", str(tmp_path), flag, ""], capsys)
    assert_refused(code, err, "<command line>", (flag, "empty"))
    assert out == "" and not list(tmp_path.glob("*.html"))


def _suite(tmp_path: Path, **keys: Any) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump({"name": "c4c", "testbed": "simulated",
                                    "experiments": ["quick"], **keys}))
    return path


def test_a_trend_block_the_verdict_ignores_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _suite(tmp_path, verdict="baseline", trend={"min_change_pct": 5})
    code, _, err = _call(["validate", str(path)], capsys)
    assert_refused(code, err, str(path), ("trend = ", "verdict 'baseline' ignores"))
    code, _, err = _call(["validate", str(_suite(tmp_path, verdict="baseline"))], capsys)
    assert code == 0, err


def test_a_trend_reference_no_experiment_measures_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "h_encaps_red" not in QUICK["behaviors"]
    path = _suite(tmp_path, trend={"reference": "h_encaps_red"})
    code, _, err = _call(["validate", str(path)], capsys)
    assert_refused(code, err, str(path), ("trend.reference = 'h_encaps_red'",
                                          "no experiment of the suite measures it"))


# -- the README's promises ---------------------------------------------------------------------
def test_a_whole_float_is_a_whole_number_in_the_build_block_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from srperf.kernel.build import BuildRecipe

    recipe = BuildRecipe.from_mapping(str(tmp_path / "k.yaml"), {
        "source": "linux-source-6.1", "jobs": 2.0}, str(tmp_path / "cache"))
    assert recipe.jobs == 2 and type(recipe.jobs) is int
    path = _ktb(tmp_path, package=None, build={"source": "linux-source-6.1", "jobs": 2.0})
    code, _, err = _call(["validate", str(path)], capsys)
    assert code == 0, err


def test_the_shipped_kernel_src_name_works_for_build_and_provision(
        capsys: pytest.CaptureFixture[str], lab: Path) -> None:
    code, out, err = _call(["kernel", "build", "kernel-src", "--dry-run"], capsys)
    assert code == 0 and "dry run" in out, err
    code, out, err = _call(["provision", str(lab), "--kernel", "kernel-src", "--dry-run"],
                           capsys)
    assert code == 0 and "kernel-src.yaml" in out, err
