"""The report's loss-per-block chart of loss-monitoring runs (table ``pm_blocks``).

One chart per run: for each monitored case and block of its loss trials, the packets the
monitor saw lost (ingress count - egress count, all flows) beside those the generator
lost (its sent - received), so a reader sees where the two agree and which segment lost
what (the monitor counts between its two points; the generator end to end).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from srperf.results.plots import COLORS, png_data_uri, plt


def per_block(blocks: pd.DataFrame) -> pd.DataFrame:
    """One row per case, repetition and block: monitor sent/received/lost (all flows),
    the generator's sent/received/lost, and the flows counted."""
    ok = blocks[blocks["status"] == "ok"]
    if ok.empty:
        return pd.DataFrame()
    out = ok.groupby(["behavior", "repetition", "search_seq", "block"], sort=False).agg(
        colour=("colour", "first"), flows=("flow", "nunique"), sent=("sent", "sum"),
        received=("received", "sum"), gen_sent=("gen_sent", "first"),
        gen_received=("gen_received", "first")).reset_index()
    out["lost"] = out["sent"] - out["received"]
    out["gen_lost"] = out["gen_sent"] - out["gen_received"]
    return out


def loss_png(table: pd.DataFrame, title: str) -> str:
    """PNG data URI: grouped bars per block (x: case / repetition / block), the monitor's
    lost packets and the generator's."""
    labels = [f"{r.behavior} r{int(r.repetition)} b{int(r.block)}" for r in table.itertuples()]
    x = range(len(labels))
    fig, ax = plt.subplots(figsize=(min(16.0, max(6.0, 0.35 * len(labels) + 2)), 4.0))
    ax.bar([i - 0.2 for i in x], table["lost"], width=0.4, color=COLORS[0],
           label="monitor: lost between its two counting points")
    ax.bar([i + 0.2 for i in x], table["gen_lost"], width=0.4, color=COLORS[1],
           label="generator: sent - received (end to end)")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=70, ha="right", fontsize=6)
    top = max([1, *table["lost"].tolist(), *table["gen_lost"].tolist()])
    ax.set_ylim(0, top * 1.15)   # a block that lost nothing is a bar of 0, not a gap
    ax.set_ylabel("packets lost per block")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return png_data_uri(fig)


def loss_sections(store: Any, ids: list[str], labels: dict[str, str],
                  with_plots: bool = True) -> list[dict[str, Any]]:
    """Per run with loss trials: ``label``, ``cases`` (the run's pm table rows),
    ``blocks`` (per-block rows) and ``png`` (the chart; empty without plots)."""
    from srperf.results.pm_summary import pm_table

    out = []
    for run_id in ids:
        blocks = store.frame("pm_blocks", run_id)
        if blocks.empty:
            continue
        table = per_block(blocks)
        cases = pm_table(store.frame("searches", run_id), blocks)
        notes = blocks[blocks["status"] != "ok"][["behavior", "note"]].drop_duplicates()
        title = f"{labels.get(run_id, run_id)}: packets lost per block"
        out.append({"label": labels.get(run_id, run_id),
                    "cases": cases.to_dict("records"),
                    "blocks": table.to_dict("records"),
                    "notes": notes.to_dict("records"),
                    "png": loss_png(table, title) if with_plots and not table.empty else ""})
    return out


__all__ = ["loss_png", "loss_sections", "per_block"]
