"""Loss per block of two runs side by side (``srperf compare``), for each loss-monitoring
case both runs have loss trials of: blocks, packets the monitor counted sent and lost,
and the generator's lost, per run (table ``pm_blocks``).  Loss is shown, not judged: a
loss trial runs at a fraction of each run's own PDR, so the loads differ."""

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


__all__ = ["compare_loss", "format_loss_markdown"]
