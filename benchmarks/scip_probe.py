"""Timing of the certified global optimum (``design(..., method="global")``).

Usage: python benchmarks/scip_probe.py [--out DIR] [--quick] [--random K]

Writes scip_probe.csv / .md into DIR (default bench-out): for every case the
wall time, SCIP status and nodes, utility, exact leakage and certified gap.  The fixed
cases are the issue's target (alpha=0.01, beta=0.8, eps=1, p=1 one-sided, n = 5..12;
target <= 5 s at n = 10) and a few two-sided windows; ``--random K`` adds K random
hard-looking points (alpha << beta, a long run of partly published records).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402

from redactopt.model.chain import MarkovChain  # noqa: E402
from redactopt.engine.design import design  # noqa: E402


def _row(alpha: float, beta: float, eps: float, n: int, p: int, time_limit: float) -> dict:
    t = time.perf_counter()
    res = design(MarkovChain(alpha, beta), n, eps=eps, p=p, method="global", time_limit=time_limit)
    seconds = time.perf_counter() - t
    return {
        "alpha": alpha,
        "beta": beta,
        "eps": eps,
        "n": n,
        "p (1-based)": p + 1,
        "seconds": round(seconds, 3),
        "status": res.info.get("status", "closed-form"),
        "nodes": res.info.get("nodes", 0),
        "utility": round(res.utility, 8),
        "upper_bound": round(res.certificate.upper_bound, 8),
        "gap": float(f"{res.certificate.gap:.2e}"),
        "leakage": round(res.leakage, 10),
        "start": res.info.get("start", ""),
        "start_utility": round(res.info.get("start_utility", float("nan")), 8),
        "repair": str(res.info.get("repair")),
    }


def main(argv: list[str] | None = None) -> list[dict]:
    ap = parser(__doc__)
    ap.add_argument("--random", type=int, default=0, metavar="K", help="also K random hard-looking points")
    args = ap.parse_args(argv)
    quick = args.quick
    n_random = args.random
    out = out_dir(args.out)
    time_limit = 60.0 if quick else 300.0
    cases = [(0.01, 0.8, 1.0, n, 0) for n in range(5, 13)]
    cases += [(0.01, 0.8, 1.0, 6, 2), (0.2, 0.3, 0.5, 7, 3), (0.7, 0.2, 0.6, 8, 3)]
    if not quick:
        cases += [(0.01, 0.8, 1.0, 8, 3), (0.01, 0.8, 0.5, 12, 0)]
    rng = np.random.default_rng(2024)
    for _ in range(n_random):
        alpha = float(rng.uniform(0.005, 0.1))
        beta = float(rng.uniform(0.3, 0.95))
        eps = float(rng.uniform(0.3, 2.0))
        n = int(rng.integers(8, 13))
        two_sided = rng.random() < 0.3
        p = int(rng.integers(1, min(n - 1, 4))) if two_sided else 0
        cases.append((round(alpha, 4), round(beta, 4), round(eps, 4), n, p))
    rows = []
    for case in cases:
        row = _row(*case, time_limit=time_limit)
        print(row, flush=True)
        rows.append(row)
    write_table(rows, out / "scip_probe", "Certified global optimum with SCIP: timings")
    return rows


if __name__ == "__main__":
    main()
