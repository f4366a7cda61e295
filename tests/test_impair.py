"""Impairments on a pipes chain are real: a share of packets is dropped (counted by the
drop program and seen by TCP as retransmissions); a delay without netem is refused."""

from __future__ import annotations

import subprocess

import pytest

from srperf.stateful import impair
from srperf.stateful.pipes_chain import ROUTER, PipesChain

pytestmark = [pytest.mark.netns]


def _retrans(ns: str) -> int:
    out = subprocess.run(["ip", "netns", "exec", ns, "nstat", "-az", "TcpRetransSegs"],
                         capture_output=True, text=True, check=True).stdout
    return int(out.split("TcpRetransSegs")[1].split()[0])


def test_loss_is_real_and_delay_without_netem_is_refused(tmp_path) -> None:
    with PipesChain("s22b", [ROUTER]) as ch:
        ch.up()
        server, client = ch.names[-1], ch.names[0]
        with pytest.raises(ValueError):
            impair.Impairment(0, "sideways")
        has_netem, _ = impair.netem_available(client, "r0")
        if not has_netem:
            with pytest.raises(impair.ImpairmentUnsupported, match="no netem"):
                impair.apply(ch, impair.Impairment(0, "forward", delay_ms=10))
        applied = impair.apply(ch, impair.Impairment(1, "reverse", loss_pct=10))
        try:
            assert [a.method for a in applied] == ["netem" if has_netem else "bpf-drop"]
            assert applied[0].sender == (server, "l0")
            obj = tmp_path / "blob"
            obj.write_bytes(bytes(range(256)) * 8000)   # 2 MB from the server
            srv = subprocess.Popen(["ip", "netns", "exec", server, "python3", "-m",
                                    "http.server", "-b", ch.server_ip6, "-d", str(tmp_path),
                                    "8099"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
            try:
                before = _retrans(server)
                for _ in range(50):
                    ok = subprocess.run(["ip", "netns", "exec", client, "curl", "-s", "-o",
                                         "/dev/null", "-m", "1",
                                         f"http://[{ch.server_ip6}]:8099/"]).returncode == 0
                    if ok:
                        break
                res = subprocess.run(["ip", "netns", "exec", client, "curl", "-sS", "-m", "60",
                                      f"http://[{ch.server_ip6}]:8099/blob"],
                                     capture_output=True, timeout=90)
                assert res.returncode == 0 and res.stdout == obj.read_bytes()
                assert _retrans(server) - before > 10   # the server resent lost segments
            finally:
                srv.terminate()
                srv.wait()
            if not has_netem:
                counts = impair.drop_counts(applied[0])
                total = counts["passed"] + counts["dropped"]
                assert total > 1000, counts   # one MTU-sized segment per packet (no GSO)
                assert 0.06 < counts["dropped"] / total < 0.14, counts
        finally:
            impair.remove(applied)
