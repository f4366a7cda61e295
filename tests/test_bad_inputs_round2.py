"""Bad inputs, round two (issue 25): parser limits, numbers, names, consistency, files.

Like tests/test_bad_inputs.py, each case is a file or a command line wrong in one
way; it goes through ``srperf validate`` and ``srperf run`` (or the command it
is for) in this process and must exit 2 within 2 s with one message that names
the file (or option), the key and the value, with no internal error, and start
nothing: no namespace of this module's prefix, no results store.  Were a case
wrongly accepted, ``run`` would bring the ``s25bd`` testbed up and the case
would fail on the namespaces it left.  The last tests show the valid controls
the issue found refused (``conformance: off``, merge keys, whole floats) accepted.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from srperf.cli.entry import main
from srperf.util.netns import netns_names
from refusals import assert_refused
from test_bad_inputs import _merge

PREFIX = "s25bd"
GOOD_EXP: dict[str, Any] = {"name": "r2", "behaviors": ["ipv6"],
                            "search": {"algorithm": "bisect", "trial_duration_s": 0.2}}
GOOD_TB: dict[str, Any] = {"name": "r2", "kind": "virtual", "prefix": PREFIX,
                           "tester": {"line_rate_pps": 300000}}
LIMIT_S = 2.0
"""The issue's bound on a refusal (an alias bomb used to take minutes)."""


def _exp(change: dict[str, Any]) -> str:
    return yaml.safe_dump(_merge(GOOD_EXP, change))


def _tb(change: dict[str, Any]) -> str:
    return yaml.safe_dump(_merge(GOOD_TB, change))


def _addr(**change: Any) -> str:
    return _tb({"addressing": change})


def _ssh_tb(ssh: dict[str, Any]) -> str:
    return yaml.safe_dump({"name": "r2", "kind": "ssh", "prefix": PREFIX,
                           "tester": {"line_rate_pps": 300000},
                           "sut": {"transport": {"kind": "ssh", "ssh": {
                               "host": "sut.invalid", "known_hosts": "good_known_hosts",
                               **ssh}}}})


