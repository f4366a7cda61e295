"""The profile trial: traffic at a fraction of the PDR while the SUT's forwarding CPU
is measured, through the SUT's own transport (a local namespace or SSH).

Around one trial of ``duration_s`` at ``rate_pps``:

1. the forwarder's sources start (BPF statistics on, VPP runtime cleared);
2. ``/proc/stat`` of the forwarding CPU is read;
3. ``perf record`` samples that CPU (and ``perf stat`` counts cycles and
   instructions where a PMU exists), in threads, each for the trial's duration,
   with perf itself pinned off that CPU when the node has another;
4. the traffic runs; ``/proc/stat`` is read again; perf is waited for;
5. the sources stop (and restore what they switched on); ``perf script`` runs on the
   SUT (the forwarding threads' samples with their call chains) and its output is
   parsed here (:mod:`srperf.profile.stacks`): the top functions by self time, and the
   stack groups' inclusive time (the route lookup, netfilter).

ns per packet = forwarding time / packets forwarded: the time is the forwarding
threads' (where the testbed names them) or the CPU's system + irq + softirq time,
the packets the SUT's egress counter's (else the tester's received count).  Whatever cannot be measured is a stated note, never a
number: perf missing, no PMU, no CPU named (``sut.cpu``).
"""

from __future__ import annotations

import logging
import posixpath
import threading
import time
from typing import Sequence

from srperf.drivers.base import TrafficGenerator, TrialResult
from srperf.util.netns import CommandResult
from srperf.profile import cpustat, perf, stacks
from srperf.profile.model import Profile
from srperf.profile.sources import ProfileSource
from srperf.transports.base import Transport

log = logging.getLogger(__name__)

PERF_START_S = 0.3
"""Head start given to perf before the traffic starts (seconds)."""


def perf_window_s(duration_s: float) -> float:
    """How long perf samples: the trial's duration plus room for the generator's set-up
    and wind-down (seconds).  The extra time costs no accuracy where the samples are
    those of the forwarding threads (idle, they take none); elsewhere it adds whatever
    else ran on the CPU, which a dedicated SUT does not have."""
    return 1.5 * duration_s + 2.0


class _Background(threading.Thread):
    """One command on the node, run while the traffic runs."""

    def __init__(self, node: Transport, argv: Sequence[str], timeout: float) -> None:
        super().__init__(daemon=True)
        self.node, self.argv, self.timeout = node, list(argv), timeout
        self.result: CommandResult | None = None
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            self.result = self.node.run(self.argv, timeout=self.timeout)
        except Exception as exc:   # reported by the caller, never lost
            self.error = exc

    def outcome(self) -> tuple[CommandResult | None, str]:
        self.join(self.timeout + 30.0)
        if self.error is not None:
            return None, str(self.error)
        if self.result is None:
            return None, "did not end"
        if not self.result.ok:
            err = (self.result.stderr or self.result.stdout).strip().splitlines()
            return self.result, f"exit {self.result.returncode}" + (f": {err[-1]}" if err else "")
        return self.result, ""


def _pinned(argv: list[str], cpus: str | None) -> list[str]:
    return ["taskset", "-c", cpus, *argv] if cpus else argv


