"""The price of locality (issue 26): certified optima of the local, scan, owner and holder classes.

Usage: python benchmarks/price_of_locality.py [--out DIR] [--quick] [--part fig3,gap,k3,targets]
                                             [--time-limit S] [--recompute-local]

Writes into DIR (default bench-out):

* ``price_of_locality_fig3.csv/.md`` + ``price_of_locality_fig3.png`` -- the paper's Fig. 3 sweep
  (n = 10, p = 1, alpha = 0.01, beta = 0.8, eps from 0.25 to 4): every class's verified utility and
  certified upper bound (scan one-sided: the LP's verified dual; owner: the LP over every mechanism;
  holder: the block design with the window bound);
* ``price_of_locality_gap.csv/.md`` -- the gap-table grid of ``redactopt bench`` (n in {5, 10, 20, 50},
  p at the start and in the middle, six binary chains, eps from 0.1 to 5), one- and two-sided, with
  the coupled-scan bound for two-sided problems and a column ``where`` naming where classes coincide
  and where local publishes nothing but owners can;
* ``price_of_locality_k3.csv/.md`` -- the same for three 3-state chains (n in {5, 8, 20});
* ``price_of_locality_targets.csv/.md`` -- the issue's targets: scan gap and time for n = 10 .. 10^4,
  one- and two-sided; owner/holder exact for n <= 8 (binary) with times; n = 20, 100, 1000 designs
  against the best scan's certified bound.

The local optimum is read from the committed ``benchmarks/results/bench/fig3.csv`` and
``gap_table.csv`` (certified there by ``redactopt bench``) unless ``--recompute-local``.  Every other
number is computed here; every mechanism was judged exactly (``judge.scan.verify_mechanism``).
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402

from redactopt.engine.classes_design import compare_classes  # noqa: E402
from redactopt.model.chain import MarkovChain  # noqa: E402
from redactopt.model.chain import Chain  # noqa: E402
from redactopt.solvers.coupled_lp import coupled_scan_bound  # noqa: E402
from redactopt.engine.class_judge import block_design, design_owner, design_scan  # noqa: E402

HERE = Path(__file__).resolve().parent
FIG3_EPS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)
GAP_CHAINS = ((0.3, 0.4), (0.1, 0.3), (0.01, 0.8), (0.05, 0.05), (0.4, 0.05), (0.7, 0.9))
GAP_EPS = (0.1, 0.5, 1.0, 2.0, 5.0)
K3_CHAINS = {
    "readme": [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]],
    "sticky": [[0.9, 0.05, 0.05], [0.1, 0.8, 0.1], [0.05, 0.15, 0.8]],
    "rotation": [[0.7, 0.25, 0.05], [0.05, 0.7, 0.25], [0.25, 0.05, 0.7]],
}


def _committed_local(name: str) -> dict:
    """Certified local optima of the committed ``redactopt bench`` run, keyed by the grid point."""
    path = HERE / "results" / "bench" / name
    out = {}
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            if name == "fig3.csv":
                out[float(r["eps"])] = (float(r["optimal"]), float(r["optimal_upper_bound"]))
            else:
                key = (int(r["n"]), int(r["p"]), float(r["alpha"]), float(r["beta"]), float(r["eps"]))
                out[key] = (float(r["optimal"]), float(r["upper_bound"]))
    return out


def _classes_row(chain: object, n: int, p: int, eps: float, local: tuple | None, time_limit: float) -> dict:
    """Every class's verified utility and certified bound at one point (local from the committed run if given)."""
    classes = ("scan", "owner", "holder") if local is not None else ("local", "scan", "owner", "holder")
    t0 = time.perf_counter()
    res = {d.cls: d for d in compare_classes(chain, n, eps=eps, p=p, classes=classes, time_limit=time_limit)}
    row: dict = {}
    if local is not None:
        row["local"], row["local_ub"] = local
    else:
        row["local"], row["local_ub"] = res["local"].utility, res["local"].certificate.upper_bound
    prev = row["local"]
    for c in ("scan", "owner", "holder"):
        d = res[c]
        u = max(d.utility, prev)  # a smaller class's verified design belongs to this class too
        row[c], row[f"{c}_ub"], row[f"{c}_gap"] = u, d.certificate.upper_bound, d.certificate.upper_bound - u
        prev = u
    row["coupled_ub"] = (coupled_scan_bound(chain, n, eps=eps, p=p)[0] if 0 < p < n - 1 else row["scan_ub"])
    row["where"] = _where(row)
    row["seconds"] = time.perf_counter() - t0
    return row


