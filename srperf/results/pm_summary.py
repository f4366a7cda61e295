"""Loss-monitoring runs in words and tables: each case's PDR against the base case, and
the loss trials' per-block figures (from ``searches`` and ``pm_blocks``).

The change of a case against the ``none`` case with the same flows is
``mean(case) / mean(none) - 1`` with a 95 % interval: Welch's (each PDR's search bracket
carried as its own uncertainty, :func:`srperf.results.stats.welch_diff`) when both sides
have two repetitions or more; with one, the interval the two search brackets allow
(``lower(case) / upper(none) - 1`` .. ``upper(case) / lower(none) - 1``).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from srperf.pm.cases import parse_name
from srperf.results.stats import welch_diff

FIGURE = ("ok", "at_max")


def describe_loss_trial(trial: Any) -> str:
    """One line: the loss trial's load, blocks and losses, monitor against the generator."""
    if not trial.measured:
        return f"loss trial: not measured: {trial.note}"
    sent = sum(loss.sent.packets for b in trial.blocks for loss in b["losses"])
    got = sum(loss.received.packets for b in trial.blocks for loss in b["losses"])
    g_sent = sum(b["gen_sent"] for b in trial.blocks)
    g_got = sum(b["gen_received"] for b in trial.blocks)
    per_block = "/".join(str(sum(loss.lost_packets for loss in b["losses"]))
                         for b in trial.blocks)
    flows = len(trial.blocks[0]["losses"])
    if trial.role == "ingress":
        agree = all(sum(loss.received.packets for loss in b["losses"]) == b["gen_received"]
                    for b in trial.blocks)
        check = ("the tester's egress counter equals the generator's received count in "
                 "every block" if agree else "the tester's egress counter differs from "
                 "the generator's received count (see pm_blocks)")
    else:
        check = "the ingress side is the generator's own count"
    return (f"loss trial at {trial.rate_pps / 1e3:.1f} kpps, {len(trial.blocks)} blocks x "
            f"{flows} flows: monitor (SUT {trial.role}) {sent - got} lost of {sent} "
            f"(per block {per_block}); generator {g_sent - g_got} lost of {g_sent}; {check}")


def _change(case: pd.DataFrame, base: pd.DataFrame) -> tuple[float, float, float, str]:
    c, b = case["lower_pps"].astype(float), base["lower_pps"].astype(float)
    if len(c) >= 2 and len(b) >= 2:
        half = lambda f: ((f["upper_pps"].astype(float) - f["lower_pps"].astype(float))
                          / 2).fillna(0).tolist()
        d = welch_diff(b.tolist(), c.tolist(), baseline_halfwidths=half(base),
                       current_halfwidths=half(case))
        return d.delta_pct, d.low_pct, d.high_pct, "welch"
    point = 100.0 * (c.mean() / b.mean() - 1.0)
    b_up, c_up = base["upper_pps"].astype(float), case["upper_pps"].astype(float)
    low = 100.0 * (c.min() / b_up.max() - 1.0) if b_up.notna().all() else math.nan
    high = 100.0 * (c_up.max() / b.min() - 1.0) if c_up.notna().all() else math.nan
    return point, low, high, "brackets"


def pm_table(searches: pd.DataFrame, blocks: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per loss-monitoring case and threshold: implementation, flows, marking,
    repetitions with a figure, PDR mean (kpps), change against ``none`` (%, with its
    interval and how it was made), and the loss trials' totals (monitor and generator)."""
    rows = []
    if searches.empty:
        return pd.DataFrame(rows)
    s = searches[searches["behavior"].map(lambda n: parse_name(str(n)) is not None)]
    for (name, thr), grp in s.groupby(["behavior", "threshold_pct"], sort=False):
        case = parse_name(str(name))
        assert case is not None
        ok = grp[grp["status"].isin(FIGURE) & grp["lower_pps"].notna()]
        base = s[(s["behavior"] == case.baseline_name) & (s["threshold_pct"] == thr)]
        base = base[base["status"].isin(FIGURE) & base["lower_pps"].notna()]
        row: dict[str, Any] = dict(
            role=case.role, implementation=case.implementation, flows=case.flows,
            marking="-" if case.implementation == "none" else
            ("colour" if case.marking else "count"), threshold_pct=float(thr), n=len(ok),
            pdr_kpps=ok["lower_pps"].mean() / 1e3 if len(ok) else math.nan,
            change_pct=math.nan, low_pct=math.nan, high_pct=math.nan, method="",
            status=",".join(sorted(set(grp["status"]))))
        if case.implementation != "none" and len(ok) and len(base):
            (row["change_pct"], row["low_pct"], row["high_pct"],
             row["method"]) = _change(ok, base)
        if blocks is not None and not blocks.empty:
            mine = blocks[(blocks["behavior"] == name) & (blocks["status"] == "ok")]
            if len(mine):
                per_block = mine.groupby(["search_seq", "block"]).agg(
                    sent=("sent", "sum"), received=("received", "sum"),
                    gen_sent=("gen_sent", "first"), gen_received=("gen_received", "first"))
                row.update(blocks=len(per_block),
                           monitor_lost=int((per_block["sent"] - per_block["received"]).sum()),
                           generator_lost=int((per_block["gen_sent"]
                                               - per_block["gen_received"]).sum()),
                           monitor_equals_truth=bool(
                               (per_block["received"] == per_block["gen_received"]).all()
                               if case.role == "ingress" else
                               (per_block["sent"] == per_block["gen_sent"]).all()))
        rows.append(row)
    return pd.DataFrame(rows)


def _pct(v: float) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:+.1f}"


def format_pm_table(table: pd.DataFrame) -> str:
    """The table as text: per implementation and flow count the PDR and its change
    against the base case, with the interval."""
    if table.empty:
        return "(no loss-monitoring case)"
    head = (f"{'implementation':<14} {'flows':>5} {'marking':<7} {'n':>2} {'PDR kpps':>9} "
            f"{'change %':>8} {'95 % interval':>17}  loss trial (monitor / generator lost)")
    lines = [head, "-" * len(head)]
    order = table.assign(_base=table["implementation"] != "none").sort_values(
        ["threshold_pct", "flows", "_base", "implementation", "marking"], kind="stable")
    for _, r in order.iterrows():
        pdr = "-" if math.isnan(r["pdr_kpps"]) else f"{r['pdr_kpps']:.1f}"
        interval = "" if r["implementation"] == "none" else \
            f"[{_pct(r['low_pct'])}, {_pct(r['high_pct'])}] {r['method']}".strip()
        loss = ""
        if "blocks" in r and isinstance(r.get("blocks"), (int, float)) \
                and not math.isnan(r["blocks"]):
            loss = (f"{int(r['blocks'])} blocks: {int(r['monitor_lost'])} / "
                    f"{int(r['generator_lost'])}"
                    + ("" if r["monitor_equals_truth"] else
                       " (the tester-side count != the generator's)"))
        lines.append(f"{r['implementation']:<14} {int(r['flows']):>5} {r['marking']:<7} "
                     f"{int(r['n']):>2} {pdr:>9} {_pct(r['change_pct']):>8} "
                     f"{interval:>17}  {loss}".rstrip())
    return "\n".join(lines)


__all__ = ["describe_loss_trial", "format_pm_table", "pm_table"]
