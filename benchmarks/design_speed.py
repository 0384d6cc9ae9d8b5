"""Time and gap of the optimisers (issue 3).

Usage: python benchmarks/design_speed.py [--out DIR] [--quick]

Writes design_speed.csv / .md into DIR (default bench-out).

* certified global optimum (PySCIPOpt) for n = 5..16, one-sided, Fig. 3 setting, eps = 1;
* successive geometric programming (CVXPY) for windows of 10..300 records with the occupancy
  parameters (alpha = 0.003, beta = 0.012) at eps = 0.5, 1, 2, private record in the middle;
* the data-independent MILP for comparison.

Every design is re-verified by the exact evaluator (finalize); the gap is upper bound minus
utility.  Targets: certified n = 10 in <= 5 s; occupancy at eps = 1 designed and verified in <= 10 s.
"""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402

from redactopt.engine.design import design  # noqa: E402
from redactopt.judge.leakage import max_leakage  # noqa: E402
from redactopt.model.chain import MarkovChain  # noqa: E402


def _row(kind: str, n: int, p: int, eps: float, chain: MarkovChain, fn) -> dict:
    t0 = time.perf_counter()
    res = fn()
    dt = time.perf_counter() - t0
    exact = max_leakage(chain, res.redact_prob, res.private).leakage  # independent re-check
    return {"solver": kind, "n": n, "p": p + 1, "alpha": chain.alpha, "beta": chain.beta, "eps": eps,
            "seconds": dt, "utility": res.utility, "upper_bound": res.certificate.upper_bound,
            "gap": res.certificate.gap, "bound_from": res.certificate.solver,
            "leakage": exact, "passed": exact <= eps * (1 + 1e-12)}


design_global = functools.partial(design, method="global")
design_sgp = functools.partial(design, method="sgp")
dim_milp = functools.partial(design, method="dim-milp")


def main(argv: list[str] | None = None) -> list[dict]:
    args = parser(__doc__).parse_args(argv)
    quick = args.quick
    out = out_dir(args.out)
    rows = []
    fig3 = MarkovChain(0.01, 0.8)
    for n in (range(5, 11) if quick else range(5, 17)):
        rows.append(_row("scip-global", n, 0, 1.0, fig3, lambda: design_global(fig3, n, eps=1.0, p=0, time_limit=120)))
        print(rows[-1])
    for n, p in ((5, 2), (7, 3)):
        rows.append(_row("scip-global", n, p, 1.0, fig3, lambda: design_global(fig3, n, eps=1.0, p=p, time_limit=120)))
        print(rows[-1])
    occ = MarkovChain(0.003, 0.012)
    sizes = (10, 50, 100) if quick else (10, 50, 100, 200, 300)
    for eps in ((1.0,) if quick else (0.5, 1.0, 2.0)):
        for n in sizes:
            p = n // 2
            rows.append(_row("cvxpy-sgp", n, p, eps, occ, lambda: design_sgp(occ, n, eps=eps, p=p)))
            print(rows[-1])
            rows.append(_row("ortools-dim-milp", n, p, eps, occ, lambda: dim_milp(occ, n, eps=eps, p=p)))
    for r in rows:
        print(f"{r['solver']:>16} n={r['n']:>4} p={r['p']:>4} eps={r['eps']:<4} {r['seconds']:8.2f} s  "
              f"utility {r['utility']:.5f}  bound {r['upper_bound']:.5f} ({r['bound_from']})  gap {r['gap']:.2e}  "
              f"leakage {r['leakage']:.6f} {'ok' if r['passed'] else 'ABOVE EPS'}")
    write_table(rows, out / "design_speed", "Design: time and gap (benchmarks/design_speed.py)")
    return rows


if __name__ == "__main__":
    main()