def _where(row: dict) -> str:
    """Where classes coincide (within 1e-6) and where local publishes nothing but owners can."""
    tags = []
    if row["local_ub"] <= 1e-12 and row["owner"] > 1e-6:
        tags.append("local 0, owner > 0")
    if row["scan_ub"] <= row["local"] + 1e-6:
        tags.append("local = scan")
    if row["owner_ub"] <= row["scan"] + 1e-6:
        tags.append("scan = owner")
    if row["holder_ub"] <= row["owner"] + 1e-6:
        tags.append("owner = holder")
    return "; ".join(tags)


def part_fig3(out: Path, quick: bool, time_limit: float, recompute: bool) -> list[dict]:
    """The paper's Fig. 3 sweep, every class, with the figure."""
    committed = {} if recompute else _committed_local("fig3.csv")
    rows = []
    for eps in (FIG3_EPS[:3] if quick else FIG3_EPS):
        r = _classes_row(MarkovChain(0.01, 0.8), 10, 0, eps, committed.get(eps), time_limit)
        rows.append({"eps": eps, **r})
        print(f"fig3 eps={eps}: local {r['local']:.4f} scan {r['scan']:.4f} owner {r['owner']:.4f} "
              f"holder {r['holder']:.4f} ({r['seconds']:.1f} s)", flush=True)
    write_table(rows, out / "price_of_locality_fig3", "Price of locality: the Fig. 3 sweep (n = 10, p = 1, "
                "alpha = 0.01, beta = 0.8); utilities verified exactly, *_ub certified bounds over each class")
    _figure(rows, out / "price_of_locality_fig3.png")
    return rows


def _figure(rows: list[dict], path: Path) -> None:
    """The sweep as :func:`redactopt.interface.plots.classes_figure` draws it (``compare --class --plot``)."""
    from redactopt.interface.plots import classes_figure, save_figure

    long = [{"eps": r["eps"], "class": c, "utility": r[c], "upper_bound": r[f"{c}_ub"]}
            for r in rows for c in ("local", "scan", "owner", "holder")]
    fig = classes_figure(long, title="Price of locality, Fig. 3 setting (n = 10, p = 1, α = 0.01, β = 0.8)")
    save_figure(fig, path, force=True)


def part_gap(out: Path, quick: bool, time_limit: float, recompute: bool) -> list[dict]:
    """The gap-table grid of ``redactopt bench``, every class, one- and two-sided."""
    committed = {} if recompute else _committed_local("gap_table.csv")
    ns = (5, 10) if quick else (5, 10, 20, 50)
    chains = GAP_CHAINS[:3] if quick else GAP_CHAINS
    grid = (0.1, 1.0, 5.0) if quick else GAP_EPS
    rows = []
    for n in ns:
        for pos in ("start", "middle"):
            p = 0 if pos == "start" else (n - 1) // 2
            for a, b in chains:
                for eps in grid:
                    r = _classes_row(MarkovChain(a, b), n, p, eps, committed.get((n, p + 1, a, b, eps)), time_limit)
                    rows.append({"n": n, "p": p + 1, "alpha": a, "beta": b, "eps": eps, **r})
                    print(f"gap n={n} p={p + 1} ({a},{b}) eps={eps}: " + " ".join(
                        f"{c} {r[c]:.4f}" for c in ("local", "scan", "owner", "holder")) +
                        f"  scan gap {r['scan_gap']:.1e} ({r['seconds']:.1f} s) {r['where']}", flush=True)
    write_table(rows, out / "price_of_locality_gap", "Price of locality over the gap-table grid (binary chains); "
                "utilities verified exactly, *_ub certified bounds, coupled_ub bounds coupled scans")
    return rows


def part_k3(out: Path, quick: bool, time_limit: float) -> list[dict]:
    """Three 3-state chains, every class (the local optimum designed here)."""
    rows = []
    for name, P in (list(K3_CHAINS.items())[:1] if quick else K3_CHAINS.items()):
        chain = Chain(P)
        for n in ((5,) if quick else (5, 8, 20)):
            for pos in ("start", "middle"):
                p = 0 if pos == "start" else (n - 1) // 2
                for eps in ((1.0,) if quick else (0.5, 1.0, 2.0)):
                    r = _classes_row(chain, n, p, eps, None, time_limit)
                    rows.append({"chain": name, "n": n, "p": p + 1, "eps": eps, **r})
                    print(f"k3 {name} n={n} p={p + 1} eps={eps}: " + " ".join(
                        f"{c} {r[c]:.4f}" for c in ("local", "scan", "owner", "holder")) +
                        f" ({r['seconds']:.1f} s)", flush=True)
    write_table(rows, out / "price_of_locality_k3", "Price of locality, 3-state chains; utilities verified exactly, "
                "*_ub certified bounds")
    return rows


