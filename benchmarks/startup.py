"""Start-up time of the command line, two source trees in one run (issue 35: import changes kept it).

Usage: python benchmarks/startup.py [--before REV] [--repeat R] [--out DIR]

The trees: BEFORE is commit ``--before`` (default ``025b192``, the last commit before issue 35's layout
work), read with ``git archive``; AFTER is the working tree.  Each becomes a temporary import root
``ROOT/redactopt`` laid out as ``pyproject.toml`` installs it (``src/redactopt``, and ``solvers/`` as
``redactopt.solvers``), used through ``PYTHONPATH``; every run checks that ``redactopt`` came from its
root.  Cases, each run ``--repeat`` times alternating BEFORE and AFTER after one warm-up each:

* ``import``: ``python -X importtime -c "import redactopt.interface.cli"``, the cumulative microseconds
  the interpreter reports for ``redactopt.interface.cli`` (the command line's imports);
* ``--version``: wall time of ``python -m redactopt --version`` (interpreter start and imports);
* ``design``: wall time of ``python -m redactopt design --n 10 --eps 1`` (the README's first command:
  imports, the portfolio and SCIP on this small problem), whose output must be the same for both trees.

Prints the best and the median of each and writes ``startup.csv`` / ``startup.md`` into ``--out``
(default ``bench-out``).  Target: AFTER/BEFORE of the medians <= 1.05 (no worse, allowing for noise).
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def _root(tree: Path, dest: Path) -> Path:
    root = dest / "root"
    shutil.copytree(tree / "src" / "redactopt", root / "redactopt",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copytree(tree / "solvers", root / "redactopt" / "solvers", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _archive(rev: str, dest: Path) -> Path:
    dest.mkdir(parents=True)
    data = subprocess.run(["git", "-C", str(HERE), "archive", rev, "src", "solvers"], capture_output=True,
                          check=True).stdout
    tar = dest / "tree.tar"
    tar.write_bytes(data)
    with tarfile.open(tar) as t:
        t.extractall(dest, filter="data")
    return _root(dest, dest / "import")


def _run(root: Path, args: list[str]) -> tuple[float, str, str]:
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{args} failed in {root}:\n{out.stderr[-2000:]}")
    return dt, out.stdout, out.stderr


def _check(root: Path) -> None:
    _, out, _ = _run(root, ["-c", "import redactopt, os; print(os.path.realpath(redactopt.__file__))"])
    if not out.strip().startswith(os.path.realpath(root)):
        raise SystemExit(f"redactopt imported from {out.strip()}, not from {root}")


def _import_us(root: Path) -> float:
    _, _, err = _run(root, ["-X", "importtime", "-c", "import redactopt.interface.cli"])
    for line in err.splitlines():
        m = re.match(r"import time:\s*\d+\s*\|\s*(\d+)\s*\|\s*redactopt\.interface\.cli\s*$", line)
        if m:
            return float(m.group(1))
    raise SystemExit("no importtime line for redactopt.interface.cli")


CASES = {
    "import": ("import redactopt.interface.cli (us, -X importtime)", _import_us),
    "--version": ("python -m redactopt --version (s)", lambda r: _run(r, ["-m", "redactopt", "--version"])[0]),
    "design": ("python -m redactopt design --n 10 --eps 1 (s)",
               lambda r: _run(r, ["-m", "redactopt", "design", "--n", "10", "--eps", "1"])[0]),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="025b192")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--out", default="bench-out")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="startup-"))
    try:
        roots = {"before": _archive(args.before, tmp / "before"), "after": _root(HERE, tmp / "after")}
        for r in roots.values():
            _check(r)
        outputs = {k: _run(r, ["-m", "redactopt", "design", "--n", "10", "--eps", "1"])[1] for k, r in roots.items()}
        same = outputs["before"] == outputs["after"]
        times: dict[tuple[str, str], list[float]] = {}
        for case, (_, fn) in CASES.items():
            for r in roots.values():
                fn(r)  # warm-up (file cache)
            for _ in range(args.repeat):
                for tree, r in roots.items():
                    times.setdefault((case, tree), []).append(fn(r))
        rows = []
        for case, (label, _) in CASES.items():
            b, a = times[(case, "before")], times[(case, "after")]
            rows.append({"case": label, "before_best": min(b), "before_median": statistics.median(b),
                         "after_best": min(a), "after_median": statistics.median(a),
                         "ratio_median": statistics.median(a) / statistics.median(b), "repeat": args.repeat})
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "startup.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        lines = [f"# Start-up: {args.before} (before) against the working tree (after), {args.repeat} runs each, "
                 f"alternating; load average {os.getloadavg()[0]:.1f}", "",
                 f"design output identical: {same}", "",
                 "| case | before best | before median | after best | after median | after/before (median) |",
                 "|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['case']} | {r['before_best']:.4g} | {r['before_median']:.4g} | {r['after_best']:.4g} | "
                         f"{r['after_median']:.4g} | {r['ratio_median']:.3f} |")
        text = "\n".join(lines) + "\n"
        (out / "startup.md").write_text(text)
        print(text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
