"""The HTML trend report: one chart per test, testbeds side by side, regressions first.

Several testbeds of one test (the same forwarder and test name) share one row: an
overlay chart of all of them (one color each), then one chart per testbed, every
chart of the row on the same x and y axes; a table puts each testbed's current
average beside the others' (and relative to the first testbed).

Template ``reports/trend.html.j2``; charts are inline SVG
(:mod:`srperf.results.svgplot`, the report's per-search plot stack: a page of
100 nights x 20 tests stays small and builds in well under a second).  Each chart
shows a test's samples (mean of the night's repetitions; hover: run id, date,
figures, kernel, forwarder version, commit), each jumpavg group's average as a
step line, the first sample of a regression (red triangle) or progression
(green triangle) group, and gaps (nights without a figure) as grey dashed lines.
The index table lists every test, regressions first, newest change first.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from srperf import __version__
from srperf.results.svgplot import Axis, SvgPlot
from srperf.results.trend import (NORMAL, NOT_MEASURED, PROGRESSION, REGRESSION, TestTrend,
                                  sort_trends)

if TYPE_CHECKING:
    import jinja2

log = logging.getLogger(__name__)

COLORS = {REGRESSION: "#c0392b", PROGRESSION: "#27ae60", NORMAL: "#555", NOT_MEASURED: "#999"}


def _day(date: str) -> dt.datetime:
    try:
        d = dt.datetime.fromisoformat(str(date))
    except ValueError:
        return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return d if d.tzinfo else d.replace(tzinfo=dt.timezone.utc)


def _tip(t: TestTrend, s_index: int) -> str:
    s = t.samples[s_index]
    vals = ", ".join(f"{v:.4g}" for v in s.values) if s.values else f"gap: {s.gap}"
    return (f"run {s.run_id}\n{s.date[:19]}\n{t.key.test}: {vals} {t.key.unit}\n"
            f"kernel {s.kernel or '?'}\nforwarder {t.key.forwarder} {s.forwarder_version}"
            f"\ncommit {s.commit or '?'}")


def _days(t: TestTrend, origin: dt.datetime) -> list[float]:
    return [(_day(s.date) - origin).total_seconds() / 86400.0 for s in t.samples]


def time_axis(trends: list[TestTrend], origin: dt.datetime, lo: float, hi: float) -> Axis:
    """The x axis of a chart of ``trends``: days since ``origin``; when they all are a
    single run's (one date), no day numbers (a dot on an axis of 0.6-1.4 days said
    nothing) but that run's date."""
    stamps = {s.date for t in trends for s in t.samples}
    if len(stamps) == 1:
        (date,) = stamps
        return Axis(lo, hi, label=f"one run, {str(date)[:16].replace('T', ' ')}",
                    show_ticks=False)
    return Axis(lo, hi, label=f"days since {origin.date()}")


def ranges(trends: list[TestTrend], origin: dt.datetime
           ) -> tuple[tuple[float, float], tuple[float, float]]:
    """The x (days since ``origin``) and y (the unit) ranges that show every sample and
    group average of ``trends``: one test's testbeds drawn on the same axes, so that
    their levels and steps compare at a glance."""
    days = [d for t in trends for d in _days(t, origin)]
    ys = [s.mean for t in trends for s in t.points] + [g.avg for t in trends for g in t.groups]
    lo, hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
    # at least 1 % of the values' size, so that equal nights do not get a hair-thin axis
    pad = max((hi - lo) * 0.15, abs(hi) * 0.01) or 1.0
    x_lo, x_hi = (min(days), max(days)) if days else (0.0, 1.0)
    return (x_lo - 0.5, x_hi + 0.5), (lo - pad, hi + pad)


def _steps(t: TestTrend, days: list[float], pts: list[int]
           ) -> tuple[list[float], list[float]]:
    """The step line of ``t``'s group averages: each group from its first sample to
    the next group's first (the last group to its last sample)."""
    xs: list[float] = []
    steps: list[float] = []
    for k, g in enumerate(t.groups):
        x1 = days[pts[t.groups[k + 1].first]] if k + 1 < len(t.groups) else days[pts[g.last]]
        xs += [days[pts[g.first]], x1]
        steps += [g.avg, g.avg]
    return xs, steps


