"""Scans of a run of private records (issue 34, item 4): time, utility, certified bound and gap.

For every case ``redactopt.engine.classes_design.compare_classes(..., p=run, classes=("local", "scan"))``
designs the run's local design (the run decomposition, docs/mathematics.md §7c) and the run's scan
(docs/mathematics.md §7d), each verified exactly about every record of the run, with its certified
bound.  Chains are the occupancy-like slowly mixing binary chains (alpha, beta between 0.0025 and 0.008:
the fitted occupancy chain has alpha ~ 0.005, beta ~ 0.007 per minute), runs of 5 to 60 adjacent
records in the middle of the sequence, eps = 1.  Columns: seconds (the whole compare, both classes),
the local and scan utilities and bounds, the scan's gap (absolute utility and in records), the boxes
of the split search, the side windows W, what the bound is by (the run's search, or a run record's
one-record scan bound: a relaxation), the seconds per side program, and the judge's verdict.
``--time-limit`` per case of n = 100 (default 60 s), ``--large-time-limit`` beyond (default 120 s);
``--quick``: n = 100 only.

    python benchmarks/run_scan.py --out benchmarks/results
"""

from __future__ import annotations

import time

from _common import machine, out_dir, parser, write_table

from redactopt.engine.classes_design import compare_classes
from redactopt.model.chain import MarkovChain

CHAINS = ((0.0025, 0.005), (0.005, 0.008), (0.008, 0.008))
CASES = [(100, r, c) for r in (5, 20, 60) for c in CHAINS]
CASES += [(1000, r, c) for r in (5, 60) for c in CHAINS[:2]]
CASES += [(2880, r, c) for r in (20, 60) for c in CHAINS[1:2]]


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per case of n = 100 (default 60)")
    ap.add_argument("--large-time-limit", type=float, default=120.0,
                    help="seconds per case of n >= 1000 (default 120: a side's program takes 0.2-1.3 s there)")
    ap.add_argument("--eps", type=float, default=1.0, help="budget in nats (default 1)")
    args = ap.parse_args()
    out = out_dir(args.out)
    cases = [c for c in CASES if c[0] == 100] if args.quick else CASES
    rows = []
    for n, r, (a, b) in cases:
        first = n // 2 - r // 2
        run = list(range(first, first + r))
        t0 = time.perf_counter()
        limit = args.time_limit if n < 1000 else args.large_time_limit
        local, scan = compare_classes(MarkovChain(a, b), n, eps=args.eps, p=run, classes=("local", "scan"),
                                      time_limit=limit)
        secs = time.perf_counter() - t0
        gap = scan.certificate.gap
        row = {"n": n, "alpha": a, "beta": b, "run": f"{first + 1}-{first + r}", "records": r, "eps": args.eps,
               "time_limit": limit,
               "seconds": round(secs, 1), "local_utility": round(local.utility, 8),
               "local_bound": round(local.certificate.upper_bound, 8), "scan_utility": round(scan.utility, 8),
               "scan_bound": round(scan.certificate.upper_bound, 8), "gap": f"{gap:.2e}",
               "gap_records": round(gap * n, 4), "stopped": scan.certificate.stopped,
               "bound_by": scan.certificate.solver, "s_per_program": round(scan.info.get("seconds_per_program", 0.0), 3),
               "best": scan.info.get("best"), "boxes": scan.info.get("boxes"),
               "W": "/".join(str(v) for v in (scan.info.get("W") or {}).values()), "verdict": scan.verdict}
        rows.append(row)
        print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    title = (f"Scans of a run of private records: time, utility, bound, gap (eps = {args.eps}, time limit "
             f"{args.time_limit:g} s per case of n = 100, {args.large_time_limit:g} s beyond)")
    write_table(rows, out / "run_scan", title)
    print(machine())


if __name__ == "__main__":
    main()
