"""Exact O(n) leakage versus brute force over all 3^n outputs, and records per second.

Usage: python benchmarks/leakage_speed.py [--out DIR] [--quick]

Writes leakage_speed.csv / .md into DIR (default bench-out).  Target (issue 2):
>= 1e7 records/s at n = 1e6, i.e. one evaluation in <= 0.1 s.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402

from redactopt.model.chain import MarkovChain  # noqa: E402
from redactopt.judge.leakage import leakage, leakage_bruteforce  # noqa: E402


def _best(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times), float(np.median(times))


def main(argv: list[str] | None = None) -> list[dict]:
    args = parser(__doc__).parse_args(argv)
    quick = args.quick
    out = out_dir(args.out)
    rng = np.random.default_rng(0)
    chain = MarkovChain(0.01, 0.8)
    rows = []
    for n in (8, 9, 10, 11, 12):
        q = rng.uniform(0.0, 1.0, (n, 2))
        p = n // 2
        q[p] = 1.0
        fast, _ = _best(lambda: leakage(chain, q, p), 5)
        brute, _ = _best(lambda: leakage_bruteforce(chain, q, p), 1 if n >= 11 else 3)
        rows.append({"case": "vs brute force", "n": n, "exact_s": fast, "exact_median_s": fast,
                     "brute_force_s": brute, "speedup": brute / fast, "records_per_s": n / fast})
    sizes = (10**4, 10**5) if quick else (10**4, 10**5, 10**6)
    for n in sizes:
        q = rng.uniform(0.3, 1.0, (n, 2))  # every record redactable: the scan runs to the end
        p = n // 2
        q[p] = 1.0
        leakage(chain, q, p)  # warm-up
        best, med = _best(lambda: leakage(chain, q, p), 7)
        rows.append({"case": "throughput", "n": n, "exact_s": best, "exact_median_s": med,
                     "brute_force_s": float("nan"), "speedup": float("nan"), "records_per_s": n / best})
    for r in rows:
        print(f"{r['case']:>15}  n={r['n']:>8}  exact {r['exact_s'] * 1e3:9.3f} ms (median "
              f"{r['exact_median_s'] * 1e3:8.3f})  brute {r['brute_force_s'] * 1e3:9.1f} ms  "
              f"speedup {r['speedup']:8.1f}  {r['records_per_s']:.3g} records/s")
    write_table(rows, out / "leakage_speed", "Exact leakage: speed (benchmarks/leakage_speed.py)")
    return rows


if __name__ == "__main__":
    main()
