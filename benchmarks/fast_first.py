"""Issue 37: fast first and time limits that are limits, measured from the command line.

Usage: python benchmarks/fast_first.py [--out DIR] [--quick] [--part release,kstate,scan,gap]

Writes fast_first_<part>.csv / .md into DIR (default bench-out).  Every run is a fresh process
(``python -m redactopt ...``) started by a fresh wrapper process, so its wall time includes the
start-up and its peak memory (``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` of the wrapper: the
largest resident set among the command and its worker processes) is its own.

* ``release``: the issue's categorical release (``benchmarks/meter_table.py``: 6 homes x 2,880
  minutes, ``--protect occupied,power_w --bin power_w:100,300``, 33 private rows in short opt-outs,
  ``--order-by ts``) with the default method, ``--method dim`` and ``--method optimal --time-limit
  T``; and one home (its chain fitted on the three homes without private rows, ``--fit-on``).
  Targets: 6 homes <= 20 s and <= 500 MB, one home <= 5 s, the default's release identical to or
  better than ``dim``'s (``same_as_dim``: the released files byte for byte).
* ``kstate``: k = 3, n = 8, two-sided (the chain of ``kstate_certify_sweep.py``'s random family,
  seed 1, p = 1): the default ``optimal`` and ``--certify-time 30``: time, gap, bound's solver.
* ``scan``: ``design --class scan`` of the issue's chain at n = 300, 600, 2,880 with ``--time-limit
  10`` (target: within 1.1 T + 1 s, start-up included).
* ``gap``: scan designs at n = 2,880 and 10^4, one private record in the middle, ``--time-limit 10``,
  for the fitted chains of the occupancy data and of the 6-home table: the certified gap reached
  (target <= 1e-6).
"""

from __future__ import annotations

import filecmp
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402
from meter_table import make_meter  # noqa: E402

#: Runs each command in a fresh wrapper: prints wall seconds and the peak RSS (KB) of its descendants.
_WRAP = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
         "r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True); "
         "dt = time.perf_counter() - t; "
         "sys.stdout.write(repr((dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode, "
         "r.stdout, r.stderr)))")

RELEASE = ["--protect", "occupied,power_w", "--bin", "power_w:100,300", "--by", "home", "--private-column", "optout",
           "--eps", "1", "--order-by", "ts", "--seed", "1", "--quiet", "--force"]
SCAN_CHAIN = ("0.00773908", "0.0024669")
#: Fitted chains (alpha, beta): the occupancy data's (redactopt fit of the whole training file, and on the rows
#: the README's release fits on) and the 6-home table's occupancy column (fit --by home --order-by ts).
GAP_CHAINS = {"occupancy (whole file)": ("0.00311818", "0.0115741"),
              "occupancy (release fit)": ("0.00205404", "0.0104839"),
              "6-home table": ("0.00469187", "0.00791471")}


def run(args: list[str]) -> dict:
    """One command in a fresh wrapper: seconds, peak MB, exit code, stdout, stderr."""
    out = subprocess.run([sys.executable, "-c", _WRAP, sys.executable, "-m", "redactopt", *args],
                         capture_output=True, text=True, check=True).stdout
    dt, kb, rc, so, se = eval(out)  # noqa: S307 - our own wrapper's repr
    return {"seconds": round(dt, 2), "peak_mb": round(kb / 1024.0, 1), "rc": rc, "stdout": so, "stderr": se}


def _release_part(tmp: Path, quick: bool) -> list[dict]:
    meter = tmp / "meter.csv"
    df = make_meter()
    df.to_csv(meter, index=False)
    one = tmp / "one.csv"
    df[df["home"] == "h02"].to_csv(one, index=False)
    public = tmp / "public.csv"
    df[df["home"].isin(["h01", "h03", "h06"])].to_csv(public, index=False)
    cases = [("one home", one, ["--fit-on", str(public)]), ("6 homes", meter, [])]
    methods = [("default", []), ("dim", ["--method", "dim"])]
    if not quick:
        methods.append(("optimal, --time-limit 20", ["--method", "optimal", "--time-limit", "20"]))
    rows = []
    for name, src, extra in cases:
        outs = {}
        for mname, margs in methods:
            dest = tmp / f"{src.stem}-{mname.split(',')[0]}.csv"
            rep = dest.with_suffix(".json")
            r = run(["apply", str(src), *RELEASE, *extra, *margs, "--out", str(dest), "--report", str(rep)])
            if r["rc"] != 0:
                raise SystemExit(f"{name} {mname}: exit {r['rc']}: {r['stderr'][-2000:]}")
            report = json.loads(rep.read_text())
            outs[mname] = dest
            rows.append({"table": name, "method": mname, "seconds": r["seconds"], "peak_mb": r["peak_mb"],
                         "redacted": report["utility"]["redacted"], "utility": report["utility"]["expected"],
                         "leakage": report["leakage"]["max"], "method_used": report["method"],
                         "same_as_dim": None})
            print(f"{name:>9} {mname:>26}: {r['seconds']:7.2f} s {r['peak_mb']:7.1f} MB  redacted "
                  f"{report['utility']['redacted']}  utility {report['utility']['expected']:.6f}", flush=True)
        for row in rows:
            if row["table"] == name:
                row["same_as_dim"] = filecmp.cmp(outs[row["method"]], outs["dim"], shallow=False)
    return rows


