"""The per-configuration table of a stateful run: mean, CV and interval of the primary
metric over repetitions, the SUT's CPU, and the proxy's Table I (summed)."""

from __future__ import annotations

import json
from typing import Any, Iterable

from srperf.stateful.stats import spread


def _json(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    return json.loads(value) if value else {}


def summarize(rows: Iterable[dict[str, Any]], confidence: float = 0.95) -> list[dict[str, Any]]:
    """One dict per configuration (in first-seen order) from stored stateful rows."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("kind") == "calibration":
            continue
        groups.setdefault((row["configuration"], row.get("variant") or ""), []).append(row)
    out = []
    for (conf, variant), group in groups.items():
        ok = [r for r in group if r.get("status") == "ok"]
        metric = group[0].get("metric") or "goodput_mbps"
        entry: dict[str, Any] = {"configuration": conf, "variant": variant, "metric": metric,
                                 "n": len(ok), "failed": len(group) - len(ok),
                                 "reason": next((r.get("reason") for r in group
                                                 if r.get("status") != "ok"), "")}
        sp = spread([float(r["value"]) for r in ok if r.get("value") is not None], confidence)
        entry["spread"] = sp
        metrics = [_json(r.get("metrics")) for r in ok]
        for name in ("retransmits", "sut_cpu_busy_pct", *HTTP_MEANS):
            vals = [m[name] for m in metrics if name in m]
            entry[name] = sum(vals) / len(vals) if vals else None
        for name in HTTP_SUMS:
            vals = [m[name] for m in metrics if name in m]
            entry[name] = sum(vals) if vals else None
        tables = [_json(r.get("counters")).get("table_i") for r in ok]
        tables = [t for t in tables if t]
        entry["table_i"] = ({k: sum(t.get(k, 0) for t in tables) for k in tables[0]}
                            if tables else None)
        out.append(entry)
    return out


HTTP_MEANS = ("transfer_mbps", "latency_p50_ms", "latency_p99_ms")
"""An http run's metrics averaged over the repetitions (wrk's; units in the names)."""
HTTP_SUMS = ("socket_errors", "non_2xx")
"""An http run's error counts, summed over the repetitions."""


def _opt(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def _spread_cells(e: dict[str, Any]) -> tuple[str, str, str]:
    """A summary entry's configuration name, CV % and 95 % interval cells (both
    tables); '-' where the spread has no such figure."""
    sp = e["spread"]
    name = e["configuration"] + (f" [{e['variant']}]" if e["variant"] else "")
    if sp is None:
        return name, "-", "-"
    cv = f"{sp.cv_pct:.1f}" if sp.cv_pct is not None else "-"
    ci = f"{sp.low:.1f}-{sp.high:.1f}" if sp.low is not None and sp.high is not None \
        else (sp.note or "-")
    return name, cv, ci


def format_http_table(summary: list[dict[str, Any]]) -> str:
    """:func:`summarize`'s output of an http run: requests/s with its interval, and what
    wrk measured beside it (transfer rate, latency percentiles, errors); a goodput
    run's columns (retransmits, SUT CPU, Table I) do not apply to it."""
    head = (f"{'configuration':<34} {'n':>3} {'req/s':>9} {'CV %':>6} {'95 % interval':>19} "
            f"{'Mb/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}")
    lines = [head]
    for e in summary:
        sp = e["spread"]
        name, cv, ci = _spread_cells(e)
        if sp is None:
            lines.append(f"{name:<34} {0:>3} {'-':>9}  {e['reason'][:90]}")
            continue
        errors = [e.get(k) for k in HTTP_SUMS if e.get(k) is not None]
        lines.append(f"{name:<34} {sp.n:>3} {sp.mean:>9.1f} {cv:>6} {ci:>19} "
                     f"{_opt(e.get('transfer_mbps'), '{:.1f}'):>8} "
                     f"{_opt(e.get('latency_p50_ms'), '{:.2f}'):>8} "
                     f"{_opt(e.get('latency_p99_ms'), '{:.2f}'):>8} "
                     f"{(f'{sum(errors):.0f}' if errors else '-'):>7}"
                     + (f"  ({e['failed']} failed)" if e["failed"] else ""))
    return "\n".join(lines) + ("\n(req/s, interval: requests_per_s; Mb/s: transfer rate; "
                               "p50/p99: wrk's latency percentiles; all means over the "
                               "repetitions; errors: socket errors + non-2xx answers, "
                               "summed)")


def lost_in_vnf(t: dict[str, Any]) -> str:
    """Table I's ingress minus egress successes, explained (srperf.stateful.counters):
    stale entries plus entries left in the cache, and what does not add up."""
    if "left_in_cache" not in t:
        return "-"
    text = f"{t.get('stale', 0) + t['left_in_cache']}"
    if t.get("unaccounted"):
        text += f" ({t['unaccounted']} unaccounted)"
    return text


def format_table(summary: list[dict[str, Any]]) -> str:
    """A text table of :func:`summarize`'s output (an http run's: :func:`format_http_table`)."""
    if summary and all(e["metric"] == "requests_per_s" for e in summary):
        return format_http_table(summary)
    head = (f"{'configuration':<34} {'n':>3} {'mean':>9} {'CV %':>6} {'95 % interval':>19} "
            f"{'retr':>7} {'SUT cpu %':>9}  Table I: ingress ok / egress ok (ratio) / "
            "not cached / dup / lost in VNF")
    lines = [head]
    for e in summary:
        sp = e["spread"]
        name, cv, ci = _spread_cells(e)
        if sp is None:
            lines.append(f"{name:<34} {0:>3} {'-':>9}  {e['reason'][:90]}")
            continue
        retr = f"{e['retransmits']:.0f}" if e["retransmits"] is not None else "-"
        cpu = f"{e['sut_cpu_busy_pct']:.0f}" if e["sut_cpu_busy_pct"] is not None else "-"
        t = e["table_i"]
        tab = "-"
        if t and t.get("ingress_ok"):
            ratio = t["egress_ok"] / t["ingress_ok"]
            tab = (f"{t['ingress_ok']} / {t['egress_ok']} ({ratio:.4f}) / {t['not_cached']}"
                   f" / {t['duplicates']} / " + lost_in_vnf(t))
        lines.append(f"{name:<34} {sp.n:>3} {sp.mean:>9.1f} {cv:>6} {ci:>19} {retr:>7} "
                     f"{cpu:>9}  {tab}" + (f"  ({e['failed']} failed)" if e["failed"] else ""))
    unit = summary[0]["metric"] if summary else ""
    return "\n".join(lines) + (f"\n(mean, interval: {unit}; retr: retransmits per repetition; "
                               "Table I: packets summed over the repetitions; lost in VNF: stale + left in the "
                               "cache = ingress ok - egress ok)" if unit else "")


__all__ = ["summarize", "format_table", "format_http_table", "lost_in_vnf"]