def _bomb(levels: int = 9) -> str:
    """A "billion laughs" document: 9 ** levels nodes once expanded."""
    lines = ['name: r2', 'behaviors: [ipv6]', 'l0: &l0 ["lol","lol","lol","lol","lol",'
             '"lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _flow_bomb(levels: int = 8) -> str:
    parts = ['&a0 [x,x,x,x,x,x,x,x,x,x]']
    for i in range(1, levels):
        parts.append(f"&a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    return "[" + ",".join(parts) + "]"


DEEP = "name: r2\nbehaviors: [ipv6]\nx: " + "[" * 200 + "]" * 200 + "\n"
DEEP_BLOCK = "name: r2\nbehaviors: [ipv6]\n" + "".join(
    "  " * i + f"k{i}:\n" for i in range(60)) + "  " * 60 + "v: 1\n"

# -- experiment files: (id, text, needles) -------------------------------------------
EXPERIMENTS: list[tuple[str, str, tuple[str, ...]]] = [
    # parser limits
    ("limit-billion-laughs", _bomb(), ("MAX_NODES", "100000")),
    ("limit-deep-flow", DEEP, ("MAX_DEPTH", "32")),
    ("limit-deep-block", DEEP_BLOCK, ("MAX_DEPTH", "32")),
    ("limit-recursive-alias", "name: r2\nbehaviors: [ipv6]\nx: &x [1, *x]\n",
     ("recursive alias",)),
    ("limit-too-large", "name: r2\nbehaviors: [ipv6]\n#" + "x" * (4 * 1024 * 1024) + "\n",
     ("too large", "4194304")),
    # numbers: magnitudes no user means, and integers that are not whole
    ("num-trial-1e6", _exp({"search": {"trial_duration_s": 1e6}}),
     ("search.trial_duration_s", "1000000.0", "3600")),
    ("num-warmup-1e9", _exp({"search": {"warmup_s": 1e9}}),
     ("search.warmup_s", "1000000000.0", "3600")),
    ("num-initial-trial-1e5", _exp({"search": {"initial_trial_duration_s": 1e5}}),
     ("search.initial_trial_duration_s", "100000.0", "3600")),
    ("num-duration-sum-1e9", _exp({"search": {"algorithm": "mlr", "duration_sum_s": 1e9}}),
     ("search.duration_sum_s", "1000000000.0", "86400")),
    ("num-latency-pps-1e300", _exp({"latency": {"stream_pps": 1e300}}),
     ("latency.stream_pps", "1e+300", "1e+07")),
    ("num-latency-pps-tiny", _exp({"latency": {"stream_pps": 1e-300}}),
     ("latency.stream_pps", "1e-300", "limit of 1")),
    ("num-latency-duration-1e5", _exp({"latency": {"duration_s": 1e5}}),
     ("latency.duration_s", "100000.0", "3600")),
    ("num-min-rate-1e300", _exp({"search": {"min_rate": 1e300}}),
     ("search.min_rate", "1e+300", "2e+09")),
    ("num-min-rate-1e-300", _exp({"search": {"min_rate": 1e-300}}),
     ("search.min_rate", "1e-300", "1..2e+09")),
    ("num-max-rate-text-huge", _exp({"search": {"max_rate": "999999999999Mpps"}}),
     ("search.max_rate", "999999999999Mpps", "MAX_PPS")),
    ("num-accuracy-text-tiny", _exp({"search": {"accuracy": "0.0001pps"}}),
     ("search.accuracy", "0.0001pps", "MIN_PPS")),
    ("num-mrr-rate-150pct", _exp({"search": {"algorithm": "mrr", "mrr_rate": "150%"}}),
     ("search.mrr_rate", "150%", "100%")),
    ("num-repetitions-1e9", _exp({"repetitions": 1000000000}),
     ("repetitions", "1000000000", "1000")),
    ("num-repetitions-half", _exp({"repetitions": 2.5}), ("repetitions", "2.5", "whole")),
    ("num-repeat-near-1e6", _exp({"search": {"repeat_near_threshold": 1000000}}),
     ("search.repeat_near_threshold", "1000000", "100")),
    ("num-threshold-negative", _exp({"search": {"thresholds_pct": [-1]}}),
     ("search.thresholds_pct[0]", "-1", "0")),
    ("num-packet-size-float", _exp({"packet_sizes": [64.25]}),
     ("packet_sizes[0]", "64.25")),
    ("num-ebpf-age-1e9", _exp({"forwarder": "ebpf", "behaviors": ["end_am"],
                               "options": {"proxy": {"age_s": 1e9}}}),
     ("options.proxy.age_s", "1000000000.0", "3600")),
    # names
    ("name-newline", _exp({"name": "r2\n"}), ("name", "'r2\\n'", "control character")),
    ("name-1mb", _exp({"name": "n" * 1_000_000}), ("name", "nnnn", "4096")),
    ("name-slash", _exp({"name": "a/../b"}), ("name", "a/../b", "'/'")),
    ("name-behavior-newline", _exp({"behaviors": ["ipv6\n"]}),
     ("behaviors[0]", "'ipv6\\n'", "control character")),
    ("name-forwarder-newline", _exp({"forwarder": "linux\n"}),
     ("forwarder", "'linux\\n'", "control character")),
    ("name-testbed-key-newline", _exp({"testbed": "virtual\n"}),
     ("testbed", "'virtual\\n'", "control character")),
    ("name-key-with-newline", "name: r2\nbehaviors: [ipv6]\n\"search\\n\": {}\n",
     ("'search\\n'", "control character")),
    # consistency
    ("plan-size-twice", _exp({"packet_sizes": [64, 128, 64]}),
     ("packet_sizes[2]", "64", "twice")),
    ("plan-imix-twice", _exp({"packet_sizes": ["imix", 64, "imix"]}),
     ("packet_sizes[2]", "imix", "twice")),
    ("plan-size-twice-as-float", _exp({"packet_sizes": [64, 64.0]}),
     ("packet_sizes[1]", "64", "twice")),
    ("valid-word-on-refused", "name: r2\nbehaviors: [ipv6]\nconformance: on\n",
     ("conformance", "True", "off, required")),
]

# -- testbed files ----------------------------------------------------------------------
TESTBEDS: list[tuple[str, str, tuple[str, ...]]] = [
    ("limit-tb-billion-laughs", "name: r2\nkind: virtual\n" + "\n".join(_bomb().splitlines()[2:])
     + "\n", ("MAX_NODES",)),
    ("limit-tb-deep", "name: r2\nkind: virtual\nsimulated: " + "{a: " * 100 + "1" + "}" * 100
     + "\n", ("MAX_DEPTH",)),
    # numbers
    ("num-line-rate-1e300", _tb({"tester": {"line_rate_pps": 1e300}}),
     ("tester.line_rate_pps", "1e+300", "2e+09")),
    ("num-line-rate-1e-300", _tb({"tester": {"line_rate_pps": 1e-300}}),
     ("tester.line_rate_pps", "1e-300", "1000")),
    ("num-line-rate-half", _tb({"tester": {"line_rate_pps": 0.5}}),
     ("tester.line_rate_pps", "0.5", "1000")),
    ("num-cpu-fraction", _tb({"sut": {"cpu": 1.5}}), ("sut.cpu", "1.5", "whole")),
    ("num-cpu-huge", _tb({"tester": {"cpu": 100000}}), ("tester.cpu", "100000", "8191")),
    ("num-table-huge", _addr(table=10**12), ("addressing.table", "1000000000000", "4294967295")),
    ("num-mtu-fraction", _addr(link_mtu=1500.5), ("addressing.link_mtu", "1500.5", "whole")),
    ("num-napi-defer-1e9", _tb({"sut": {"napi_defer_hard_irqs": 10**9}}),
     ("sut.napi_defer_hard_irqs", "1000000000", "1000")),
    ("num-gro-1e9", _tb({"sut": {"gro_flush_timeout_us": 1e9}}),
     ("sut.gro_flush_timeout_us", "1000000000.0", "10000")),
    ("num-ssh-timeout-1e300", _ssh_tb({"timeout_s": 1e300}),
     ("sut.transport.ssh.timeout_s", "1e+300", "3600")),
    ("num-ssh-port-fraction", _ssh_tb({"port": 22.5}),
     ("sut.transport.ssh.port", "22.5", "whole")),
    ("num-ssh-keepalive-1e9", _ssh_tb({"keepalive_s": 10**9}),
     ("sut.transport.ssh.keepalive_s", "1000000000", "3600")),
    ("num-trex-timeout-1e9", _tb({"tester": {"driver": "trex", "options": {"timeout_s": 1e9}}}),
     ("tester.options.timeout_s", "1000000000.0", "3600")),
    ("num-linux-max-lag", _tb({"tester": {"options": {"max_lag_s": 100}}}),
     ("tester.options.max_lag_s", "100", "1")),
    ("num-provision-irq-cpu", _tb({"provision": {"tuning": {"irq_cpu": 10**6}}}),
     ("provision.tuning.irq_cpu", "1000000", "8191")),
    # names
    ("name-prefix-newline", _tb({"prefix": "s25\n"}), ("prefix", "'s25\\n'", "control")),
    ("name-ifname-newline", _tb({"sut": {"in": {"name": "s0\n"}}}),
     ("sut.in.name", "'s0\\n'", "control")),
    ("name-tb-name-long", _tb({"name": "t" * 200}), ("name", "tttt", "64")),
    ("name-netns-dotdot", _tb({"tester": {"netns": ".."}}), ("tester.netns", "'..'", "'..'")),
    ("name-netns-dot", _tb({"tester": {"netns": "."}}), ("tester.netns", "'.'", "'.'")),
    ("name-netns-newline", _tb({"tester": {"netns": "lab\n"}}),
     ("tester.netns", "'lab\\n'", "control")),
    ("name-mac-multicast", _tb({"sut": {"in": {"name": "s0", "mac": "01:00:5e:00:00:01"}}}),
     ("sut.in.mac", "01:00:5e:00:00:01", "unicast")),
    ("name-mac-broadcast", _tb({"tester": {"tx": {"name": "t0", "mac": "ff:ff:ff:ff:ff:ff"}}}),
     ("tester.tx.mac", "ff:ff:ff:ff:ff:ff", "unicast")),
    ("name-mac-zero", _tb({"tester": {"rx": {"name": "t1", "mac": "00:00:00:00:00:00"}}}),
     ("tester.rx.mac", "00:00:00:00:00:00", "not all zero")),
    ("name-addressing-mac-multicast", _addr(sut_out_mac="03:5e:00:00:02:02"),
     ("addressing.sut_out_mac", "03:5e:00:00:02:02", "unicast")),
    ("name-vnf-mac-prefix-multicast", _addr(vnf_mac_prefix="01:5e:00:10"),
     ("addressing.vnf_mac_prefix", "01:5e:00:10", "unicast")),
    ("name-ssh-host-dash", _ssh_tb({"host": "-oProxyCommand=touch"}),
     ("sut.transport.ssh.host", "-oProxyCommand=touch", "not starting with '-'")),
    ("name-ssh-host-newline", _ssh_tb({"host": "sut\n*"}),
     ("sut.transport.ssh.host", "'sut\\n*'", "control")),
    ("name-ssh-host-space", _ssh_tb({"host": "a b"}), ("sut.transport.ssh.host", "'a b'")),
    ("name-ssh-host-label", _ssh_tb({"host": "a..b"}),
     ("sut.transport.ssh.host", "a..b", "not a host name")),
    ("name-ssh-user-dash", _ssh_tb({"user": "-root"}), ("sut.transport.ssh.user", "-root")),
    ("name-ssh-proxy-huge", _ssh_tb({"proxy_command": "nc %h %p " + "x" * 5000}),
     ("sut.transport.ssh.proxy_command", "nc …(redacted)", "4096")),
    ("name-tmp-base-newline", _ssh_tb({"tmp_base": "/tmp\n"}),
     ("sut.transport.ssh.tmp_base", "control")),
    # consistency of the addressing plan and the ports
    ("plan-tester-is-sut-6", _addr(tester_tx_ip6="fd00:1::2"),
     ("addressing.sut_in_ip6", "fd00:1::2", "same address as addressing.tester_tx_ip6")),
    ("plan-tester-is-sut-4", _addr(tester_rx_ip4="192.0.2.2"),
     ("addressing.tester_rx_ip4", "192.0.2.2", "same address as addressing.sut_out_ip4")),
    ("plan-links-overlap", _addr(sut_out_ip6="fd00:1::3", tester_rx_ip6="fd00:1::4"),
     ("addressing.sut_out_ip6", "fd00:1::3", "same link prefix")),
    ("plan-sid-is-link-address", _addr(sid_sut="fd00:1::2"),
     ("addressing.sid_sut", "fd00:1::2", "link prefix")),
    ("plan-sid-next-on-link", _addr(sid_next="fd00:2::1"),
     ("addressing.sid_next", "fd00:2::1", "link prefix")),
    ("plan-sid-twice", _addr(sid_next="fc00:1::1"),
     ("addressing.sid_next", "fc00:1::1", "same SID as addressing.sid_sut")),
    ("plan-sid-is-source", _addr(sid_last="2001:2:0:a::1"),
     ("addressing.sid_last", "2001:2:0:a::1", "addressing.src6")),
    ("plan-dst6-outside", _addr(dst6="2001:2:0:c::1"),
     ("addressing.dst6", "2001:2:0:c::1", "dst_prefix6")),
    ("plan-dst4-outside", _addr(dst4="198.18.5.1"),
     ("addressing.dst4", "198.18.5.1", "dst_prefix4")),
    ("plan-sid-prefix-covers-links", _addr(sid_prefix="fd00::/8"),
     ("addressing.sid_prefix", "fd00::/8", "covers the link prefix")),
    ("plan-src-is-dst-6", _addr(src6="2001:2:0:b::1"),
     ("addressing.dst6", "2001:2:0:b::1", "same address as addressing.src6")),
    ("plan-src-is-dst-4", _addr(src4="198.19.0.1"),
     ("addressing.dst4", "198.19.0.1", "same address as addressing.src4")),
    ("plan-dst-prefix-is-link", _addr(dst_prefix6="fd00:2::/32", dst6="fd00:2::99"),
     ("addressing.dst_prefix6", "fd00:2::/32", "overlaps the link prefix")),
    ("plan-sut-ports-one-mac", _tb({"sut": {"in": {"name": "s0", "mac": "02:00:00:00:00:07"},
                                            "out": {"name": "s1", "mac": "02:00:00:00:00:07"}}}),
     ("sut.out.mac", "02:00:00:00:00:07", "same MAC as sut.in")),
    ("plan-sut-ports-one-mac-addressing", _addr(sut_out_mac="02:5e:00:00:01:02"),
     ("addressing.sut_out_mac", "02:5e:00:00:01:02", "same MAC as sut.in")),
    ("plan-tester-ports-one-mac", _addr(tester_rx_mac="02:5e:00:00:01:01"),
     ("addressing.tester_rx_mac", "02:5e:00:00:01:01", "same MAC as tester.tx")),
    ("plan-simulated-on-virtual", _tb({"simulated": {"capacity_pps": 1000000}}),
     ("simulated", "capacity_pps", "kind 'simulated'")),
    ("plan-simulated-typo", yaml.safe_dump({
        "name": "r2", "kind": "simulated", "prefix": PREFIX,
        "tester": {"driver": "simulated", "line_rate_pps": 1500000},
        "simulated": {"capacity_pps": 1000000, "capacity_jiter": 0.02}}),
     ("simulated.capacity_jiter", "0.02", "did you mean 'capacity_jitter'")),
    ("plan-simulated-bad-value", yaml.safe_dump({
        "name": "r2", "kind": "simulated", "prefix": PREFIX,
        "tester": {"driver": "simulated", "line_rate_pps": 1500000},
        "simulated": {"capacity_pps": 1000000, "smoothing": 0.9}}),
     ("simulated", "smoothing", "0.9")),
    # files named by a testbed
    ("file-known-hosts-loop", _ssh_tb({"known_hosts": "loop_a"}),
     ("sut.transport.ssh.known_hosts", "loop_a", "symlink loop")),
    ("file-key-loop", _ssh_tb({"key_file": "loop_a"}),
     ("sut.transport.ssh.key_file", "loop_a", "symlink loop")),
    ("file-known-hosts-two-fields", _ssh_tb({"known_hosts": "bad_known_hosts"}),
     ("sut.transport.ssh.known_hosts", "bad_known_hosts", "line 2", "not a known_hosts entry")),
    ("file-known-hosts-bad-key", _ssh_tb({"known_hosts": "badkey_known_hosts"}),
     ("sut.transport.ssh.known_hosts", "badkey_known_hosts", "line 1")),
    ("file-known-hosts-binary", _ssh_tb({"known_hosts": "binary_known_hosts"}),
     ("sut.transport.ssh.known_hosts", "binary_known_hosts", "not text")),
    ("file-key-device", _ssh_tb({"key_file": "/dev/null"}),
     ("sut.transport.ssh.key_file", "/dev/null", "not a regular file")),
]

GOOD_KNOWN_HOSTS = ("sut.invalid ssh-ed25519 "
                    "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")


def _files(folder: Path) -> None:
    """The files the cases name: symlink loops, malformed known_hosts."""
    (folder / "good_known_hosts").write_text(GOOD_KNOWN_HOSTS)
    (folder / "bad_known_hosts").write_text(GOOD_KNOWN_HOSTS + "sut.invalid ssh-ed25519\n")
    (folder / "badkey_known_hosts").write_text("sut.invalid ssh-ed25519 !!!notbase64\n")
    (folder / "binary_known_hosts").write_bytes(b"\xff\xfe\x00garbage")
    os.symlink("loop_b", folder / "loop_a")
    os.symlink("loop_a", folder / "loop_b")


# -- command lines: (id, argv with {exp} {tb} {res} {file} {suite}, needles) ----------------
COMMANDS: list[tuple[str, list[str], tuple[str, ...]]] = [
    ("cli-run-repetitions-1e9", ["run", "{exp}", "--repetitions", "1000000000"],
     ("--repetitions", "1000000000", "1000")),
    ("cli-run-set-repetitions-1e9", ["run", "{exp}", "--set", "repetitions=1000000000"],
     ("repetitions", "1000000000", "1000")),
    ("cli-run-set-warmup-1e9", ["run", "{exp}", "--set", "search.warmup_s=1e9"],
     ("search.warmup_s", "1000000000.0", "3600")),
    ("cli-run-set-bomb", ["run", "{exp}", "--set", "options=" + _flow_bomb()],
     ("--set", "MAX_NODES")),
    ("cli-run-set-newline", ["run", "{exp}", "--set", 'name="x\\n"'],
     ("name", "'x\\n'", "control")),
    ("cli-pdr-trial-1e6", ["pdr", "-b", "ipv6", "--trial-duration", "1e6"],
     ("search.trial_duration_s", "1000000.0", "3600")),
    ("cli-pdr-threshold-150", ["pdr", "-b", "ipv6", "--threshold", "150"],
     ("search.thresholds_pct[0]", "150", "100")),
    ("cli-pdr-max-rate-1e300", ["pdr", "-b", "ipv6", "--max-rate", "1e300"],
     ("search.max_rate", "1e+300")),
    ("cli-pdr-packet-size-1e9", ["pdr", "-b", "ipv6", "--packet-size", "1000000000"],
     ("packet_sizes[0]", "1000000000")),
    ("cli-runs-limit-negative", ["runs", "--limit", "-1"], ("--limit", "-1", "0")),
    ("cli-compare-threshold-1e9", ["compare", "a", "b", "--threshold", "1e9"],
     ("--threshold", "1000000000.0", "1000")),
    ("cli-nightly-repetitions-1e9", ["nightly", "{suite}", "--repetitions", "1000000000"],
     ("--repetitions", "1000000000", "1000")),
    ("cli-results-regular-file", ["run", "{exp}", "--results", "{file}"],
     ("--results", "a_file", "regular file, not a directory")),
    ("cli-results-device", ["run", "{exp}", "--results", "/dev/null"],
     ("--results", "/dev/null", "character device")),
    ("cli-results-below-a-file", ["run", "{exp}", "--results", "{file}/res"],
     ("--results", "a_file", "regular file")),
    ("cli-conform-results-file", ["conform", "--results", "{file}", "-b", "ipv6"],
     ("--results", "a_file", "regular file")),
    ("cli-results-world-writable", ["run", "{exp}", "--results", "{open_dir}"],
     ("--results", "open_dir", "writable by everyone", "sticky")),
    ("cli-results-group-writable", ["run", "{exp}", "--results", "{group_dir}"],
     ("--results", "group_dir", "writable by its group")),
    ("cli-results-other-owner", ["run", "{exp}", "--results", "{nobody_dir}"],
     ("--results", "nobody_dir", "owned by")),
    ("cli-resume-percent", ["run", "--resume", "%", "--results", "{store}"],
     ("--resume = '%'", "not a run id")),
    ("cli-report-underscore", ["report", "_", "--results", "{store}"],
     ("run", "'_'", "not a run id")),
]

# -- nightly suite files: (id, text, needles) -----------------------------------------------
SUITES: list[tuple[str, str, tuple[str, ...]]] = [
    ("suite-name-dotdot", "name: ../../escape\nexperiments: [{exp}]\n",
     ("name", "../../escape", "1-64 letters")),
    ("suite-name-slash", "name: a/b\nexperiments: [{exp}]\n", ("name", "a/b")),
    ("suite-name-newline", "name: \"n\\n\"\nexperiments: [{exp}]\n", ("name", "control")),
    ("suite-repetitions-1e9", "name: n\nexperiments: [{exp}]\nrepetitions: 1000000000\n",
     ("repetitions", "1000000000", "1000")),
    ("suite-threshold-huge", "name: n\nexperiments: [{exp}]\ncompare: {{threshold_pct: 1e9}}\n",
     ("compare.threshold_pct", "1000000000.0", "1000")),
    ("suite-bomb", "name: n\nexperiments: [{exp}]\n" + "\n".join(_bomb().splitlines()[2:])
     + "\n", ("MAX_NODES",)),
    ("suite-algorithm-typo", "name: n\nexperiments: [{exp}]\nalgorithm: mlrr\n",
     ("algorithm", "mlrr", "did you mean")),
    ("suite-reports-is-file", "name: n\nexperiments: [{exp}]\nreports: {file}\n",
     ("reports", "a_file", "regular file")),
]


@pytest.fixture
def case(tmp_path: Path):
    """The case's folder with the files cases name; afterwards nothing may exist of the
    module's prefix, and no results store may have been made."""
    _files(tmp_path)
    yield tmp_path
    left = [n for n in netns_names() if n.startswith(PREFIX)]
    assert not left, f"namespaces left: {left}"
    assert not (tmp_path / "res").exists(), "a results store was made: the run started"


def _call(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, float]:
    # CPU seconds, not wall: the bound is on srperf's work, which other tasks on a busy
    # machine stretch in wall time only (a refusal took 2.4 s of wall beside busy loops)
    started = time.process_time()
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusal
        code = int(exc.code or 0)
    elapsed = time.process_time() - started
    return code, capsys.readouterr().err, elapsed


def _refused(code: int, err: str, elapsed: float, file: str, needles: tuple[str, ...]) -> None:
    assert_refused(code, err, file, needles)
    assert elapsed < LIMIT_S, f"refused after {elapsed:.1f} s (limit {LIMIT_S} s): {err}"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(("text", "needles"), [c[1:] for c in EXPERIMENTS],
                         ids=[c[0] for c in EXPERIMENTS])
def test_bad_experiment(case: Path, text: str, needles: tuple[str, ...],
                        capsys: pytest.CaptureFixture[str]) -> None:
    exp = _write(case / "bad-exp.yaml", text)
    tb = _write(case / "tb.yaml", _tb({}))
    _refused(*_call(["validate", str(exp), "--testbed", str(tb)], capsys), "bad-exp.yaml",
             needles)
    _refused(*_call(["run", str(exp), "--testbed", str(tb), "--results", str(case / "res")],
                    capsys), "bad-exp.yaml", needles)


@pytest.mark.parametrize(("text", "needles"), [c[1:] for c in TESTBEDS],
                         ids=[c[0] for c in TESTBEDS])
def test_bad_testbed(case: Path, text: str, needles: tuple[str, ...],
                     capsys: pytest.CaptureFixture[str]) -> None:
    tb = _write(case / "bad-tb.yaml", text)
    exp = _write(case / "exp.yaml", _exp({}))
    _refused(*_call(["validate", str(tb)], capsys), "bad-tb.yaml", needles)
    _refused(*_call(["run", str(exp), "--testbed", str(tb), "--results", str(case / "res")],
                    capsys), "bad-tb.yaml", needles)
    _refused(*_call(["testbed", "status", str(tb)], capsys), "bad-tb.yaml", needles)


def _command_files(folder: Path) -> dict[str, str]:
    from srperf.results.store import ResultStore

    exp = _write(folder / "exp.yaml", _exp({}))
    files = {"exp": str(exp), "tb": str(_write(folder / "tb.yaml", _tb({}))),
             "file": str(_write(folder / "a_file", "not a directory\n"))}
    files["suite"] = str(_write(folder / "suite.yaml",
                                f"name: n\nexperiments: [{exp}]\ntestbed: {folder / 'tb.yaml'}\n"))
    for name, mode in (("open_dir", 0o777), ("group_dir", 0o775), ("nobody_dir", 0o755)):
        (folder / name).mkdir()
        os.chmod(folder / name, mode)
    os.chown(folder / "nobody_dir", 65534, 65534)
    store_dir = folder / "store"
    with ResultStore(store_dir / "srperf.sqlite") as store:
        store.begin_run("r2", "r2", "linux", {})
    files.update(open_dir=str(folder / "open_dir"), group_dir=str(folder / "group_dir"),
                 nobody_dir=str(folder / "nobody_dir"), store=str(store_dir))
    return files


@pytest.mark.parametrize(("argv", "needles"), [c[1:] for c in COMMANDS],
                         ids=[c[0] for c in COMMANDS])
def test_bad_command_line(case: Path, argv: list[str], needles: tuple[str, ...],
                          capsys: pytest.CaptureFixture[str]) -> None:
    files = _command_files(case)
    filled = [a.format(**files) for a in argv]
    if filled[0] in ("run", "pdr", "conform") and "--testbed" not in filled \
            and "--resume" not in filled:
        filled += ["--testbed", files["tb"]]
    if "--results" not in filled and filled[0] != "nightly":
        filled += ["--results", str(case / "res")]
    code, err, elapsed = _call(filled, capsys)
    file = next((n for n in ("<command line>", "--", "exp.yaml", "suite.yaml", "srperf.sqlite")
                 if n in err), "<no file named>")
    _refused(code, err, elapsed, file, needles)


@pytest.mark.parametrize(("text", "needles"), [c[1:] for c in SUITES],
                         ids=[c[0] for c in SUITES])
def test_bad_suite(case: Path, text: str, needles: tuple[str, ...],
                   capsys: pytest.CaptureFixture[str]) -> None:
    exp = _write(case / "exp.yaml", _exp({}))
    _write(case / "a_file", "not a directory\n")
    suite = _write(case / "bad-suite.yaml", text.format(exp=exp, file=case / "a_file"))
    _refused(*_call(["nightly", str(suite), "--testbed", str(_write(case / "tb.yaml", _tb({}))),
                     "--results", str(case / "res")], capsys), "bad-suite.yaml", needles)
    assert not (case / "nightly-reports").exists()


def test_round_two_has_80_cases() -> None:
    """The issue asks for at least 80 new bad inputs, by class."""
    n = len(EXPERIMENTS) + len(TESTBEDS) + len(COMMANDS) + len(SUITES)
    assert n >= 80, n
    classes = {c[0].split("-")[0] for c in EXPERIMENTS + TESTBEDS + COMMANDS + SUITES}
    assert {"limit", "num", "name", "plan", "file", "cli", "suite"} <= classes


# -- valid input that round one refused -------------------------------------------------------
def test_conformance_off_and_merge_keys_accepted(tmp_path: Path) -> None:
    from srperf.config.loader import load_experiment, load_testbed

    exp = load_experiment(_write(tmp_path / "exp.yaml", """\
name: merged
behaviors: [ipv6]
conformance: off
search:
  <<: {algorithm: bisect, warmup_s: 0.2, trial_duration_s: 0.5}
  trial_duration_s: 0.3
"""))
    assert exp.conformance == "off"
    assert exp.search.algorithm == "bisect" and exp.search.warmup_s == 0.2
    assert exp.search.trial_duration_s == 0.3   # the override wins over the merged key
    tb = load_testbed(_write(tmp_path / "tb.yaml", f"""\
name: merged
prefix: {PREFIX}
tester:
  tx: &port {{name: t0, mac: "02:00:00:00:00:01"}}
  rx: {{<<: *port, name: t1, mac: "02:00:00:00:00:02"}}
"""))
    assert (tb.tester.rx.name, tb.tester.rx.mac) == ("t1", "02:00:00:00:00:02")
    with pytest.raises(Exception, match="duplicate key 'name'"):   # still refused
        load_testbed(_write(tmp_path / "dup.yaml", "name: a\nname: b\n"))


def test_whole_floats_become_integers(tmp_path: Path) -> None:
    from srperf.config.loader import load_experiment, load_testbed

    exp = load_experiment(_write(tmp_path / "e.yaml", _exp({
        "packet_sizes": [64.0, 128.0], "repetitions": 2.0})))
    assert exp.packet_sizes == (64, 128) and all(type(s) is int for s in exp.packet_sizes)
    assert type(exp.repetitions) is int
    tb = load_testbed(_write(tmp_path / "t.yaml", _tb({
        "sut": {"cpu": 1.0}, "addressing": {"table": 100.0, "link_mtu": 1500.0}})))
    assert type(tb.sut.cpu) is int and tb.sut.cpu == 1
    assert type(tb.addressing.table) is int and type(tb.addressing.link_mtu) is int
    (tmp_path / "kh").write_text(GOOD_KNOWN_HOSTS)
    ssh = load_testbed(_write(tmp_path / "s.yaml", _ssh_tb({"port": 22.0,
                                                          "known_hosts": str(tmp_path / "kh")})))
    assert ssh.sut.transport.ssh is not None and type(ssh.sut.transport.ssh.port) is int


def test_command_line_values_take_the_file_path() -> None:
    from srperf.config.loader import check_value
    from srperf.errors import ConfigError

    assert check_value("--repetitions", 1000, "repetitions") == 1000
    assert check_value("--repetitions", 3.0, "repetitions") == 3
    with pytest.raises(ConfigError, match=r"--repetitions = 1001: above the limit of 1000"):
        check_value("--repetitions", 1001, "repetitions")


def test_every_number_in_every_schema_is_bounded() -> None:
    """Each number setting a file can hold has a lower and an upper bound (applies to
    keys added later too: a new key without bounds fails here)."""
    from srperf.forwarders import registry as forwarders
    from srperf.config.schema import EXPERIMENT_SCHEMA, TESTBED_SCHEMA
    from srperf.traffic.generators import options_class
    from srperf.nightly import SUITE_SCHEMA

    def walk(schema: Any, path: str, out: list[str]) -> None:
        if not isinstance(schema, dict):
            return
        t = schema.get("type")
        types = set(t) if isinstance(t, list) else {t}
        if types & {"number", "integer"}:
            low = "minimum" in schema or "exclusiveMinimum" in schema
            high = "maximum" in schema or "exclusiveMaximum" in schema
            if not (low and high):
                out.append(path)
        for key, sub in schema.get("properties", {}).items():
            walk(sub, f"{path}.{key}", out)
        walk(schema.get("items"), f"{path}[]", out)
        for alt in schema.get("oneOf", []) + schema.get("anyOf", []):
            walk(alt, f"{path}|", out)

    unbounded: list[str] = []
    walk(EXPERIMENT_SCHEMA, "experiment", unbounded)
    walk(TESTBED_SCHEMA, "testbed", unbounded)
    walk(SUITE_SCHEMA, "suite", unbounded)
    for name in forwarders.names():
        walk(forwarders.get(name).options.json_schema(), f"options({name})", unbounded)
    for driver in ("linux", "trex", "simulated"):
        cls: Callable[..., Any] | None = options_class(driver)
        if cls is not None:
            walk(cls.json_schema(), f"tester.options({driver})", unbounded)  # type: ignore
    assert not unbounded, f"numbers without a lower and an upper bound: {unbounded}"
