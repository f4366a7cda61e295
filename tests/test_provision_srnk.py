"""srperf.provision.srnk: SRNK kernel/iproute2 and VPP package steps (data, dry-run).

The source steps' commands run for real here against a local archive served
by a recording curl double (FakeCurl on PATH): the archive is unpacked only
when its SHA-256 matches the pinned one; a wrong checksum fails the step and
removes the download.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from srperf.provision.srnk import PinnedSource, srnk_steps, vpp_steps
from srperf.provision.steps import Role

KERNEL = PinnedSource("https://github.com/example/linux-srnk", "a" * 40, "b" * 64)
IPROUTE2 = PinnedSource("https://github.com/example/iproute2-srnk", "c" * 40, "d" * 64)


def test_steps_are_all_on_the_sut_with_checks_and_commands() -> None:
    steps = srnk_steps(KERNEL, IPROUTE2)
    names = [s.name for s in steps]
    assert names == ["sut: linux-srnk build dependencies", "sut: linux-srnk source aaaaaaaaaaaa",
                     "sut: SRNK kernel built and installed", "sut: SRNK kernel in the boot menu",
                     "sut: iproute2-srnk build dependencies",
                     "sut: iproute2-srnk source cccccccccccc",
                     "sut: SRNK iproute2 built and installed"]
    for step in steps:
        assert step.role is Role.SUT and step.check and step.apply and step.why


def test_sources_are_pinned_by_commit_and_checksum() -> None:
    text = "\n".join(c for s in srnk_steps(KERNEL, IPROUTE2) for c in s.apply)
    for src in (KERNEL, IPROUTE2):
        assert f"{src.repo_url}/archive/{src.commit}.tar.gz" in text
        assert f"{src.sha256}  " in text


def test_iproute2_check_asks_for_end_ad() -> None:
    assert "End.AD" in srnk_steps(KERNEL, IPROUTE2)[-1].check


@pytest.mark.parametrize("kwargs,match", [
    ({"repo_url": "http://x/y", "commit": "a" * 40, "sha256": "b" * 64}, "https"),
    ({"repo_url": "https://x/y", "commit": "main", "sha256": "b" * 64}, "commit"),
    ({"repo_url": "https://x/y", "commit": "a" * 40, "sha256": "B" * 64}, "sha256"),
])
def test_unpinned_sources_are_refused(kwargs: dict[str, str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        PinnedSource(**kwargs)


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="jobs"):
        srnk_steps(KERNEL, IPROUTE2, jobs=-1)
    with pytest.raises(ValueError, match="workdir"):
        srnk_steps(KERNEL, IPROUTE2, workdir="relative")
    with pytest.raises(ValueError, match="apt_source"):
        vpp_steps("https://example/vpp")


def _source_step_run(tmp_path: Path, sha256: str) -> tuple[subprocess.CompletedProcess, Path]:
    """The kernel source step's commands, run here with FakeCurl serving a local archive."""
    payload = tmp_path / "linux-srnk-x"
    payload.mkdir()
    (payload / "Makefile").write_text("# srnk\n")
    archive = tmp_path / "served.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(payload, arcname="linux-srnk-x")
    real = hashlib.sha256(archive.read_bytes()).hexdigest()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "curl").write_text(
        "#!/bin/sh\n# FakeCurl: copies the served archive to the -o file\n"
        "while [ $# -gt 0 ]; do case $1 in -o) out=$2; shift;; esac; shift; done\n"
        f"cp {archive} \"$out\"\n")
    (bindir / "curl").chmod(0o755)
    src = PinnedSource(KERNEL.repo_url, KERNEL.commit, sha256 or real)
    work = tmp_path / "work"
    step = srnk_steps(src, IPROUTE2, workdir=str(work))[1]
    script = "set -e\n" + "\n".join(step.apply)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")
    res = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env)
    done = subprocess.run(["bash", "-c", step.check]).returncode == 0
    assert done == (res.returncode == 0)
    return res, work


def test_matching_checksum_unpacks(tmp_path: Path) -> None:
    res, work = _source_step_run(tmp_path, "")
    assert res.returncode == 0, res.stderr
    assert (work / f"linux-srnk-{KERNEL.commit}" / "Makefile").read_text() == "# srnk\n"


def test_wrong_checksum_fails_and_removes_the_download(tmp_path: Path) -> None:
    res, work = _source_step_run(tmp_path, "e" * 64)
    assert res.returncode == 1 and "checksum mismatch" in res.stderr
    assert not list(work.glob("*.tar.gz"))
    assert not (work / f"linux-srnk-{KERNEL.commit}").exists()


def test_vpp_steps() -> None:
    line = "deb [signed-by=/usr/share/keyrings/srperf-vpp.gpg] https://repo.example/vpp bookworm main"
    steps = vpp_steps(line, keyring_url="https://repo.example/key.gpg")
    assert [s.name for s in steps] == ["sut: VPP repository key", "sut: VPP repository",
                                       "sut: VPP packages", "sut: VPP answers"]
    assert "vpp-plugin-core" in steps[2].apply[0]
    assert len(vpp_steps(line)) == 3