def chart(t: TestTrend, origin: dt.datetime, width: int = 420, height: int = 200,
          axes: tuple[tuple[float, float], tuple[float, float]] | None = None) -> str:
    """One test's chart on one testbed (x: days since ``origin``; ``axes``: the x and y
    ranges, by default :func:`ranges` of this testbed alone)."""
    days = _days(t, origin)
    pts = [i for i, s in enumerate(t.samples) if not s.is_gap]
    ys = [t.samples[i].mean for i in pts]
    (x_lo, x_hi), (y_lo, y_hi) = axes or ranges([t], origin)
    plot = SvgPlot(time_axis([t], origin, x_lo, x_hi),
                   Axis(y_lo, y_hi, label=t.key.unit),
                   title=f"{t.key.testbed}: {t.cls}", width=width, height=height)
    for i, s in enumerate(t.samples):
        if s.is_gap:
            plot.vline(days[i], "#bbb", "gap (no figure)", dash="2,2")
    plot.points([days[i] for i in pts], ys, "#2c7fb8", "night (mean of repetitions)",
                tips=[_tip(t, i) for i in pts])
    plot.line(*_steps(t, days, pts), "#e67e22", "group average (jumpavg)")
    for cls, shape_label in ((REGRESSION, "regression"), (PROGRESSION, "progression")):
        marks = [g for g in t.groups if g.cls == cls]
        if marks:
            plot.points([days[pts[g.first]] for g in marks], [g.avg for g in marks],
                        COLORS[cls], shape_label, shape="triangle",
                        tips=[f"{cls} from run {t.samples[pts[g.first]].run_id} "
                              f"({t.samples[pts[g.first]].date[:10]}): {g.change_pct:+.1f} %"
                              for g in marks])
    return plot.render()


TESTBED_COLORS = ("#2c7fb8", "#d95f02", "#7570b3", "#1b9e77", "#e7298a", "#66a61e",
                  "#a6761d", "#666666")
"""One color per testbed in the overlay chart (cycled beyond eight)."""


def overlay(trends: list[TestTrend], origin: dt.datetime, width: int = 420,
            height: int = 200,
            axes: tuple[tuple[float, float], tuple[float, float]] | None = None) -> str:
    """One test's testbeds on one chart: each testbed's nightly means and its groups'
    averages (step line) in the testbed's own color, its regressions and progressions
    marked; hover as in :func:`chart`."""
    (x_lo, x_hi), (y_lo, y_hi) = axes or ranges(trends, origin)
    unit = trends[0].key.unit if trends else ""
    plot = SvgPlot(time_axis(trends, origin, x_lo, x_hi),
                   Axis(y_lo, y_hi, label=unit), title="testbeds side by side",
                   width=width, height=height)
    for k, t in enumerate(trends):
        color = TESTBED_COLORS[k % len(TESTBED_COLORS)]
        days = _days(t, origin)
        pts = [i for i, s in enumerate(t.samples) if not s.is_gap]
        plot.points([days[i] for i in pts], [t.samples[i].mean for i in pts], color,
                    t.key.testbed, tips=[f"{t.key.testbed}\n{_tip(t, i)}" for i in pts])
        plot.line(*_steps(t, days, pts), color)
        marks = [g for g in t.groups if g.cls != NORMAL]
        if marks:
            plot.points([days[pts[g.first]] for g in marks], [g.avg for g in marks], color,
                        shape="triangle",
                        tips=[f"{t.key.testbed}: {g.cls} from run "
                              f"{t.samples[pts[g.first]].run_id}: {g.change_pct:+.1f} %"
                              for g in marks])
    return plot.render()


@dataclass(frozen=True)
class Cell:
    """One testbed's current figure of a test in the side-by-side table: its current
    group's average and stdev, class, and the average relative to the row's first
    testbed (%; None for the first)."""

    testbed: str
    avg: float
    stdev: float
    cls: str
    vs_first_pct: float | None