def _scan_target(chain: MarkovChain, n: int, p: int, eps: float, time_limit: float) -> dict:
    t0 = time.perf_counter()
    d = design_scan(chain, n, eps=eps, p=p, time_limit=time_limit)
    dt = time.perf_counter() - t0
    return {"case": "scan", "n": n, "p": p + 1, "alpha": chain.alpha, "beta": chain.beta, "eps": eps,
            "utility": d.utility, "upper_bound": d.certificate.upper_bound, "gap": d.certificate.gap, "seconds": dt,
            "met": bool(d.certificate.gap <= 1e-6 and dt <= 10.0), "detail": f"W {d.info['W']}, boxes {d.info['boxes']}"}


def part_targets(out: Path, quick: bool, time_limit: float) -> list[dict]:
    """The issue's targets: scan gap and time, owner/holder exact, long-sequence designs vs the best scan."""
    rows = []
    for n in ((10, 1000) if quick else (10, 100, 1000, 10_000)):
        for a, b in (GAP_CHAINS[2:3] if quick else GAP_CHAINS):
            for p in (0, (n - 1) // 2):
                rows.append(_scan_target(MarkovChain(a, b), n, p, 1.0, time_limit))
                print(f"target scan n={n} p={p + 1} ({a},{b}): gap {rows[-1]['gap']:.1e} "
                      f"{rows[-1]['seconds']:.2f} s", flush=True)
    for holder in (False, True):
        for n, p in ((8, 0), (8, 3)):
            t0 = time.perf_counter()
            d = design_owner(MarkovChain(0.01, 0.8), n, eps=0.5, p=p, holder=holder)
            dt = time.perf_counter() - t0
            rows.append({"case": "holder exact" if holder else "owner exact", "n": n, "p": p + 1, "alpha": 0.01,
                         "beta": 0.8, "eps": 0.5, "utility": d.utility, "upper_bound": d.certificate.upper_bound,
                         "gap": d.certificate.gap, "seconds": dt, "met": bool(dt <= 60.0), "detail": "LP over every mechanism"})
    for n in ((20,) if quick else (20, 100, 1000)):
        for p in (0, n // 2):
            s = design_scan(MarkovChain(0.01, 0.8), n, eps=0.5, p=p, time_limit=time_limit)
            for holder in (False, True):
                t0 = time.perf_counter()
                d = block_design(MarkovChain(0.01, 0.8), n, eps=0.5, p=p, holder=holder)
                dt = time.perf_counter() - t0
                rows.append({"case": "holder block" if holder else "owner block", "n": n, "p": p + 1, "alpha": 0.01,
                             "beta": 0.8, "eps": 0.5, "utility": d.utility, "upper_bound": d.certificate.upper_bound,
                             "gap": d.certificate.gap, "seconds": dt, "met": bool(d.utility > s.certificate.upper_bound),
                             "detail": f"best scan <= {s.certificate.upper_bound:.8f} (design {s.utility:.8f}); "
                                       f"block {d.info['block']}"})
                print(f"target {rows[-1]['case']} n={n} p={p + 1}: {d.utility:.8f} vs scan bound "
                      f"{s.certificate.upper_bound:.8f}", flush=True)
    write_table(rows, out / "price_of_locality_targets", "Issue 26 targets: scan gap and time, owner/holder "
                "exact and long-sequence designs against the best scan")
    return rows


def main(argv: list[str] | None = None) -> dict:
    """Run the parts asked for and write their tables (module docstring)."""
    ap = parser(__doc__)
    ap.add_argument("--part", default="fig3,gap,k3,targets", help="comma-separated parts to run")
    ap.add_argument("--time-limit", type=float, default=10.0, help="seconds per optimiser (default 10)")
    ap.add_argument("--recompute-local", action="store_true", help="design the local optima here too")
    args = ap.parse_args(argv)
    out = out_dir(args.out)
    parts = set(args.part.split(","))
    done: dict = {}
    if "targets" in parts:
        done["targets"] = part_targets(out, args.quick, args.time_limit)
    if "fig3" in parts:
        done["fig3"] = part_fig3(out, args.quick, args.time_limit, args.recompute_local)
    if "gap" in parts:
        done["gap"] = part_gap(out, args.quick, args.time_limit, args.recompute_local)
    if "k3" in parts:
        done["k3"] = part_k3(out, args.quick, args.time_limit)
    return done


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
