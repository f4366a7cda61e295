"""A tiny inline-SVG chart for the many small per-search plots of a report.

matplotlib draws the report's overview figures; a report of 10 runs x 20
behaviors x 10 repetitions also has 2000 searches, each with two small plots,
and matplotlib needs tens of milliseconds per figure where this needs well
under one.  Linear or log-10 axes, points, lines, vertical markers, bands and
a second y axis on the right: nothing more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

Range = tuple[float, float]


LEGEND_ROW = 11
"""Height of one legend row under the plot, px."""


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    # Ticks by index, not by adding ``step``: a range narrow beside its magnitude
    # (1e6 .. 1e6 + 1e-9) has a step below the values' float precision, where
    # ``v += step`` never moves and a loop would grow without end.
    n = math.floor((hi - first) / step + 1e-9) + 1
    if not 0 < n <= 10 * max(count, 1) or first + step == first:
        return [lo, hi]
    return [round(first + i * step, 10) for i in range(n)]


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:.0f}"
    if abs(v) < 0.01:
        return f"{v:.3g}"
    return f"{v:g}"


@dataclass
class Axis:
    lo: float
    hi: float
    log: bool = False
    label: str = ""
    show_ticks: bool = True
    """False: no tick labels (an axis whose numbers would mean nothing, e.g. the time
    axis of a chart with a single run: its label says the date instead)."""

    def __post_init__(self) -> None:
        if self.log:
            self.lo, self.hi = max(self.lo, 1e-12), max(self.hi, self.lo * 10)
        if not self.hi > self.lo:
            self.hi = self.lo + (abs(self.lo) or 1.0)

    def frac(self, v: float) -> float:
        if self.log:
            v = max(v, self.lo)
            return (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi)
                                                             - math.log10(self.lo))
        return (v - self.lo) / (self.hi - self.lo)

    def ticks(self) -> list[float]:
        if self.log:
            a, b = math.ceil(math.log10(self.lo) - 1e-9), math.floor(math.log10(self.hi) + 1e-9)
            return [10.0 ** k for k in range(a, b + 1)]
        return nice_ticks(self.lo, self.hi)


@dataclass
class SvgPlot:
    """One small chart; call the drawing methods, then :meth:`render`."""

    x: Axis
    y: Axis
    title: str = ""
    y2: Axis | None = None
    width: int = 330
    height: int = 210
    margin: tuple[int, int, int, int] = (22, 50, 34, 50)  # top, right, bottom, left
    _items: list[str] = field(default_factory=list)
    _legend: list[tuple[str, str, str]] = field(default_factory=list)

    def _px(self, x: float) -> float:
        t, r, b, left = self.margin
        return left + self.x.frac(x) * (self.width - left - r)

    def _py(self, y: float, axis: Axis | None = None) -> float:
        t, r, b, left = self.margin
        f = (axis or self.y).frac(y)
        f = min(max(f, -0.02), 1.02)
        return self.height - b - f * (self.height - t - b)

    def _legend_add(self, label: str | None, color: str, shape: str) -> None:
        if label and (label, color, shape) not in self._legend:
            self._legend.append((label, color, shape))

    def points(self, xs: list[float], ys: list[float], color: str, label: str | None = None,
               shape: str = "circle", hollow: bool = False, right: bool = False,
               tips: list[str] | None = None) -> None:
        axis = self.y2 if right and self.y2 else self.y
        fill = "none" if hollow else color
        for i, (x, y) in enumerate(zip(xs, ys)):
            if not (math.isfinite(x) and math.isfinite(y)):
                continue
            px, py = self._px(x), self._py(y, axis)
            tip = f"<title>{escape(tips[i])}</title>" if tips else ""
            if shape == "triangle":
                self._items.append(
                    f'<path d="M{px:.1f},{py - 4:.1f}L{px + 3.6:.1f},{py + 2.6:.1f}'
                    f'L{px - 3.6:.1f},{py + 2.6:.1f}Z" fill="{fill}" stroke="{color}">{tip}'
                    f'</path>')
            else:
                self._items.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{fill}" '
                                   f'stroke="{color}">{tip}</circle>')
        self._legend_add(label, color, shape)

    def line(self, xs: list[float], ys: list[float], color: str, label: str | None = None,
             dash: str = "", right: bool = False) -> None:
        axis = self.y2 if right and self.y2 else self.y
        pts = " ".join(f"{self._px(x):.1f},{self._py(y, axis):.1f}" for x, y in zip(xs, ys)
                       if math.isfinite(x) and math.isfinite(y))
        if pts:
            d = f' stroke-dasharray="{dash}"' if dash else ""
            self._items.append(f'<polyline points="{pts}" fill="none" stroke="{color}" '
                               f'stroke-width="1.2"{d}/>')
            self._legend_add(label, color, "line")

    def vline(self, x: float, color: str, label: str | None = None, dash: str = "") -> None:
        if x is None or not math.isfinite(x):
            return
        t, r, b, left = self.margin
        px = f"{self._px(x):.1f}"
        self._line(px, px, str(t), str(self.height - b), color, "1.3", dash, label)

    def hline(self, y: float, color: str, label: str | None = None, dash: str = "") -> None:
        t, r, b, left = self.margin
        py = f"{self._py(y):.1f}"
        self._line(str(left), str(self.width - r), py, py, color, "1", dash, label)

    def _line(self, x1: str, x2: str, y1: str, y2: str, color: str, width: str, dash: str,
              label: str | None) -> None:
        """One straight line (coordinates already formatted) and its legend entry."""
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self._items.append(f'<line x1="{x1}" x2="{x2}" y1="{y1}" y2="{y2}" '
                           f'stroke="{color}" stroke-width="{width}"{d}/>')
        self._legend_add(label, color, "line")

    def band(self, x0: float | None, x1: float | None, color: str,
             label: str | None = None) -> None:
        """A shaded vertical band from x0 to x1 (an open end runs to the axis edge)."""
        t, r, b, left = self.margin
        a = self._px(x0) if x0 is not None and math.isfinite(x0) else left
        z = self._px(x1) if x1 is not None and math.isfinite(x1) else self.width - r
        a, z = max(a, left), min(z, self.width - r)
        if z > a:
            self._items.append(f'<rect x="{a:.1f}" y="{t}" width="{z - a:.1f}" '
                               f'height="{self.height - t - b}" fill="{color}" '
                               f'fill-opacity="0.18"/>')
            self._legend_add(label, color, "band")

    def render(self) -> str:
        t, r, b, left = self.margin
        w, h = self.width, self.height
        # the legend goes below the x axis's label, never over the axes or the data
        total = h + (LEGEND_ROW * len(self._legend) + 4 if self._legend else 0)
        out = [f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="{w}" '
               f'height="{total}" viewBox="0 0 {w} {total}" font-family="sans-serif" '
               'font-size="9">',
               f'<rect x="{left}" y="{t}" width="{w - left - r}" height="{h - t - b}" '
               f'fill="#fff" stroke="#999"/>']
        for v in self.x.ticks() if self.x.show_ticks else []:
            px = self._px(v)
            out.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{h - b}" y2="{h - b + 3}" '
                       f'stroke="#666"/><text x="{px:.1f}" y="{h - b + 12}" '
                       f'text-anchor="middle">{_fmt(v)}</text>')
        for axis, right in ((self.y, False), (self.y2, True)):
            if axis is None:
                continue
            for v in axis.ticks():
                py = self._py(v, axis)
                if right:
                    out.append(f'<text x="{w - r + 4}" y="{py + 3:.1f}">{_fmt(v)}</text>')
                else:
                    out.append(f'<line x1="{left}" x2="{w - r}" y1="{py:.1f}" y2="{py:.1f}" '
                               f'stroke="#eee"/><text x="{left - 4}" y="{py + 3:.1f}" '
                               f'text-anchor="end">{_fmt(v)}</text>')
        out.extend(self._items)
        out.append(f'<text x="{(left + w - r) / 2:.0f}" y="{h - 4}" text-anchor="middle">'
                   f'{escape(self.x.label)}</text>')
        out.append(f'<text transform="translate(11,{(t + h - b) / 2:.0f}) rotate(-90)" '
                   f'text-anchor="middle">{escape(self.y.label)}</text>')
        if self.y2 is not None:
            out.append(f'<text transform="translate({w - 6},{(t + h - b) / 2:.0f}) rotate(90)" '
                       f'text-anchor="middle">{escape(self.y2.label)}</text>')
        out.append(f'<text x="{left}" y="{t - 8}" font-size="10" font-weight="bold">'
                   f'{escape(self.title)}</text>')
        lx, ly = left, h + LEGEND_ROW
        for label, color, shape in self._legend:
            mark = (f'<circle cx="{lx + 4}" cy="{ly - 3}" r="3" fill="{color}"/>'
                    if shape in ("circle", "triangle") else
                    f'<rect x="{lx}" y="{ly - 6}" width="9" height="6" fill="{color}" '
                    f'fill-opacity="{0.3 if shape == "band" else 1}"/>')
            out.append(f'{mark}<text x="{lx + 12}" y="{ly}">{escape(label)}</text>')
            ly += LEGEND_ROW
        out.append("</svg>")
        return "".join(out)
