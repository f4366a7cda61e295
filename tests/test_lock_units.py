"""Pieces of the testbed lock and of fault handling that need no root and no namespace."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Sequence

import pytest

from srperf.drivers.base import TrialResult
from srperf.errors import GeneratorError, SearchAborted, TransportError
from srperf.util.netns import CommandResult
from srperf.measure.session import MeasurementSession
from srperf.testbeds.lock import Holder
from srperf.testbeds.sut import SutControl
from srperf.transports.base import Transport
from srperf.transports.netns import NetnsTransport


def test_holder_round_trips_and_knows_a_dead_pid_on_this_host() -> None:
    me = Holder.me("srperf run quick", run_id="r1")
    back = Holder.parse(me.to_json())
    assert back == me and back.is_me() and not back.dead()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    gone = dataclasses.replace(me, pid=child.pid)
    assert gone.dead() and not gone.is_me()  # ended: its PID has no process (or another)
    elsewhere = dataclasses.replace(gone, host="another-host")
    assert not elsewhere.dead()  # a holder on another host is never judged from here
    assert "srperf pid" in me.describe() and "run r1" in me.describe()
    assert Holder.parse("") is None and Holder.parse("[1, 2]") is None


def test_held_process_reads_lines_and_ends_at_end_of_input() -> None:
    held = NetnsTransport(None).hold(["bash", "-c", 'echo hello; while read -r l; do '
                                      'echo "got $l"; done; echo bye'])
    assert held.readline(10) == "hello"
    held.send("one")
    assert held.readline(10) == "got one" and held.alive()
    held.close()  # its stdin closes: the loop ends
    assert not held.alive()


class DroppingTransport(Transport):
    """TEST DOUBLE: a node whose connection drops under the first ``drops`` commands."""

    name = "double"

    def __init__(self, drops: int) -> None:
        super().__init__()
        self.drops, self.calls, self.reconnects = drops, [], 0

    @property
    def where(self) -> str:
        return "double node"

    def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
            timeout: float = 60.0, input_text: str | None = None) -> CommandResult:
        self.calls.append(list(argv))
        if argv[:1] == ["bash"] and self.drops > 0:
            self.drops -= 1
            raise TransportError("double node: connection lost")
        return CommandResult(tuple(argv), 0, "", "")

    def _put_file(self, local: Path, remote: str) -> None:
        pass

    def reconnect(self) -> None:
        self.reconnects += 1


def _control(transport: Transport) -> SutControl:
    from srperf.forwarders import registry as forwarders
    from srperf.config.model import TestbedConfig

    control = SutControl(forwarders.get("linux"), transport, TestbedConfig(name="t"))
    control._script, control.env = "/tmp/srperf.XXXXXXXXXX/linux.sh", {"SRPERF_X": "1"}
    return control


def test_a_cfg_function_cut_by_a_lost_connection_is_run_again_once() -> None:
    node = DroppingTransport(drops=1)
    _control(node).call("end")
    assert node.reconnects == 1
    assert [c for c in node.calls if c[:1] == ["bash"]] == [["bash", node.calls[0][1], "end"]] * 2


def test_a_connection_lost_twice_is_an_error() -> None:
    node = DroppingTransport(drops=2)
    with pytest.raises(TransportError, match="connection lost"):
        _control(node).call("end")
    assert node.reconnects == 1


class DyingGenerator:
    """TEST DOUBLE: a generator whose process dies under the first ``deaths`` trials."""

    def __init__(self, deaths: int) -> None:
        self.deaths, self.trials = deaths, 0

    def trial(self, rate_pps: float, duration_s: float, *,
              stop_lost: int | None = None) -> TrialResult:
        self.trials += 1
        if self.deaths > 0:
            self.deaths -= 1
            raise GeneratorError("srgen failed (-9): ")
        n = round(rate_pps * duration_s)
        return TrialResult(rate_pps, duration_s, n, n, 0, n, duration_s)


def test_a_dead_generator_trial_is_run_once_more_then_the_search_is_aborted() -> None:
    gen = DyingGenerator(deaths=1)
    assert MeasurementSession._trial(gen, "end", 1000.0, 1.0).received == 1000  # type: ignore
    assert gen.trials == 2
    gen = DyingGenerator(deaths=2)
    with pytest.raises(SearchAborted, match=r"failed 2 times .* srgen failed \(-9\)"):
        MeasurementSession._trial(gen, "end", 1000.0, 1.0)  # type: ignore[arg-type]
    assert gen.trials == 2