def _kstate_part(tmp: Path) -> list[dict]:
    import numpy as np

    rng = np.random.default_rng(1)  # kstate_certify_sweep.family_chain("random", 1)
    R = rng.random((3, 3))
    R /= R.sum(axis=1, keepdims=True)
    T = ";".join(",".join(repr(float(v)) for v in row) for row in R)
    rows = []
    for name, extra in (("default", []), ("--certify-time 30", ["--certify-time", "30"])):
        r = run(["design", "--transition", T, "--n", "8", "--private", "2", "--eps", "1", "--format", "json",
                 "--quiet", *extra])
        d = json.loads(r["stdout"])
        c = d["certificate"]
        rows.append({"run": name, "seconds": r["seconds"], "utility": d["utility"], "upper_bound": c["upper_bound"],
                     "gap": c["gap"], "bound_by": c["solver"], "stopped": c.get("stopped")})
        print(f"k=3 n=8 p=2 {name:>18}: {r['seconds']:6.2f} s  utility {d['utility']:.9f}  gap {c['gap']:.3g} "
              f"({c['solver']})", flush=True)
    return rows


def _scan_part(quick: bool) -> list[dict]:
    rows = []
    T = 10.0
    for n in ((300, 2880) if quick else (300, 600, 2880)):
        r = run(["design", "--class", "scan", "--n", str(n), "--eps", "1", "--private", "181", "--alpha",
                 SCAN_CHAIN[0], "--beta", SCAN_CHAIN[1], "--time-limit", str(T), "--format", "json"])
        d = json.loads(r["stdout"])
        c = d["certificate"]
        rows.append({"n": n, "time_limit": T, "seconds": r["seconds"], "within": r["seconds"] <= 1.1 * T + 1.0,
                     "utility": d["utility"], "upper_bound": c["upper_bound"], "gap": c["gap"],
                     "stopped": c.get("stopped"), "peak_mb": r["peak_mb"]})
        print(f"scan n={n:<5} T={T:g}: {r['seconds']:6.2f} s ({'ok' if rows[-1]['within'] else 'OVER'})  utility "
              f"{d['utility']:.6f}  gap {c['gap']:.3g}", flush=True)
    return rows


def _gap_part(quick: bool) -> list[dict]:
    rows = []
    T = 10.0
    for name, (a, b) in GAP_CHAINS.items():
        for n in ((2880,) if quick else (2880, 10000)):
            r = run(["design", "--class", "scan", "--n", str(n), "--eps", "1", "--private", str(n // 2), "--alpha", a,
                     "--beta", b, "--time-limit", str(T), "--format", "json"])
            d = json.loads(r["stdout"])
            c = d["certificate"]
            rows.append({"chain": name, "alpha": a, "beta": b, "n": n, "private": n // 2, "seconds": r["seconds"],
                         "utility": d["utility"], "upper_bound": c["upper_bound"], "gap": c["gap"],
                         "target_met": c["gap"] <= 1e-6 and r["seconds"] <= 10.0})
            print(f"scan gap {name:>24} n={n:<6}: {r['seconds']:6.2f} s  gap {c['gap']:.3g}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> dict[str, list[dict]]:
    ap = parser(__doc__)
    ap.add_argument("--part", default="release,kstate,scan,gap", help="comma-separated parts (default: all)")
    args = ap.parse_args(argv)
    out = out_dir(args.out)
    parts = args.part.split(",")
    tmp = Path(tempfile.mkdtemp(prefix=".fast_first.", dir=out))
    results: dict[str, list[dict]] = {}
    try:
        if "release" in parts:
            results["release"] = _release_part(tmp, args.quick)
            write_table(results["release"], out / "fast_first_release",
                        "Categorical release of the issue-37 table: default (fast first) against dim and optimal")
        if "kstate" in parts:
            results["kstate"] = _kstate_part(tmp)
            write_table(results["kstate"], out / "fast_first_kstate",
                        "k = 3, n = 8, two-sided: the default optimal certifies (SCIP while the gap is open)")
        if "scan" in parts:
            results["scan"] = _scan_part(args.quick)
            write_table(results["scan"], out / "fast_first_scan",
                        "design --class scan --time-limit 10 (issue's chain): wall time, start-up included")
        if "gap" in parts:
            results["gap"] = _gap_part(args.quick)
            write_table(results["gap"], out / "fast_first_gap",
                        "Scan designs, one private record, --time-limit 10: certified gap reached (target 1e-6)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results


if __name__ == "__main__":
    main()