@dataclass
class TestRow:
    """One test (forwarder x test name) with its chart per testbed."""

    __test__ = False  # not a pytest class
    name: str
    cls: str
    trends: list[TestTrend] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)
    """The overlay of every testbed (when there are several), then one chart per
    testbed, all on the same axes."""

    def cells(self, testbeds: list[str]) -> list[Cell | None]:
        """This test's current figure on each of ``testbeds`` (None where it has no
        history there), for the side-by-side table."""
        by_tb = {t.key.testbed: t for t in self.trends}
        first: float | None = None
        out: list[Cell | None] = []
        for tb in testbeds:
            t = by_tb.get(tb)
            if t is None or t.current is None:
                out.append(None)
                continue
            avg = t.current.avg
            rel = None if first is None or first == 0 else 100.0 * (avg - first) / abs(first)
            if first is None:
                first = avg
            out.append(Cell(tb, avg, t.current.stdev, t.cls, rel))
        return out

    @property
    def anchor(self) -> str:
        return "t-" + "".join(c if c.isalnum() else "-" for c in self.name)


def collect(items: list[TestTrend]) -> list[TestRow]:
    """Tests grouped by forwarder and name (each testbed its own history, side by
    side), ordered as :func:`sort_trends` orders their worst testbed."""
    dates = [_day(s.date) for t in items for s in t.samples]
    origin = min(dates).replace(hour=0, minute=0, second=0, microsecond=0) if dates \
        else dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    rows: dict[str, TestRow] = {}
    for t in sort_trends(items):
        name = f"{t.key.forwarder} {t.key.test}"
        rows.setdefault(name, TestRow(name, t.cls)).trends.append(t)
    for row in rows.values():
        axes = ranges(row.trends, origin)
        if len(row.trends) > 1:
            row.charts.append(overlay(sorted(row.trends, key=lambda t: t.key.testbed),
                                      origin, axes=axes))
        row.charts += [chart(t, origin, axes=axes) for t in row.trends]
    return list(rows.values())


def testbeds(items: list[TestTrend]) -> list[str]:
    """The testbeds of ``items``, sorted: the columns of the side-by-side table."""
    return sorted({t.key.testbed for t in items})


@functools.lru_cache(maxsize=1)
def _env() -> "jinja2.Environment":
    """The report's template folder and number filter (without importing the run
    report, which loads matplotlib); one per process, keeping the template compiled."""
    from importlib import resources

    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resources.files("srperf.data.reports"))),
        autoescape=jinja2.select_autoescape(["html", "j2"], default_for_string=False),
        trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters["num"] = lambda v, digits=1: "-" if v is None or math.isnan(float(v)) \
        else f"{float(v):.{digits}f}"
    return env


def render(items: list[TestTrend], title: str) -> str:
    rows = collect(items)
    beds = testbeds(items)
    from srperf.results.trend_power import visibility

    return _env().get_template("trend.html.j2").render(
        title=title, rows=rows, version=__version__, testbeds=beds,
        steps={t.key: visibility(t) for t in items},
        side_by_side=[r for r in rows if len(r.trends) > 1] if len(beds) > 1 else [],
        generated=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        nan=math.nan, counts={c.replace(" ", "_"): sum(1 for r in rows for t in r.trends
                                                       if t.cls == c)
                              for c in (REGRESSION, PROGRESSION, NORMAL, NOT_MEASURED)})


def write_trend_report(items: list[TestTrend], path: Path, title: str = "srperf trend") -> Path:
    """Write the trend page to ``path`` (through :mod:`srperf.safety.safe_paths`, never
    through a planted name); returns it."""
    from srperf.safety import safe_paths

    safe_paths.write_file(path, render(items, title), what="--html")
    log.info("trend report written to %s", path)
    return path


__all__ = ["Cell", "TestRow", "chart", "collect", "overlay", "ranges", "render",
           "testbeds", "time_axis", "write_trend_report"]
