"""The HTML trend report: one chart per test, testbeds side by side, regressions first.

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
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from srperf import __version__
from srperf.results.svgplot import Axis, SvgPlot
from srperf.results.trend import NORMAL, PROGRESSION, REGRESSION, TestTrend, sort_trends

if TYPE_CHECKING:
    import jinja2

log = logging.getLogger(__name__)

COLORS = {REGRESSION: "#c0392b", PROGRESSION: "#27ae60", NORMAL: "#555"}


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


def chart(t: TestTrend, origin: dt.datetime, width: int = 420, height: int = 200) -> str:
    """One test's chart on one testbed (x: days since ``origin``)."""
    days = [(_day(s.date) - origin).total_seconds() / 86400.0 for s in t.samples]
    pts = [i for i, s in enumerate(t.samples) if not s.is_gap]
    ys = [t.samples[i].mean for i in pts]
    lo = min(ys + [g.avg for g in t.groups]) if ys else 0.0
    hi = max(ys + [g.avg for g in t.groups]) if ys else 1.0
    # at least 1 % of the values' size, so that equal nights do not get a hair-thin axis
    pad = max((hi - lo) * 0.15, abs(hi) * 0.01) or 1.0
    x_lo, x_hi = (min(days), max(days)) if days else (0.0, 1.0)
    plot = SvgPlot(Axis(x_lo - 0.5, x_hi + 0.5, label=f"days since {origin.date()}"),
                   Axis(lo - pad, hi + pad, label=t.key.unit),
                   title=f"{t.key.testbed}: {t.cls}", width=width, height=height)
    for i, s in enumerate(t.samples):
        if s.is_gap:
            plot.vline(days[i], "#bbb", "gap (no figure)", dash="2,2")
    plot.points([days[i] for i in pts], ys, "#2c7fb8", "night (mean of repetitions)",
                tips=[_tip(t, i) for i in pts])
    xs, steps = [], []
    for k, g in enumerate(t.groups):
        x0 = days[pts[g.first]]
        x1 = days[pts[t.groups[k + 1].first]] if k + 1 < len(t.groups) else days[pts[g.last]]
        xs += [x0, x1]
        steps += [g.avg, g.avg]
    plot.line(xs, steps, "#e67e22", "group average (jumpavg)")
    for cls, shape_label in ((REGRESSION, "regression"), (PROGRESSION, "progression")):
        marks = [g for g in t.groups if g.cls == cls]
        if marks:
            plot.points([days[pts[g.first]] for g in marks], [g.avg for g in marks],
                        COLORS[cls], shape_label, shape="triangle",
                        tips=[f"{cls} from run {t.samples[pts[g.first]].run_id} "
                              f"({t.samples[pts[g.first]].date[:10]}): {g.change_pct:+.1f} %"
                              for g in marks])
    return plot.render()


@dataclass
class TestRow:
    """One test (forwarder x test name) with its chart per testbed."""

    __test__ = False  # not a pytest class
    name: str
    cls: str
    trends: list[TestTrend] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)

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
        row = rows.setdefault(name, TestRow(name, t.cls))
        row.trends.append(t)
        row.charts.append(chart(t, origin))
    return list(rows.values())


def _env() -> "jinja2.Environment":
    """The report's template folder and number filter (without importing the run
    report, which loads matplotlib)."""
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
    return _env().get_template("trend.html.j2").render(
        title=title, rows=rows, version=__version__,
        generated=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        nan=math.nan, counts={c: sum(1 for r in rows for t in r.trends if t.cls == c)
                              for c in (REGRESSION, PROGRESSION, NORMAL)})


def write_trend_report(items: list[TestTrend], path: Path, title: str = "srperf trend") -> Path:
    """Write the trend page to ``path`` (through :mod:`srperf.safe_paths`, never
    through a planted name); returns it."""
    from srperf import safe_paths

    safe_paths.write_file(path, render(items, title), what="--html")
    log.info("trend report written to %s", path)
    return path


__all__ = ["chart", "collect", "render", "write_trend_report"]
