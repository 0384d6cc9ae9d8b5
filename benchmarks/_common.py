"""Shared helpers of the benchmark scripts: output folder, machine description, tables."""

from __future__ import annotations

import csv
import datetime as _dt
import os
import platform
import sys
from pathlib import Path
from typing import Any


def out_dir(argv: list[str] | None = None, default: str = "benchmarks/results") -> Path:
    """Folder from ``--out DIR`` (default ``benchmarks/results``), created if needed."""
    argv = sys.argv[1:] if argv is None else argv
    d = Path(argv[argv.index("--out") + 1]) if "--out" in argv else Path(default)
    d.mkdir(parents=True, exist_ok=True)
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
