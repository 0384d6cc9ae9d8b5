"""Run the leakage, design and apply benchmarks in one process and write a summary README.md.

Usage: python benchmarks/run_all.py [--out DIR] [--quick]

The three scripts also run on their own; this one puts their numbers side by side (with
ratios against one exact leakage evaluation of the same size) together with the machine,
the date and the command, in DIR/README.md, and their tables in DIR (default bench-out;
``--out benchmarks/results`` refreshes the committed results).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import apply_speed  # noqa: E402
import design_speed  # noqa: E402
import leakage_speed  # noqa: E402
from _common import machine, out_dir, parser  # noqa: E402

import numpy as np  # noqa: E402

from redactopt.model.chain import MarkovChain  # noqa: E402
from redactopt.judge.leakage import leakage  # noqa: E402


def _leak_time(chain: MarkovChain, n: int, p: int) -> float:
    q = np.random.default_rng(0).uniform(0.2, 1.0, (n, 2))
    q[p] = 1.0
    leakage(chain, q, p)
    t = time.perf_counter()
    for _ in range(5):
        leakage(chain, q, p)
    return (time.perf_counter() - t) / 5


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__).parse_args(argv)
    out = out_dir(args.out)
    common = ["--out", str(out)] + (["--quick"] if args.quick else [])
    t0 = time.perf_counter()
    leak_rows = leakage_speed.main(common)
    design_rows = design_speed.main(common)
    apply_rows = apply_speed.main(common)
    m = machine()
    lines = [
        "# Performance", "",
        f"Measured {m['date']} on {m['platform']}, {m['cpus']} CPUs, Python {m['python']}, numpy {m['numpy']}.",
        f"Command: `{m['command']}` ({time.perf_counter() - t0:.0f} s in all). Tables with every column: "
        "the `*.md` / `*.csv` files beside this one.", "",
        "## Exact leakage (benchmarks/leakage_speed.py)", "",
        "| case | n | exact (ms) | brute force (ms) | speed-up | records/s |", "|---|---|---|---|---|---|",
    ]
    for r in leak_rows:
        brute = "—" if r["brute_force_s"] != r["brute_force_s"] else f"{r['brute_force_s'] * 1e3:.1f}"
        speed = "—" if r["speedup"] != r["speedup"] else f"{r['speedup']:.0f}×"
        lines.append(f"| {r['case']} | {r['n']} | {r['exact_s'] * 1e3:.2f} | {brute} | {speed} | {r['records_per_s']:.3g} |")
    lines += ["", "## Design (benchmarks/design_speed.py)", "",
              "Each design is re-verified by the exact evaluator; the last column compares the design time "
              "with one exact leakage evaluation of the same size (same run).", "",
              "| solver | n | p | alpha | beta | eps | seconds | utility | upper bound | gap | leakage ≤ eps | design / one leakage evaluation |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in design_rows:
        lt = _leak_time(MarkovChain(r["alpha"], r["beta"]), r["n"], r["p"] - 1)
        lines.append(
            f"| {r['solver']} | {r['n']} | {r['p']} | {r['alpha']:g} | {r['beta']:g} | {r['eps']:g} | {r['seconds']:.2f} | "
            f"{r['utility']:.5f} | {r['upper_bound']:.5f} ({r['bound_from']}) | {r['gap']:.2e} | "
            f"{'yes' if r['passed'] else 'NO'} | {r['seconds'] / lt:,.0f}× |")
    if apply_rows:
        lines += ["", "## Apply (benchmarks/apply_speed.py)", "",
                  "Whole releases (`apply_table`) run in a fresh process each; peak MB is its peak resident "
                  "memory, which should not grow with the number of records.", "",
                  "| benchmark | case | source | records | seconds | records/s | peak MB |",
                  "|---|---|---|---|---|---|---|"]
        for r in apply_rows:
            peak = f"{r['peak_rss_mb']:.0f}" if r.get("peak_rss_mb") not in (None, "") else "—"
            lines.append(f"| {r['benchmark']} | {r['case']} | {r['source']} | {r['records']} | "
                         f"{r['seconds']:.3f} | {r['records_per_s']:.3g} | {peak} |")
    (out / "README.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / 'README.md'}")


if __name__ == "__main__":
    main()