class ProfileTrial:
    """Measures the forwarding CPU ``cpu`` of the SUT reached through ``node``."""

    def __init__(self, node: Transport, cpu: int | None, sources: Sequence[ProfileSource] = (),
                 perf_command: str = "perf", frequency_hz: int = 999, top: int = 10,
                 thread_prefix: str | None = None, out_port: str | None = None) -> None:
        self.node, self.cpu, self.sources = node, cpu, list(sources)
        self.out_port = out_port
        """The SUT's egress interface: its kernel tx counter counts the packets forwarded
        during the window (None: the tester's received count is used)."""
        self.perf, self.hz, self.top = perf_command, frequency_hz, top
        self.thread_prefix = thread_prefix
        """Name prefix of the forwarding threads on ``cpu`` (None: not known)."""
        self.last_script = ""
        """The last ``perf script`` text, as perf printed it (for recording)."""

    def run(self, gen: TrafficGenerator, rate_pps: float, duration_s: float,
            fraction: float) -> tuple[Profile, TrialResult]:
        profile = Profile(fraction, rate_pps, duration_s, self.cpu)
        started: list[ProfileSource] = []
        try:
            for src in self.sources:
                src.start()
                started.append(src)
            trial = self._measure(gen, profile, rate_pps, duration_s)
        finally:
            for src in started:
                try:
                    src.stop(profile)
                except Exception as exc:  # the others must still restore their state
                    log.error("profile source %s: %s", src.name, exc)
                    profile.notes.append(f"{src.name}: {exc}")
        return profile, trial

    def _measure(self, gen: TrafficGenerator, profile: Profile, rate_pps: float,
                 duration_s: float) -> TrialResult:
        cpu = self.cpu
        if cpu is None:
            why = "no forwarding CPU named (sut.cpu is unset)"
            profile.busy_note = profile.sampler_note = profile.pmu_note = why
            profile.stacks_note = why
            trial = gen.trial(rate_pps, duration_s)
            profile.packets, profile.loss_ratio = trial.received, trial.loss_ratio
            profile.packets_source = "tester received"
            return trial
        no_perf = perf.has_perf(self.node, self.perf)
        profile.sampler_note = profile.stacks_note = no_perf
        profile.pmu_note = perf.pmu_reason(self.node) or no_perf
        pin = perf.other_cpus(self.node, cpu)
        data = posixpath.join(self.node.workdir(), f"perf-cpu{cpu}.data")
        jobs: dict[str, _Background] = {}
        if not no_perf:
            window = perf_window_s(duration_s)
            jobs["record"] = _Background(self.node, _pinned(perf.record_argv(
                self.perf, cpu, self.hz, data, window), pin), window + 60.0)
            if not profile.pmu_note:
                jobs["stat"] = _Background(self.node, _pinned(perf.stat_argv(
                    self.perf, cpu, window), pin), window + 60.0)
        hz = cpustat.clock_ticks(self.node)
        candidates = {t.pid: t for t in cpustat.threads_named(self.node, self.thread_prefix)} \
            if self.thread_prefix else {}
        pids = sorted(candidates)
        for job in jobs.values():
            job.start()
        if jobs:
            time.sleep(PERF_START_S)
        tx_before = self._tx_packets()
        before = cpustat.read(self.node, cpu)
        before_tasks = cpustat.task_ticks(self.node, pids)
        t0 = time.monotonic()
        try:
            trial = gen.trial(rate_pps, duration_s)
        finally:
            after_tasks = cpustat.task_ticks(self.node, pids)
            after = cpustat.read(self.node, cpu)
            profile.window_s = time.monotonic() - t0
            tx_after = self._tx_packets()
            outcomes = {name: job.outcome() for name, job in jobs.items()}
        profile.loss_ratio = trial.loss_ratio
        if tx_before is not None and tx_after is not None:
            # all the SUT forwarded in the window, also when the generator ran its
            # trial more than once (its count is the last attempt's)
            profile.packets = tx_after - tx_before
            profile.packets_source = f"SUT {self.out_port} tx_packets"
        else:
            profile.packets = trial.received
            profile.packets_source = "tester received"
        profile.busy_ns = round((after.busy_ticks() - before.busy_ticks()) * 1e9 / hz)
        profile.busy_note = (f"/proc/stat cpu{cpu} system+irq+softirq, {1000 / hz:g} ms "
                             f"ticks")
        ran = {pid: after_tasks[pid] - before_tasks[pid] for pid in after_tasks
               if pid in before_tasks and after_tasks[pid] > before_tasks[pid]}
        if ran:
            # threads of the same name on other testbeds stayed idle: only those that ran
            profile.threads = [candidates[pid].comm for pid in sorted(ran)]
            profile.thread_ns = round(sum(ran.values()) * 1e9 / hz)
            profile.busy_note += (f"; forwarding threads {', '.join(profile.threads)}: "
                                  f"/proc/PID/stat utime+stime")
            elsewhere = [candidates[p].comm for p in ran if candidates[p].cpu != cpu]
            if elsewhere:
                profile.busy_note += f" (not on cpu{cpu}: {', '.join(elsewhere)})"
        elif self.thread_prefix:
            profile.busy_note += (f"; no thread named {self.thread_prefix}* ran: time per "
                                  f"packet is the whole CPU's")
        if "stat" in outcomes:
            self._counts(profile, *outcomes["stat"])
        if "record" in outcomes:
            self._samples(profile, data, *outcomes["record"])
        return trial

    def _tx_packets(self) -> int | None:
        if self.out_port is None:
            return None
        res = self.node.run(["cat", f"/sys/class/net/{self.out_port}/statistics/tx_packets"],
                            timeout=10.0)
        try:
            return int(res.stdout.strip())
        except ValueError:
            return None

    @staticmethod
    def _counts(profile: Profile, res: CommandResult | None, why: str) -> None:
        if why or res is None:
            profile.pmu_note = f"perf stat failed: {why}"
            return
        counts = perf.parse_stat(res.stderr + "\n" + res.stdout)
        profile.cycles, profile.instructions = counts.get("cycles"), counts.get("instructions")
        if profile.cycles is None or profile.instructions is None:
            profile.pmu_note = "perf stat: cycles or instructions not supported on this CPU"

    def _samples(self, profile: Profile, data: str, res: CommandResult | None,
                 why: str) -> None:
        if why:
            profile.sampler_note = profile.stacks_note = f"perf record failed: {why}"
            return
        rep = self.node.run(stacks.script_argv(self.perf, data, profile.threads),
                            timeout=180.0)
        self.node.run(["rm", "-f", "--", data], timeout=30.0)
        if not rep.ok:
            err = (rep.stderr or rep.stdout).strip().splitlines()
            profile.sampler_note = (f"perf script failed: exit {rep.returncode}"
                                    + (f": {err[-1]}" if err else ""))
            profile.stacks_note = profile.sampler_note
            return
        self.last_script = rep.stdout
        sampled = stacks.parse_script(rep.stdout, profile.threads)
        profile.samples = len(sampled.samples)
        profile.functions = sampled.flat()[:self.top]
        if not sampled.samples:
            profile.sampler_note = profile.stacks_note = \
                f"no samples on CPU {self.cpu} (it stayed idle)"
        elif sampled.depth() < 2:
            profile.stacks_note = ("perf recorded no call chains (one frame per sample): "
                                   "no inclusive time")
        else:
            profile.stacks = sampled.inclusive()


__all__ = ["ProfileTrial", "PERF_START_S"]
