"""The ratios chart: one horizontal bar per workload, log scale, target marked."""

from __future__ import annotations

import os


def _bars(result: dict) -> list:
    """(label, ratio, target, status) per row that has a time ratio to show."""
    bars = []
    for row in result["rows"]:
        if row["kind"] != "time":
            continue
        vs = row["target_vs"] or "bcolz"
        ratio = row.get(f"ratio_{vs}")
        if ratio is None:
            continue
        bars.append((f"{row['key']}  (vs {vs})", ratio, row["target"], row["status"]))
    return bars


def plot_ratios(result: dict, path: str) -> str | None:
    """Draw ``path`` (PNG); None when matplotlib is missing or nothing to draw."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    bars = _bars(result)
    if not bars:
        return None
    colours = {"PASS": "#2e8b57", "MISS": "#d1495b", "WRONG": "#000000"}
    fig, ax = plt.subplots(figsize=(10, 0.42 * len(bars) + 1.8))
    ys = range(len(bars))[::-1]
    ratios = [b[1] for b in bars]
    ax.barh(list(ys), ratios, color=[colours.get(b[3], "#9a9a9a") for b in bars], height=0.6)
    for y, (label, ratio, target, status) in zip(ys, bars):
        if target is not None:
            ax.plot([target, target], [y - 0.42, y + 0.42], color="black", lw=2.2)
        text = f"{ratio:.3g}" + (f"  (target {target:g}: {status})" if target is not None else "")
        ax.text(max(ratio, target or 0) * 1.12, y, text, va="center", fontsize=8)
    ax.set_yticks(list(ys))
    ax.set_yticklabels([b[0] for b in bars], fontsize=9)
    ax.set_xscale("log")
    lo = min(min(ratios), min((b[2] for b in bars if b[2]), default=1)) / 2
    hi = max(max(ratios), 1) * 8
    ax.set_xlim(lo, hi)
    ax.axvline(1.0, color="#555555", ls="--", lw=1)
    ax.set_xlabel("bcolz_store time / other library's time (log scale; lower is better, "
                  "< 1 = bcolz_store faster)")
    cfg = result["config"]
    ax.set_title(f"bcolz_store vs bcolz / blosc2 — {cfg['n']:,} elements, {cfg['cname']} "
                 f"clevel {cfg['clevel']}, ctable {cfg['nrows']:,} rows\n"
                 "green: meets target (black tick), red: misses it, grey: no target",
                 fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
