"""A profile trial over SSH, against the real sshd the suite uses (tests/sshd.py).

An ssh testbed whose SUT (the SUT namespace of a virtual testbed, prefix ``s23s``) is
reached only through SSH: ``srperf run`` with ``profile: {enabled: true}`` reads
/proc/stat, runs perf record/report and checks for a PMU on the SUT through the SSH
transport, stores the profile and prints it in the run's summary."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from sshd import SshdNode, sshd_on_virtual_testbed
from srperf.cli.entry import main
from busy_host import BUSY_HOST_OPTIONS

pytestmark = pytest.mark.netns

PREFIX = "s23s"


@pytest.fixture(scope="module")
def node() -> Iterator[SshdNode]:
    with sshd_on_virtual_testbed(PREFIX, tag=23, name="s23-ssh-links") as sshd:
        yield sshd




def test_profile_trial_over_ssh(node: SshdNode, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    tb = tmp_path / "tb.yaml"
    tb.write_text(yaml.safe_dump({
        "name": "s23-ssh", "kind": "ssh", "prefix": PREFIX,
        "tester": {"driver": "linux", "netns": f"{PREFIX}-tester", "tx": {"name": "t0"},
                   "rx": {"name": "t1"}, "line_rate_pps": 1_500_000, "cpu": 0,
                   "options": BUSY_HOST_OPTIONS},
        "sut": {"forwarder": "linux", "in": {"name": "s0"}, "out": {"name": "s1"}, "cpu": 1,
                "transport": {"kind": "ssh", "ssh": node.ssh_config()}}}))
    exp = tmp_path / "exp.yaml"
    exp.write_text(yaml.safe_dump({
        "name": "s23-ssh-profile", "forwarder": "linux", "behaviors": ["end"],
        "search": {"algorithm": "bisect", "trial_duration_s": 0.3, "accuracy": "10%",
                   "min_rate": "2%", "max_rate": "20%"},
        "profile": {"enabled": True, "duration_s": 1.0, "top": 5}}))
    rc = main(["run", str(exp), "--testbed", str(tb), "--results", str(tmp_path / "res")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "end: profile at 90% of " in out and "ns/pkt in cpu1" in out
    assert "profile trials (ns of the SUT's forwarding per forwarded packet" in out
    db = sqlite3.connect(tmp_path / "res" / "srperf.sqlite")
    (ns, cpu_ns, samples, pmu_note, detail), = db.execute(
        "SELECT ns_per_packet, cpu_ns_per_packet, samples, pmu_note, detail FROM profiles")
    prof = json.loads(detail)
    # no forwarding threads named on an ssh testbed: the whole CPU's busy time counts
    assert prof["threads"] == [] and prof["thread_ns"] is None
    assert ns == cpu_ns and ns > 0 and prof["packets"] > 0
    assert samples > 0 and prof["functions"], prof["sampler_note"]
    # the call chains came back over SSH too (perf script on the SUT)
    lookup = [s for s in prof["stacks"] if s["group"] == "route lookup" and s["kind"] == "total"]
    # the group is reported with a share in [0, 1]; whether a sampled stack happened to
    # fall in the route lookup is chance (it was 0 under the suite's two workers)
    assert lookup and 0.0 <= lookup[0]["share"] <= 1.0, prof["stacks_note"]
    if not any(Path(p).exists() for p in ("/sys/bus/event_source/devices/cpu",
                                           "/sys/bus/event_source/devices/cpu_core")):
        assert pmu_note.startswith("no hardware PMU")
    # perf's data file went to the transport's private directory and left with it
    assert not list(Path("/tmp").glob("srperf.*/perf-cpu1.data"))
