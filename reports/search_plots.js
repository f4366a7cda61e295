/* srperf report: the two plots of each search, drawn in the browser from the report's
   embedded trial data (srperf.results.plots.search_plot_data) when its group is opened,
   so a report of thousands of searches stays small and quick to build.
   Left: the SRPerf paper's Figure 4 (received rate and delivery ratio against offered
   rate); right: every trial's loss against its rate (log scale) with the threshold, the
   bounds and the crossing estimate with its 95 % interval.  Rates in kpps. */
(function () {
  "use strict";
  var COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"];
  var THRESHOLD = "#d62728", UPPER = "#8c564b", LOWER = "#2ca02c", LIMITED = "#888";
  var FLOOR = 0.001;          /* loss %, where a trial without loss is drawn */
  var LEGEND_ROW = 11;        /* px per legend row, under the plot */
  var W = 330, H = 210, MT = 22, MR = 50, MB = 34, ML = 50;

  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;");
  }
  function f1(v) { return v.toFixed(1); }
  function fmt(v) {
    if (v === 0) return "0";
    if (Math.abs(v) >= 1000) return v.toFixed(0);
    if (Math.abs(v) < 0.01) return String(Number(v.toPrecision(3)));
    return String(Number(v.toPrecision(6)));
  }
  function niceTicks(lo, hi) {
    if (!(isFinite(lo) && isFinite(hi)) || hi <= lo) return isFinite(lo) ? [lo] : [];
    var raw = (hi - lo) / 5, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 2.5, 5, 10].map(function (m) { return m * mag; })
      .filter(function (s) { return s >= raw; })[0];
    var first = Math.ceil(lo / step - 1e-9) * step;
    var n = Math.floor((hi - first) / step + 1e-9) + 1;
    if (!(n > 0 && n <= 50) || first + step === first) return [lo, hi];
    var out = [];
    for (var i = 0; i < n; i++) out.push(Number((first + i * step).toFixed(10)));
    return out;
  }
  function Axis(lo, hi, log, label) {
    if (log) { lo = Math.max(lo, 1e-12); hi = Math.max(hi, lo * 10); }
    if (!(hi > lo)) hi = lo + (Math.abs(lo) || 1);
    this.lo = lo; this.hi = hi; this.log = log; this.label = label;
  }
  Axis.prototype.frac = function (v) {
    if (this.log) {
      v = Math.max(v, this.lo);
      return (Math.log10(v) - Math.log10(this.lo)) / (Math.log10(this.hi) - Math.log10(this.lo));
    }
    return (v - this.lo) / (this.hi - this.lo);
  };
  Axis.prototype.ticks = function () {
    if (!this.log) return niceTicks(this.lo, this.hi);
    var out = [], a = Math.ceil(Math.log10(this.lo) - 1e-9), b = Math.floor(Math.log10(this.hi) + 1e-9);
    for (var k = a; k <= b; k++) out.push(Math.pow(10, k));
    return out;
  };

  function Plot(x, y, title, y2) {
    this.x = x; this.y = y; this.y2 = y2 || null; this.title = title;
    this.items = []; this.legend = [];
  }
  Plot.prototype.px = function (v) { return ML + this.x.frac(v) * (W - ML - MR); };
  Plot.prototype.py = function (v, axis) {
    var f = Math.min(Math.max((axis || this.y).frac(v), -0.02), 1.02);
    return H - MB - f * (H - MT - MB);
  };
  Plot.prototype.addLegend = function (label, color, shape) {
    if (!label) return;
    for (var i = 0; i < this.legend.length; i++) {
      var e = this.legend[i];
      if (e[0] === label && e[1] === color && e[2] === shape) return;
    }
    this.legend.push([label, color, shape]);
  };
  Plot.prototype.points = function (xs, ys, color, label, opts) {
    opts = opts || {};
    var axis = opts.right && this.y2 ? this.y2 : this.y, fill = opts.hollow ? "none" : color;
    for (var i = 0; i < xs.length; i++) {
      if (!(isFinite(xs[i]) && isFinite(ys[i]))) continue;
      var px = this.px(xs[i]), py = this.py(ys[i], axis);
      var tip = opts.tips ? "<title>" + esc(opts.tips[i]) + "</title>" : "";
      if (opts.shape === "triangle") {
        this.items.push('<path d="M' + f1(px) + "," + f1(py - 4) + "L" + f1(px + 3.6) + "," +
          f1(py + 2.6) + "L" + f1(px - 3.6) + "," + f1(py + 2.6) + 'Z" fill="' + fill +
          '" stroke="' + color + '">' + tip + "</path>");
      } else {
        this.items.push('<circle cx="' + f1(px) + '" cy="' + f1(py) + '" r="3" fill="' + fill +
          '" stroke="' + color + '">' + tip + "</circle>");
      }
    }
    this.addLegend(label, color, opts.shape || "circle");
  };
  Plot.prototype.line = function (x1, y1, x2, y2, color, width, dash, label) {
    this.items.push('<line x1="' + x1 + '" x2="' + x2 + '" y1="' + y1 + '" y2="' + y2 +
      '" stroke="' + color + '" stroke-width="' + width + '"' +
      (dash ? ' stroke-dasharray="' + dash + '"' : "") + "/>");
    this.addLegend(label, color, "line");
  };
  Plot.prototype.diagonal = function (xmax, color) {
    this.items.push('<polyline points="' + f1(this.px(0)) + "," + f1(this.py(0)) + " " +
      f1(this.px(xmax)) + "," + f1(this.py(xmax)) +
      '" fill="none" stroke="' + color + '" stroke-width="1.2" stroke-dasharray="3,3"/>');
  };
  Plot.prototype.vline = function (x, color, label, dash) {
    if (x === null || x === undefined || !isFinite(x)) return;
    var px = f1(this.px(x));
    this.line(px, MT, px, H - MB, color, "1.3", dash, label);
  };
  Plot.prototype.hline = function (y, color, label, dash) {
    var py = f1(this.py(y));
    this.line(ML, py, W - MR, py, color, "1", dash, label);
  };
  Plot.prototype.band = function (x0, x1, color, label) {
    var a = x0 !== null && isFinite(x0) ? this.px(x0) : ML;
    var z = x1 !== null && isFinite(x1) ? this.px(x1) : W - MR;
    a = Math.max(a, ML); z = Math.min(z, W - MR);
    if (z <= a) return;
    this.items.push('<rect x="' + f1(a) + '" y="' + MT + '" width="' + f1(z - a) + '" height="' +
      (H - MT - MB) + '" fill="' + color + '" fill-opacity="0.18"/>');
    this.addLegend(label, color, "band");
  };
  Plot.prototype.render = function () {
    var self = this, total = H + (this.legend.length ? LEGEND_ROW * this.legend.length + 4 : 0);
    var out = ['<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="' + W + '" height="' +
      total + '" viewBox="0 0 ' + W + " " + total + '" font-family="sans-serif" font-size="9">',
      '<rect x="' + ML + '" y="' + MT + '" width="' + (W - ML - MR) + '" height="' +
      (H - MT - MB) + '" fill="#fff" stroke="#999"/>'];
    this.x.ticks().forEach(function (v) {
      var px = f1(self.px(v));
      out.push('<line x1="' + px + '" x2="' + px + '" y1="' + (H - MB) + '" y2="' + (H - MB + 3) +
        '" stroke="#666"/><text x="' + px + '" y="' + (H - MB + 12) +
        '" text-anchor="middle">' + fmt(v) + "</text>");
    });
    [[this.y, false], [this.y2, true]].forEach(function (pair) {
      var axis = pair[0];
      if (!axis) return;
      axis.ticks().forEach(function (v) {
        var py = self.py(v, axis);
        if (pair[1]) {
          out.push('<text x="' + (W - MR + 4) + '" y="' + f1(py + 3) + '">' + fmt(v) + "</text>");
        } else {
          out.push('<line x1="' + ML + '" x2="' + (W - MR) + '" y1="' + f1(py) + '" y2="' + f1(py) +
            '" stroke="#eee"/><text x="' + (ML - 4) + '" y="' + f1(py + 3) +
            '" text-anchor="end">' + fmt(v) + "</text>");
        }
      });
    });
    out.push.apply(out, this.items);
    out.push('<text x="' + Math.round((ML + W - MR) / 2) + '" y="' + (H - 4) +
      '" text-anchor="middle">' + esc(this.x.label) + "</text>");
    out.push('<text transform="translate(11,' + Math.round((MT + H - MB) / 2) +
      ') rotate(-90)" text-anchor="middle">' + esc(this.y.label) + "</text>");
    if (this.y2) {
      out.push('<text transform="translate(' + (W - 6) + "," + Math.round((MT + H - MB) / 2) +
        ') rotate(90)" text-anchor="middle">' + esc(this.y2.label) + "</text>");
    }
    out.push('<text x="' + ML + '" y="' + (MT - 8) + '" font-size="10" font-weight="bold">' +
      esc(this.title) + "</text>");
    var ly = H + LEGEND_ROW;
    this.legend.forEach(function (e) {
      var mark = e[2] === "circle" || e[2] === "triangle"
        ? '<circle cx="' + (ML + 4) + '" cy="' + (ly - 3) + '" r="3" fill="' + e[1] + '"/>'
        : '<rect x="' + ML + '" y="' + (ly - 6) + '" width="9" height="6" fill="' + e[1] +
          '" fill-opacity="' + (e[2] === "band" ? 0.3 : 1) + '"/>';
      out.push(mark + '<text x="' + (ML + 12) + '" y="' + ly + '">' + esc(e[0]) + "</text>");
      ly += LEGEND_ROW;
    });
    out.push("</svg>");
    return out.join("");
  };

  function nan(v) { return v === null ? NaN : v; }  /* JSON has no NaN: null */
  function pick(values, mask, want) {
    return values.filter(function (v, i) { return mask[i] === want; });
  }
  function max(values) {
    return values.reduce(function (m, v) { return isFinite(v) && v > m ? v : m; }, 1.0);
  }

  /* The two SVGs of one search: s is one entry of the report's search data. */
  function searchPanels(s) {
    ["o", "r", "dr", "l", "d"].forEach(function (k) { s[k] = s[k].map(nan); });
    var n = s.o.length, ok = [], stopped = [];
    for (var i = 0; i < n; i++) { ok.push(s.g.indexOf(i) < 0); stopped.push(s.x.indexOf(i) >= 0); }
    var xmax = max(s.o) * 1.05, rxMax = max(s.r) * 1.05;
    var fig4 = new Plot(new Axis(0, xmax, false, "offered rate, kpps"),
      new Axis(0, Math.max(xmax, rxMax), false, "received rate, kpps"),
      "received rate and delivery ratio", new Axis(0, 105, false, "delivery ratio, %"));
    fig4.diagonal(xmax, "#bbb");
    var off = pick(s.o, ok, true), rx = pick(s.r, ok, true);
    var dr = s.dr.map(function (d) { return 100 * d; });
    var drOk = pick(dr, ok, true);
    fig4.points(off, rx, COLORS[0], "received kpps", {tips: off.map(function (o, j) {
      return f1(o) + " kpps: received " + f1(rx[j]) + " kpps, DR " + drOk[j].toFixed(3) + " %";
    })});
    fig4.points(off, drOk, COLORS[1], "delivery ratio %", {shape: "triangle", right: true});
    if (ok.indexOf(false) >= 0) {
      fig4.points(pick(s.o, ok, false), pick(s.r, ok, false), LIMITED,
        "generator-limited (at rate achieved)", {hollow: true});
    }
    var lossPct = s.l.map(function (l) { return Math.max(100 * l, FLOOR); });
    var ymax = Math.max(max(lossPct), s.t > 0 ? s.t * 10 : 1.0, 1.0) * 2;
    var loX = Math.min.apply(null, s.o.concat([xmax])) * 0.9;
    var lp = new Plot(new Axis(loX, xmax, false, "offered rate, kpps"),
      new Axis(FLOOR, ymax, true, "loss, % (0 drawn at 0.001)"), "trials, bounds and estimate");
    if (s.e !== null) {
      lp.band(s.elo, s.ehi, COLORS[4], "estimate 95 % interval");
      lp.vline(s.e, COLORS[4], "estimate", "4,2");
    }
    lp.hline(Math.max(s.t, FLOOR), THRESHOLD, "threshold " + fmt(s.t) + " %", "2,2");
    lp.vline(s.lo, LOWER, "lower bound");
    if (s.ub) lp.vline(s.hi, UPPER, "upper bound");
    var tips = s.o.map(function (x, j) {
      return f1(x) + " kpps, " + fmt(s.d[j]) + " s: loss " + (100 * s.l[j]).toFixed(4) + " %" +
        (stopped[j] ? " (stopped early, its failure certain)" : "");
    });
    lp.points(pick(s.o, ok, true), pick(lossPct, ok, true), COLORS[0], "trial",
      {tips: pick(tips, ok, true)});
    if (ok.indexOf(false) >= 0) {
      lp.points(pick(s.o, ok, false), pick(lossPct, ok, false), LIMITED,
        "generator-limited (at rate achieved)", {hollow: true});
    }
    return fig4.render() + lp.render();
  }

  var data = null;
  function draw(details) {
    if (details.getAttribute("data-drawn")) return;
    details.setAttribute("data-drawn", "1");
    if (data === null) {
      data = JSON.parse(document.getElementById("srperf-search-data").textContent);
    }
    details.querySelectorAll(".plots[data-search]").forEach(function (el) {
      el.innerHTML = searchPanels(data[Number(el.getAttribute("data-search"))]);
    });
  }
  document.querySelectorAll("details.searches").forEach(function (d) {
    if (d.open) draw(d);
    d.addEventListener("toggle", function () { if (d.open) draw(d); });
  });
}());
