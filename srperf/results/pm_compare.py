"""Loss monitoring in ``srperf compare``: each run's implementations' costs side by side
(:func:`compare_costs`: per role, flows and marking, every implementation's change
against its own run's ``none`` case, so two implementations measured in two runs are
told apart even though their case names differ), and the loss per block of each case
both runs have loss trials of (:func:`compare_loss`: blocks, packets the monitor
counted sent and lost, the generator's lost).  Loss is shown, not judged: a loss trial
runs at a fraction of each run's own PDR, so the loads differ."""

from __future__ import annotations

from typing import Any

import pandas as pd

from srperf.results.pm_plot import per_block


def _side(table: pd.DataFrame) -> dict[str, Any]:
    return {"blocks": len(table), "sent": int(table["sent"].sum()),
            "lost": int(table["lost"].sum()), "gen_lost": int(table["gen_lost"].sum()),
            "rate_kpps": None, "per_block": [int(v) for v in table["lost"]]}


def compare_loss(base: pd.DataFrame, cur: pd.DataFrame) -> list[dict[str, Any]]:
    """One dict per case with loss blocks in both runs: ``behavior``, ``baseline``,
    ``current`` (blocks, sent, lost, gen_lost, per_block lost)."""
    if base.empty or cur.empty:
        return []
    b, c = per_block(base), per_block(cur)
    if b.empty or c.empty:
        return []
    out = []
    for name in dict.fromkeys(c["behavior"]):
        if name not in set(b["behavior"]):
            continue
        out.append({"behavior": name, "baseline": _side(b[b["behavior"] == name]),
                    "current": _side(c[c["behavior"] == name])})
    return out


def compare_costs(base_searches: pd.DataFrame, cur_searches: pd.DataFrame) -> pd.DataFrame:
    """One row per run, role, flows, marking and implementation (not ``none``): its
    change against that run's ``none`` with the same flows (:func:`pm_table`)."""
    from srperf.results.pm_summary import pm_table

    parts = []
    for side, frame in (("baseline", base_searches), ("current", cur_searches)):
        table = pm_table(frame)
        if table.empty:
            continue
        table = table[table["implementation"] != "none"].copy()
        table.insert(0, "run", side)
        parts.append(table)
    if len(parts) < 2:
        return pd.DataFrame()
    return pd.concat(parts, ignore_index=True).sort_values(
        ["role", "threshold_pct", "flows", "marking", "run"], kind="stable")


def format_costs_markdown(costs: pd.DataFrame) -> list[str]:
    """Markdown lines of :func:`compare_costs`."""
    if costs.empty:
        return []

    def pct(v: float) -> str:
        return "-" if pd.isna(v) else f"{v:+.1f}"

    lines = ["", "Loss monitoring: each implementation's change against its own run's "
                 "`none` case (same flows):", "",
             "| role | flows | marking | run | implementation | n | PDR kpps | change % "
             "| 95 % interval % |", "|---|---:|---|---|---|---:|---:|---:|---|"]
    for r in costs.itertuples():
        pdr = "-" if pd.isna(r.pdr_kpps) else f"{r.pdr_kpps:.1f}"
        lines.append(f"| {r.role} | {r.flows} | {r.marking} | {r.run} | {r.implementation} "
                     f"| {r.n} | {pdr} | {pct(r.change_pct)} | [{pct(r.low_pct)}, "
                     f"{pct(r.high_pct)}] {r.method} |")
    return lines


def format_loss_markdown(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown lines: per case the two runs' loss per block."""
    if not rows:
        return []
    lines = ["", "Loss per block (loss trials of the loss-monitoring cases; shown, not "
                 "judged: each ran at its own run's load):", "",
             "| case | baseline blocks | baseline monitor lost / sent (per block) "
             "| baseline generator lost | current blocks | current monitor lost / sent "
             "(per block) | current generator lost |",
             "|---|---:|---|---:|---:|---|---:|"]
    for r in rows:
        b, c = r["baseline"], r["current"]
        lines.append(f"| {r['behavior']} | {b['blocks']} | {b['lost']} / {b['sent']} "
                     f"({'/'.join(map(str, b['per_block']))}) | {b['gen_lost']} "
                     f"| {c['blocks']} | {c['lost']} / {c['sent']} "
                     f"({'/'.join(map(str, c['per_block']))}) | {c['gen_lost']} |")
    return lines


__all__ = ["compare_costs", "compare_loss", "format_costs_markdown", "format_loss_markdown"]
