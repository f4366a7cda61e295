"""Progress of a run while it runs: a live view on a terminal, plain lines otherwise.

The orchestrator reports a few events (:class:`ProgressEvents`): run started,
search started, trial done, search done, message, run done.  Two views:

* :class:`RichProgress`: a live panel (rich) with the run, behavior,
  repetition, current rate, bounds, trial count and time left, messages
  scrolling above it;
* :class:`PlainProgress`: one line per event, for CI logs and pipes.

:func:`make_progress` picks one by ``isatty``.  A view is also a
``Callable[[str], None]`` (a call is a message), so it can be passed wherever a
plain progress callback is expected.  Rates are pps in the events and kpps on
screen; loss ratios are in [0, 1] in the events and % on screen.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Callable, Sequence

from srperf.results.names import goal_name
from srperf.traffic.imix import size_label
from srperf.util.wording import count

log = logging.getLogger(__name__)


def unlabelled(line: str) -> str:
    """A progress line as a testbed with nothing to say about its SUT labels it."""
    return line


class ProgressEvents:
    """The event interface; every method does nothing here (the null view)."""

    label: Callable[[str], str] = staticmethod(unlabelled)
    """How the testbed measured now labels each line a view prints of its trials (an
    emulated SUT: ``[EMULATED tcg] ...``, :meth:`srperf.testbeds.base.Testbed.label_line`);
    the orchestrator sets it before each search."""

    def run_started(self, run_id: str, experiment: str, testbed: str, forwarder: str,
                    total_searches: int, unit: str = "search") -> None:
        """A run began; it plans ``total_searches`` searches (behaviors x sizes x reps),
        or, ``unit`` ``sample``, the samples of a stateful run (each counted done by
        :meth:`search_done`)."""

    def search_started(self, behavior: str, packet_size: int, repetition: int,
                       search_seq: int, thresholds_pct: Sequence[float] = ()) -> None:
        """A search began; thresholds in % (0 = NDR)."""

    def replanned(self, total: int) -> None:
        """The run now plans ``total`` (a stateful run's configuration left the rounds)."""

    def searches_kept(self, n: int) -> None:
        """A resumed run keeps ``n`` searches that ended before it was stopped: they are
        not run again, and count as done in the time left."""

    def trial_done(self, rate_pps: float, duration_s: float, loss_ratio: float,
                   lower_pps: float | None = None, upper_pps: float | None = None,
                   usable: bool = True) -> None:
        """A trial ended: intended rate (pps), duration (s), loss ratio (0-1) and, when
        the caller knows them, the search's current bounds (pps)."""

    def search_done(self, text: str = "") -> None:
        """The current search ended (``text``: its result line, if any)."""

    def message(self, text: str) -> None:
        """Anything else worth a line."""

    def run_done(self, status: str) -> None:
        """The run ended with ``status`` (finished, failed)."""

    def close(self) -> None:
        """Release the terminal (live views)."""

    def __call__(self, text: str) -> None:
        self.message(text)


@dataclass
class ProgressState:
    """What the views show, updated by the events (rates pps, times s)."""

    run_id: str = ""
    title: str = ""
    unit: str = "search"
    """What the run counts: ``search`` or ``sample`` (a stateful run)."""
    total_searches: int = 0
    searches_done: int = 0
    searches_kept: int = 0
    """Searches a resumed run kept from before (not run by this process)."""
    search_seq: int = 0
    """The current search's number in the run's plan (0: not known); a resumed run's
    searches keep their numbers."""
    behavior: str = ""
    packet_size: int = 0
    repetition: int = 0
    thresholds_pct: tuple[float, ...] = ()
    trials: int = 0
    rate_pps: float | None = None
    loss_ratio: float | None = None
    lower_pps: float | None = None
    upper_pps: float | None = None
    bounds_seen: bool = False
    seen: dict[float, tuple[float | None, float | None]] = field(default_factory=dict)
    """Per goal (threshold %), from the trials so far: (highest rate that passed it,
    lowest rate that failed it).  Two numbers, never an interval: with noisy trials
    the first can be above the second."""
    run_start: float = field(default_factory=time.monotonic)
    search_start: float = field(default_factory=time.monotonic)
    last_done_at: float | None = None
    """When the last search ended (monotonic s)."""

    def on_trial(self, rate_pps: float, loss_ratio: float, lower_pps: float | None,
                 upper_pps: float | None, usable: bool) -> None:
        self.trials += 1
        self.rate_pps, self.loss_ratio = rate_pps, loss_ratio
        if lower_pps is not None or upper_pps is not None:
            self.lower_pps, self.upper_pps, self.bounds_seen = lower_pps, upper_pps, False
            return
        if not usable or not self.thresholds_pct:
            return
        # Per goal: the highest rate that passed it and the lowest that failed it (an
        # indication; the search decides its own bounds).
        self.bounds_seen = True
        for t in self.thresholds_pct:
            passed, failed = self.seen.get(t, (None, None))
            if 100.0 * loss_ratio <= t:
                passed = rate_pps if passed is None else max(passed, rate_pps)
            else:
                failed = rate_pps if failed is None else min(failed, rate_pps)
            self.seen[t] = (passed, failed)

    def time_left_s(self, now: float | None = None) -> float | None:
        """Seconds left, from the mean duration of the searches done so far."""
        if not self.searches_done or not self.total_searches:
            return None
        now = time.monotonic() if now is None else now
        done_at = self.last_done_at if self.last_done_at is not None else now
        per = (done_at - self.run_start) / self.searches_done
        left = max(self.total_searches - self.searches_kept - self.searches_done, 0)
        return max(per * left - (now - done_at if left else 0.0), 0.0)


def _kpps(v: float | None) -> str:
    return "?" if v is None else f"{v / 1000:.1f}"


def _duration(s: float | None) -> str:
    if s is None:
        return "?"
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _time_left(st: ProgressState) -> str:
    left = st.time_left_s()
    return "not known yet" if left is None else f"about {_duration(left)}"


def _search_now(st: ProgressState) -> str:
    """``1/7 ipv6 64B rep 1``, or, before the first search, how many are planned."""
    if not st.behavior:
        return f"none started yet ({count(st.total_searches, st.unit)} planned)"
    number = st.search_seq or st.searches_kept + st.searches_done + 1
    return (f"{min(number, max(st.total_searches, 1))}/{st.total_searches} "
            f"{st.behavior} {_size(st.packet_size)} rep {st.repetition}")


def _size(packet_size: int) -> str:
    label = size_label(packet_size)
    return f"{label}B" if label.isdigit() else label


def run_ended(st: ProgressState, status: str) -> str:
    """``run ID finished: 1 search in 0m02s``."""
    return (f"run {st.run_id} {status}: {count(st.searches_done, st.unit)} in "
            f"{_duration(time.monotonic() - st.run_start)}")


def describe_seen(st: ProgressState) -> str:
    """The trials so far per goal: ``NDR: highest pass 511.7, lowest fail 501.5;
    PDR@0.5%: highest pass 511.7, lowest fail - (kpps)``; a goal whose highest pass
    is above its lowest fail says the trials disagree (noise), so that the two numbers
    never read as an empty interval."""
    parts = []
    for t in st.thresholds_pct:
        passed, failed = st.seen.get(t, (None, None))
        text = (f"{goal_name(t)}: highest pass {_kpps(passed).replace('?', '-')}, "
                f"lowest fail {_kpps(failed).replace('?', '-')}")
        if passed is not None and failed is not None and passed > failed:
            text += " (trials disagree: a pass above a fail)"
        parts.append(text)
    return "; ".join(parts) + " (kpps)"


def describe_bounds(st: ProgressState) -> str:
    """The search's own bounds ``[lo, hi] kpps``, else what the trials so far show per
    goal (:func:`describe_seen`)."""
    if st.bounds_seen:
        return f"seen {describe_seen(st)}"
    return f"bounds [{_kpps(st.lower_pps)}, {_kpps(st.upper_pps)}] kpps"


def describe_state(st: ProgressState) -> str:
    """One line: search i/n, behavior, rep, trial count, rate, loss, bounds, time left."""
    where = f"search {_search_now(st)}"
    rate = "" if st.rate_pps is None else (
        f": trial {st.trials} at {_kpps(st.rate_pps)} kpps, loss "
        f"{100 * (st.loss_ratio or 0):.3f} %")
    return f"{where}{rate}, {describe_bounds(st)}, time left {_time_left(st)}"


class _Base(ProgressEvents):
    def __init__(self) -> None:
        self.state = ProgressState()
        self._lock = threading.Lock()

    def run_started(self, run_id: str, experiment: str, testbed: str, forwarder: str,
                    total_searches: int, unit: str = "search") -> None:
        self.state = ProgressState(run_id=run_id, total_searches=total_searches, unit=unit,
                                   title=f"{experiment} on {testbed} ({forwarder})")

    def search_started(self, behavior: str, packet_size: int, repetition: int,
                       search_seq: int, thresholds_pct: Sequence[float] = ()) -> None:
        st = self.state
        st.behavior, st.packet_size, st.repetition = behavior, packet_size, repetition
        st.search_seq = search_seq
        st.thresholds_pct = tuple(thresholds_pct)
        st.trials, st.rate_pps, st.loss_ratio = 0, None, None
        st.lower_pps = st.upper_pps = None
        st.bounds_seen, st.seen = False, {}
        st.search_start = time.monotonic()

    def searches_kept(self, n: int) -> None:
        self.state.searches_kept = n

    def replanned(self, total: int) -> None:
        self.state.total_searches = total

    def trial_done(self, rate_pps: float, duration_s: float, loss_ratio: float,
                   lower_pps: float | None = None, upper_pps: float | None = None,
                   usable: bool = True) -> None:
        self.state.on_trial(rate_pps, loss_ratio, lower_pps, upper_pps, usable)

    def search_done(self, text: str = "") -> None:
        self.state.searches_done += 1
        self.state.last_done_at = time.monotonic()


class PlainProgress(_Base):
    """One line per event on ``stream`` (CI logs, pipes)."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        super().__init__()
        self.stream = stream or sys.stdout

    def _line(self, text: str) -> None:
        with self._lock:
            self.stream.write(text + "\n")
            self.stream.flush()

    def run_started(self, *args: object, **kw: object) -> None:
        super().run_started(*args, **kw)  # type: ignore[arg-type]
        self._line(f"run {self.state.run_id}: "
                   f"{count(self.state.total_searches, self.state.unit)} planned")

    def trial_done(self, rate_pps: float, duration_s: float, loss_ratio: float,
                   lower_pps: float | None = None, upper_pps: float | None = None,
                   usable: bool = True) -> None:
        super().trial_done(rate_pps, duration_s, loss_ratio, lower_pps, upper_pps, usable)
        flag = "" if usable else " (generator-limited)"
        self._line("  " + self.label(f"{describe_state(self.state)} "
                                     f"[{duration_s:g} s trial{flag}]"))

    def search_done(self, text: str = "") -> None:
        super().search_done(text)

    def message(self, text: str) -> None:
        self._line(text)

    def run_done(self, status: str) -> None:
        self._line(run_ended(self.state, status))


class RichProgress(_Base):
    """A live panel at the bottom of the terminal; messages scroll above it."""

    def __init__(self, console: object | None = None) -> None:
        super().__init__()
        from rich.console import Console
        from rich.live import Live

        self.console = console or Console()
        self.live = Live(self._render(), console=self.console,  # type: ignore[arg-type]
                         refresh_per_second=4, transient=True, get_renderable=self._render)
        self._started = False

    def _render(self) -> object:
        from rich.panel import Panel
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        st = self.state
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold")
        t.add_column()
        t.add_row("run", self.label(f"{st.run_id} {st.title}") if st.run_id else "starting")
        t.add_row("search", _search_now(st))
        t.add_row("rate", "-" if st.rate_pps is None else self.label(
                  f"{_kpps(st.rate_pps)} kpps, loss {100 * (st.loss_ratio or 0):.3f} %"))
        if st.bounds_seen:
            t.add_row("seen", describe_seen(st))
        else:
            t.add_row("bounds", f"[{_kpps(st.lower_pps)}, {_kpps(st.upper_pps)}] kpps")
        t.add_row("trials", str(st.trials))
        t.add_row("time left", _time_left(st))
        bar = ProgressBar(total=max(st.total_searches, 1), completed=st.searches_done,
                          width=40)
        t.add_row("", bar)
        return Panel(t, title="srperf", expand=False)

    def _ensure(self) -> None:
        if not self._started:
            self.live.start()
            self._started = True

    def run_started(self, *args: object, **kw: object) -> None:
        super().run_started(*args, **kw)  # type: ignore[arg-type]
        self._ensure()

    def trial_done(self, *args: object, **kw: object) -> None:
        super().trial_done(*args, **kw)  # type: ignore[arg-type]
        self._ensure()
        self.live.refresh()

    def message(self, text: str) -> None:
        self.console.print(text, highlight=False, markup=False)  # type: ignore[attr-defined]

    def run_done(self, status: str) -> None:
        self.message(run_ended(self.state, status))
        self.close()

    def close(self) -> None:
        if self._started:
            self.live.stop()
            self._started = False


def make_progress(stream: IO[str] | None = None) -> ProgressEvents:
    """A live view when ``stream`` (default stdout) is a terminal, plain lines otherwise."""
    stream = stream or sys.stdout
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if tty:
        from rich.console import Console

        return RichProgress(Console(file=stream))
    return PlainProgress(stream)
