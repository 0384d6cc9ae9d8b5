"""Certified optimum for any private position (issue 11): time and certified gap of the default design.

Usage: python benchmarks/optimum_speed.py [--out DIR] [--quick] [--points N] [--seed S]

Writes optimum_speed.csv / .md into DIR (default bench-out).

* ``random``: points with n <= 20, p anywhere, alpha and beta log-uniform in [1e-3, 0.999]
  (half of them with alpha + beta > 1, alpha > beta or not), eps log-uniform in [0.05, 5]:
  the default ``design`` (method optimal) against the targets gap <= 1e-4 in <= 10 s.
* ``issue``: the issue's points (alpha = 0.01, beta = 0.8): n = 10, p = 5, eps = 0.5 and 1;
  n = 20, p = 10, eps = 1.
* ``occupancy``: n = 400, p = 200, alpha = 0.003, beta = 0.012, eps = 1: gap <= 1e-3 in <= 60 s.
* ``before``: on the same points, what the default did before the frontier (the best verified
  of the DIM window, calibrated 3R and successive GP -- SCIP where it applied -- certified
  by Lemma 2's bound or SCIP's dual bound), run in the same process: the gap ratio.
* ``global60``: ``--method global --time-limit 60`` on the issue's points (never better).

Every design is re-verified here by the exact evaluator (and in rational arithmetic, n <= 64).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402

from redactopt.engine.design import design  # noqa: E402
from redactopt.judge.exact import certify_exact  # noqa: E402
from redactopt.judge.lemma2 import lemma2_upper_bound  # noqa: E402
from redactopt.judge.leakage import max_leakage  # noqa: E402
from redactopt.model.chain import MarkovChain  # noqa: E402


def _checked(res, chain, eps) -> bool:
    leak = max_leakage(chain, res.redact_prob, res.private).leakage
    if res.n <= 64:
        return certify_exact(chain.alpha, chain.beta, np.asarray(res.redact_prob).tolist(), list(res.private),
                             eps).status == "certified"
    return leak <= eps


def _default(kind, chain, n, p, eps, time_limit=60.0) -> dict:
    t0 = time.perf_counter()
    res = design(chain, n, eps=eps, p=p, time_limit=time_limit)
    dt = time.perf_counter() - t0
    return {"kind": kind, "n": n, "p": p + 1, "alpha": chain.alpha, "beta": chain.beta, "eps": eps,
            "seconds": dt, "utility": res.utility, "upper_bound": res.certificate.upper_bound,
            "gap": res.certificate.gap, "bound_from": res.certificate.solver, "source": res.info.get("source"),
            "verified": _checked(res, chain, eps)}


def _before(chain, n, p, eps) -> dict:
    """The previous default: best of dim, calibrated 3R and SGP (SCIP on small problems)."""
    t0 = time.perf_counter()
    small = n <= (12 if p in (0, n - 1) else 8)
    results = [design(chain, n, eps=eps, p=p, method=m) for m in ("dim", "3r-calibrated", "global" if small else "sgp")]
    best = max(results, key=lambda r: r.utility)
    bound = lemma2_upper_bound(chain, n, eps=eps, private=[p])
    if small:
        bound = min(bound, results[-1].certificate.upper_bound)
    return {"before_seconds": time.perf_counter() - t0, "before_utility": best.utility,
            "before_gap": max(0.0, bound - best.utility)}


def _points(count: int, seed: int) -> list[tuple[MarkovChain, int, int, float]]:
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        a, b = np.exp(rng.uniform(math.log(1e-3), math.log(0.999), 2))
        if len(out) % 2 and a + b < 1.0:  # every other point oscillating
            a, b = 1.0 - a * 0.999, 1.0 - b * 0.999
        n = int(rng.integers(2, 21))
        p = int(rng.choice([0, n - 1, int(rng.integers(0, n)), (n - 1) // 2]))
        eps = float(math.exp(rng.uniform(math.log(0.05), math.log(5.0))))
        out.append((MarkovChain(float(min(a, 0.999)), float(min(b, 0.999))), n, p, eps))
    return out


def main(argv: list[str] | None = None) -> list[dict]:
    ap = parser(__doc__)
    ap.add_argument("--points", type=int, default=40, help="random points (default 40)")
    ap.add_argument("--seed", type=int, default=2026, help="seed of the random points (default 2026)")
    args = ap.parse_args(argv)
    out = out_dir(args.out)
    rows = []
    fig3 = MarkovChain(0.01, 0.8)
    issue = [(fig3, 10, 4, 0.5), (fig3, 10, 4, 1.0), (fig3, 20, 9, 1.0)]
    for chain, n, p, eps in issue + _points(args.points // (4 if args.quick else 1), args.seed):
        kind = "issue" if (chain, n, p, eps) in issue else "random"
        row = _default(kind, chain, n, p, eps)
        row.update(_before(chain, n, p, eps))
        row["gap_ratio"] = row["before_gap"] / row["gap"] if row["gap"] > 0 else math.inf
        rows.append(row)
        print(f"{kind:>9} n={n:>3} p={p + 1:>3} a={chain.alpha:.4g} b={chain.beta:.4g} eps={eps:.3g}: "
              f"{row['seconds']:6.2f} s gap {row['gap']:.2e} ({row['bound_from']}) before {row['before_gap']:.2e}",
              flush=True)
    occ = MarkovChain(0.003, 0.012)
    row = _default("occupancy", occ, 400, 199, 1.0)
    row.update(_before(occ, 400, 199, 1.0))
    row["gap_ratio"] = row["before_gap"] / row["gap"] if row["gap"] > 0 else math.inf
    rows.append(row)
    print(f"occupancy n=400: {row['seconds']:.1f} s gap {row['gap']:.2e} before {row['before_gap']:.2e}", flush=True)
    for chain, n, p, eps in issue[: 1 if args.quick else 3]:
        t0 = time.perf_counter()
        g = design(chain, n, eps=eps, p=p, method="global", time_limit=60.0)
        rows.append({"kind": "global60", "n": n, "p": p + 1, "alpha": chain.alpha, "beta": chain.beta, "eps": eps,
                     "seconds": time.perf_counter() - t0, "utility": g.utility,
                     "upper_bound": g.certificate.upper_bound, "gap": g.certificate.gap,
                     "bound_from": g.certificate.solver, "source": "global", "verified": _checked(g, chain, eps)})
        print(f" global60 n={n} p={p + 1} eps={eps}: utility {g.utility:.7f} gap {g.certificate.gap:.2e}", flush=True)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    rows = [{k: r.get(k, math.nan) for k in keys} for r in rows]
    small = [r for r in rows if r["kind"] in ("random", "issue")]
    print(f"\nn <= 20: {len(small)} points, max gap {max(r['gap'] for r in small):.2e}, "
          f"max seconds {max(r['seconds'] for r in small):.1f}, all verified {all(r['verified'] for r in rows)}, "
          f"median gap ratio before/now {float(np.median([r['gap_ratio'] for r in small])):.3g}")
    write_table(rows, out / "optimum_speed", "Certified optimum for any p: time and gap (benchmarks/optimum_speed.py)")
    return rows


if __name__ == "__main__":
    main()
