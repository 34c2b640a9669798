"""Plot checkpoint storage against conversation length: our SQL saver and LangGraph's
Postgres saver, from bench/storage.py's saver-driven chat at several lengths.

    .venv/bin/python bench/plot_storage.py [--turns 25,50,100,...] [--out docs/storage.png]

Each point is a fresh database on one throwaway PostgreSQL: the chat of that many turns
(one checkpoint per turn, two messages more each time) and the bytes on disk it added
over the empty schema, tables with their indexes and TOAST.
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass
from pathlib import Path

import storage
from matplotlib.figure import Figure  # no pyplot: no display backend, just the file
from servers import ROOT

DEFAULT_TURNS = "25,50,100,200,400,600,800,1000"
DEFAULT_OUT = ROOT / "docs" / "storage.png"
MB = 1_000_000


@dataclass
class Series:
    """Storage growth per chat length, for one saver."""

    name: str
    turns: list[int]
    growth: list[int]
    text: list[int]


def measure_series(turns: list[int]) -> list[Series]:
    """Both savers at every length, each chat in its own database."""
    series = []
    with storage.server(None) as url:
        for library in (storage.OURS, storage.LANGGRAPH):
            results = [
                asyncio.run(
                    storage.measure(
                        storage.create_database(url, f"plot_{library.name}_{n}"),
                        library,
                        storage.saver_chat,
                        n,
                    )
                )
                for n in turns
            ]
            series.append(
                Series(
                    library.name,
                    turns,
                    [r.growth for r in results],
                    [r.raw_bytes for r in results],
                )
            )
    return series


def plot(series: list[Series], out: Path) -> None:
    """Log-scale bytes, so a linear and a quadratic growth both stay readable."""
    fig = Figure(figsize=(7, 4.2), dpi=120)
    ax = fig.subplots()
    for s in series:
        ax.plot(s.turns, [g / MB for g in s.growth], marker="o", label=f"{s.name} checkpoints")
    first = series[0]
    ax.plot(first.turns, [t / MB for t in first.text], "k--", lw=1, label="message text itself")
    ours, theirs = series
    ax.annotate(
        f"LangGraph / ours at {ours.turns[-1]:,} turns: {theirs.growth[-1] / ours.growth[-1]:.0f}x",
        (ours.turns[-1], (ours.growth[-1] * theirs.growth[-1]) ** 0.5 / MB),
        ha="right",
    )
    ax.set_yscale("log")
    ax.set_xlabel("conversation length (turns; one checkpoint per turn)")
    ax.set_ylabel("storage on disk over the empty schema (MB)")
    ax.set_title("Checkpoint storage in PostgreSQL: Threadline vs LangGraph's saver")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)


def format_series(series: list[Series]) -> str:
    ours, theirs = series
    lines = [f"{'turns':>6} {'text':>12} {ours.name:>12} {theirs.name:>14} {'lg / ours':>10}"]
    for i, n in enumerate(ours.turns):
        lines.append(
            f"{n:>6} {ours.text[i]:>12,} {ours.growth[i]:>12,} {theirs.growth[i]:>14,} "
            f"{theirs.growth[i] / ours.growth[i]:>9.1f}x"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default=DEFAULT_TURNS, help="chat lengths, ascending")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the PNG to write")
    args = parser.parse_args()
    series = measure_series([int(n) for n in args.turns.split(",")])
    print(format_series(series))
    plot(series, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
