"""Shared helpers of the benchmark scripts: command line, output folder, machine description, tables.

Every script takes ``--out DIR`` (default ``bench-out``, which git ignores) and ``--quick``;
the committed results in ``benchmarks/results/`` change only when asked for with
``--out benchmarks/results``.  ``--help`` prints the usage and runs nothing.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import os
import platform
import sys
from pathlib import Path
from typing import Any

def best_time(fn: Any, repeat: int) -> float:
    """Seconds of the fastest of ``repeat`` calls of ``fn()`` after one warm-up call (caches, first-call imports)."""
    import time

    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


#: Where results go unless --out says otherwise (ignored by git).
DEFAULT_OUT = "bench-out"


def parser(doc: str | None) -> argparse.ArgumentParser:
    """An argument parser with ``--out DIR`` and ``--quick``; the description is the script's docstring."""
    ap = argparse.ArgumentParser(description=(doc or "").strip().split("\n\n")[0],
                                 epilog="Details: the docstring at the top of the script.")
    ap.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                    help=f"directory for the CSV/Markdown results (default {DEFAULT_OUT}, ignored by git; "
                         "--out benchmarks/results updates the committed results); created if missing, "
                         "but not its parent")
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    return ap


def out_dir(path: str) -> Path:
    """The output folder, created if missing (its parent must exist: a typo creates nothing)."""
    d = Path(path)
    if not d.parent.is_dir():
        raise SystemExit(f"--out {d}: directory {d.parent} does not exist")
    if d.exists() and not d.is_dir():
        raise SystemExit(f"--out {d}: exists and is not a directory")
    d.mkdir(exist_ok=True)
    return d


def machine() -> dict[str, Any]:
    import numpy

    return {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "command": " ".join([Path(sys.executable).name] + sys.argv),
    }


def write_table(rows: list[dict[str, Any]], path_stem: Path, title: str) -> None:
    """Write ``rows`` as ``<stem>.csv`` and ``<stem>.md`` (with the machine header)."""
    if not rows:
        return
    keys = list(rows[0])
    with open(path_stem.with_suffix(".csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    m = machine()
    lines = [f"# {title}", "", f"{m['date']} · Python {m['python']} · numpy {m['numpy']} · {m['cpus']} CPUs · "
             f"{m['platform']}", "", f"`{m['command']}`", "",
             "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r[k]) for k in keys) + " |")
    path_stem.with_suffix(".md").write_text("\n".join(lines) + "\n")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
