"""Issue 44's probe classes that are about names and numbers: a shipped testbed name
works for every command that takes one, whole floats are whole numbers in the
kernel block too, and each subcommand's help describes that subcommand."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from srperf import resources
from srperf.cli.entry import main
from srperf.errors import ConfigError
from srperf.kernel.target import KernelTarget

KERNEL_61 = resources.testbed_dir() / "kernel-6.1.yaml"


def test_a_shipped_name_is_the_file_not_the_directory_beside_it() -> None:
    assert (resources.testbed_dir() / "kernel-src").is_dir()  # the kernel tree
    found = resources.find_config("kernel-src", "testbed")
    assert found == resources.testbed_dir() / "kernel-src.yaml"


@pytest.mark.parametrize("argv", [["validate", "kernel-src"], ["validate", "quick"],
                                  ["testbed", "status", "kernel-src"]])
def test_commands_take_shipped_names(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0, capsys.readouterr().err


def test_kernel_build_help_describes_kernel_build(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["kernel", "build", "--help"])
    out = capsys.readouterr().out
    assert "kernel cache" in out and "Compile the traffic generator" not in out


def _kernel_block(**change: object) -> dict[str, object]:
    block = dict(yaml.safe_load(KERNEL_61.read_text())["kernel"])
    block.update(change)
    return block


def test_whole_floats_are_whole_numbers_in_the_kernel_block() -> None:
    t = KernelTarget.from_mapping("k.yaml", _kernel_block(memory_mb=1024.0, cpus=1.0,
                                                          host_cpu=0.0))
    assert (t.memory_mb, t.cpus, t.host_cpu) == (1024, 1, 0)
    assert all(type(v) is int for v in (t.memory_mb, t.cpus, t.host_cpu))


@pytest.mark.parametrize(("key", "value", "says"), [
    ("cpus", True, "not a boolean"), ("host_cpu", True, "not a boolean"),
    ("memory_mb", 512.5, "an integer"), ("memory_mb", "lots", "an integer"),
    ("cpus", -1, "an integer"), ("host_cpu", -1, "not a CPU of this host"),
    ("host_cpu", 4096, "not a CPU of this host"),
])
def test_bad_numbers_in_the_kernel_block_are_refused(key: str, value: object,
                                                     says: str) -> None:
    with pytest.raises(ConfigError) as exc:
        KernelTarget.from_mapping("k.yaml", _kernel_block(**{key: value}))
    assert f"kernel.{key}" in str(exc.value) and says in str(exc.value)
    assert "k.yaml" in str(exc.value)


def test_validate_refuses_a_host_cpu_beyond_the_host(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    data = yaml.safe_load(KERNEL_61.read_text())
    data["kernel"]["host_cpu"] = 4096
    path = tmp_path / "k.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 2
    assert "kernel.host_cpu = 4096" in capsys.readouterr().err


def _experiment(tmp_path: Path, base: str, **blocks: object) -> Path:
    data = yaml.safe_load((resources.experiments_dir() / f"{base}.yaml").read_text())
    data.update(blocks)
    path = tmp_path / f"{base}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("fractions", [[0.5, 0.5], [0.5, 0.504], [0.1] * 21])
def test_latency_loads_whose_labels_collide_are_refused(
        fractions: list[float], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _experiment(tmp_path, "quick", latency={"enabled": True, "fractions": fractions})
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: latency.fractions = " in err and "internal error" not in err


@pytest.mark.parametrize(("base", "argv", "says"), [
    ("quick", ["--set", "search.algorithm=mrr"], "an mrr search finds none"),
    ("quick", ["--testbed", "simulated"], "no latency stream"),
    ("caching_proxy_goodput", [], "experiment finds none"),
])
def test_latency_where_it_cannot_be_measured_is_refused(
        base: str, argv: list[str], says: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    path = _experiment(tmp_path, base, latency={"enabled": True})
    assert main(["run", str(path), *argv, "--results", str(tmp_path / "res")]) == 2
    err = capsys.readouterr().err
    assert "latency.enabled = True" in err and says in err
    assert not (tmp_path / "res").exists()  # refused before anything started


@pytest.mark.parametrize(("argv", "says"), [
    (["ssh", "--kernel", "kernel-6.1", "--dry-run", "--check"], "--check = True"),
    (["ssh", "--dry-run", "--check"], "--check = True"),
    (["ssh", "--kernel", "kernel-6.1", "--role", "tester", "--dry-run"], "--role = 'tester'"),
    (["cloudlab", "--kernel", "kernel-6.1"], "--kernel = 'kernel-6.1'"),
    (["ssh", "-o", "profile.py", "--dry-run"], "-o = 'profile.py'"),
])
def test_provision_options_that_contradict_are_refused(
        argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["provision", *argv]) == 2
    captured = capsys.readouterr()
    assert says in captured.err and captured.out == ""
