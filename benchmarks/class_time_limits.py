"""Time limits of class designs (issue 38): every ``design --class`` within 10 % + 1 s of its --time-limit.

Usage: python benchmarks/class_time_limits.py [--out DIR] [--quick]

Writes class_time_limits.csv / .md into DIR (default bench-out).

For binary and k = 3 chains, short and long sequences, each class (scan, owner, holder) is designed
with time limits of 2 and 10 s (``--quick``: 2 s only), and the issue's case -- k = 3, n = 6, a
transition of 1e-6, ``--class holder --time-limit 60``, which ran for more than 15 minutes -- once at
60 s.  Each row gives the wall time, whether it is within ``1.1 T + 1`` s, the verified utility, the
certified bound and the candidate returned.  Every design is verified exactly by ``design_class``
itself (the judge); the utilities of one problem grow along the classes within each run.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402

from redactopt.engine.classes_design import design_class  # noqa: E402
from redactopt.model.chain import Chain, MarkovChain  # noqa: E402

K_ISSUE = Chain([[0.999998, 1e-06, 1e-06], [0.5, 0.25, 0.25], [0.5, 0.25, 0.25]])
K3 = Chain([[0.8, 0.1, 0.1], [0.2, 0.6, 0.2], [0.3, 0.3, 0.4]])
CASES = [("k=3 issue chain", K_ISSUE, 6, 0, 0.01), ("k=3", K3, 7, 3, 0.5), ("k=3", K3, 50, 25, 1.0),
         ("k=3", K3, 300, 150, 2.0), ("binary 0.1/0.3", MarkovChain(0.1, 0.3), 9, 4, 1.0),
         ("binary 0.05/0.05", MarkovChain(0.05, 0.05), 1000, 500, 1.0)]


def main(argv: list[str] | None = None) -> list[dict]:
    args = parser(__doc__).parse_args(argv)
    out = out_dir(args.out)
    rows = []
    runs = [(c, T, cls) for T in ((2.0,) if args.quick else (2.0, 10.0)) for c in CASES
            for cls in ("scan", "owner", "holder")]
    if not args.quick:
        runs.append((CASES[0], 60.0, "holder"))
    for (name, chain, n, p, eps), T, cls in runs:
        t0 = time.perf_counter()
        d = design_class(chain, n, eps=eps, p=p, cls=cls, time_limit=T)
        dt = time.perf_counter() - t0
        rows.append({"chain": name, "n": n, "private": p + 1, "eps": eps, "class": cls, "time_limit": T,
                     "seconds": round(dt, 2), "within": dt <= 1.1 * T + 1.0, "utility": d.utility,
                     "upper_bound": d.certificate.upper_bound, "best": d.info.get("best")})
        r = rows[-1]
        print(f"{name:>18} n={n:<5} {cls:<6} T={T:>4.0f}: {dt:6.2f} s {'ok ' if r['within'] else 'OVER'} "
              f"utility {d.utility:.6f} <= {d.certificate.upper_bound:.6f} ({r['best']})", flush=True)
    late = [r for r in rows if not r["within"]]
    print(f"{len(rows) - len(late)} of {len(rows)} within 10 % + 1 s of the time limit")
    write_table(rows, out / "class_time_limits",
                "Class designs under time limits (benchmarks/class_time_limits.py): wall time <= 1.1 T + 1 s")
    return rows


if __name__ == "__main__":
    main()
