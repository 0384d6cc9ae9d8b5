"""Run the leakage, design, design-scale, apply, attack and Dask benchmarks in one process and write a summary README.md.

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
import attack_speed  # noqa: E402
import dask_speed  # noqa: E402
import design_scale  # noqa: E402
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
    scale_rows = design_scale.main(common)
    apply_rows = apply_speed.main(common)
    attack_rows = attack_speed.main(common)
    dask_rows = dask_speed.main(common)
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
    if scale_rows:
        lines += ["", "## Long sequences (benchmarks/design_scale.py)", "",
                  "The command line in a fresh process, end to end; peak MB is its peak resident memory; "
                  "the last column is the time over the same command's at the smallest n.", "",
                  "| command | n | private | seconds | peak MB | vs smallest n |", "|---|---|---|---|---|---|"]
        for r in scale_rows:
            lines.append(f"| {r['command']} | {r['n']} | {r['private']} | {r['seconds']:.2f} | "
                         f"{r['peak_rss_mb']:.0f} | {r['vs_1e4']:.2f} |")
    if apply_rows:
        lines += ["", "## Apply (benchmarks/apply_speed.py)", "",
                  "Whole releases (`apply_table`) and a raw pyarrow streaming copy of the same file, each in a fresh "
                  "process, side by side; peak MB is the process's peak resident memory, which should not grow "
                  "with the number of records; the ratio without design leaves out the design's seconds.", "",
                  "| benchmark | case | records | seconds | ratio to raw copy | ratio without design | design s | "
                  "peak MB | report bytes |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in apply_rows:
            def cell(key: str, fmt: str) -> str:
                return format(r[key], fmt) if r.get(key) not in (None, "") else "—"

            lines.append(f"| {r['benchmark']} | {r['case']} ({r['source']}) | {r['records']} | {r['seconds']:.3f} | "
                         f"{cell('ratio_to_raw', '.2f')} | {cell('ratio_without_design', '.2f')} | "
                         f"{cell('design_s', '.2f')} | {cell('peak_rss_mb', '.0f')} | {cell('report_bytes', 'd')} |")
    if attack_rows:
        lines += ["", "## Attack (benchmarks/attack_speed.py)", "",
                  "| case | records sampled | samples per value of X_p | seconds | lower bound |", "|---|---|---|---|---|"]
        for r in attack_rows:
            lb = f"{r['lower_bound']:.6f}" if r["lower_bound"] != "" else "—"
            lines.append(f"| {r['case']} | {r['records_sampled']} | {r['samples']} | {r['seconds']:.1f} | {lb} |")
    if dask_rows:
        lines += ["", "## Dask (benchmarks/dask_speed.py)", "",
                  "| backend | rows | sequences | partitions | seconds | design s | dask / memory | identical output |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in dask_rows:
            lines.append(f"| {r['backend']} | {r['rows']} | {r['sequences']} | {r['partitions']} | {r['seconds']:.2f} | "
                         f"{r['design_seconds']:.2f} | {r['dask_over_memory']:.2f} | {r['identical_output']} |")
    (out / "README.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / 'README.md'}")


if __name__ == "__main__":
    main()
