"""The categorical release streamed (issue 25): time and peak memory before and after, in one run.

Usage: python benchmarks/states_stream.py [--out DIR] [--quick] [--before REV]

Writes states_stream.csv / .md into DIR (default bench-out) and prints the table.  BEFORE is
commit ``--before`` (default ``ce1f17e``: a categorical release read the table into pandas and
wrote it back), AFTER the working tree (the same passes as a 0/1 column, chunk by chunk, through
a ``StatesCodec``); both are laid out as import roots as ``benchmarks/one_model.py`` does, and
every command runs in a fresh ``python -m redactopt`` process whose peak resident memory (its
own, and its children's: the design pool) is read from ``resource`` when it exits.

Cases (the same data and arguments for both trees; seeded, so the releases can be compared):

* one categorical column of ``n`` rows of a sticky three-state chain, 60 private records in the
  middle, the chain fitted on the rows the release publishes with certainty: CSV to CSV (every
  column written: the byte splice after) and CSV to Parquet, for ``n`` = 10^6, 4·10^6, 10^7;
* two columns protected together, one of them binned (``--protect level,load --bin load:3,6``),
  at 10^6 rows.

``same output`` says whether the two trees wrote identical output (bytes for CSV; the values for
Parquet): the same redactions, drawn from the same seeded streams.  No issue sets a number here beyond "streams": the
target is peak memory flat in ``n`` after (at most 1.5x from 10^6 to 10^7 rows).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import out_dir, parser, write_table  # noqa: E402
from one_model import _after_desc, _before_tree, _build_root, _env  # noqa: E402

P = np.array([[0.9, 0.07, 0.03], [0.05, 0.9, 0.05], [0.02, 0.08, 0.9]])
LABELS = np.array(["low", "mid", "high"])

#: Runs the command line in this process and writes its peak memory (self and children, MB) and exit code.
_RUN = """
import json, resource, runpy, sys
out = sys.argv[1]
sys.argv = ["redactopt"] + sys.argv[2:]
code = 0
try:
    runpy.run_module("redactopt", run_name="__main__")
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
finally:
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    with open(out, "w") as fh:
        json.dump({"peak_mb": peak / 1024.0, "code": code}, fh)
sys.exit(code)
"""


def make_table(path: Path, n: int, seed: int = 0) -> None:
    """``t,level,load``: a sticky three-state chain (runs drawn whole: a geometric holding time, then a jump),
    and a number in [0, 10) that follows the level."""
    rng = np.random.default_rng(seed)
    states = np.empty(n, dtype=np.int8)
    at, x = 0, 0
    while at < n:
        stay = int(rng.geometric(1.0 - P[x, x]))
        states[at:at + stay] = x
        at += stay
        others = [j for j in range(3) if j != x]
        w = P[x, others] / P[x, others].sum()
        x = others[int(rng.choice(2, p=w))]
    load = np.round(states * 3.0 + rng.random(n) * 3.0, 2)
    table = pa.table({"t": np.arange(n), "level": LABELS[states], "load": load})
    with open(path, "wb") as fh:  # a plain header (pyarrow would quote it)
        fh.write(b"t,level,load\n")
        pacsv.write_csv(table, fh, pacsv.WriteOptions(include_header=False, quoting_style="none"))


def run(root: Path, argv: list[str], cwd: Path) -> tuple[float, float, int, str]:
    stats = cwd / "stats.json"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _RUN, str(stats), *argv], env=_env(root), cwd=cwd,
                          capture_output=True, text=True, timeout=3600)
    seconds = time.perf_counter() - t0
    s = json.loads(stats.read_text()) if stats.exists() else {"peak_mb": float("nan"), "code": proc.returncode}
    return seconds, s["peak_mb"], proc.returncode, (proc.stderr.strip().splitlines() or [""])[-1][:200]


def _same(a: Path, b: Path) -> bool:
    if a.suffix == ".csv":
        return a.read_bytes() == b.read_bytes()
    return pq.read_table(a).to_pandas().astype(str).equals(pq.read_table(b).to_pandas().astype(str))


def main(argv: list[str] | None = None) -> list[dict]:
    ap = parser(__doc__)
    ap.add_argument("--before", default="ce1f17e", help="the commit to compare with (default: ce1f17e)")
    args = ap.parse_args(argv)
    out = out_dir(args.out)
    sizes = [10**5, 4 * 10**5] if args.quick else [10**6, 4 * 10**6, 10**7]
    work = Path(tempfile.mkdtemp(prefix="states_stream."))
    rows: list[dict] = []
    try:
        roots = {"before": work / "root-before", "after": work / "root-after"}
        before_tree = work / "tree-before"
        desc = {"before": _before_tree(args.before, before_tree), "after": _after_desc()}
        _build_root(before_tree, roots["before"])
        _build_root(HERE.parent, roots["after"])
        print(f"before: {desc['before']}\nafter : {desc['after']}")
        cases = []
        for n in sizes:
            src = work / f"levels{n}.csv"
            make_table(src, n)
            mid = n // 2
            priv = f"{mid + 1}-{mid + 60}"
            base = ["apply", str(src), "--column", "level", "--categorical", "--private", priv, "--eps", "1",
                    "--seed", "1", "--quiet"]
            cases.append((n, "one column, CSV -> CSV (keep all)", base + ["--keep-all", "--out", "out.csv"], "out.csv"))
            cases.append((n, "one column, CSV -> Parquet", base + ["--out", "out.parquet"], "out.parquet"))
            if n == sizes[0]:
                cases.append((n, "level,load protected together, load binned",
                              ["apply", str(src), "--protect", "level,load", "--bin", "load:3,6", "--private", priv,
                               "--eps", "1", "--seed", "1", "--quiet", "--keep-all", "--out", "out.csv"], "out.csv"))
        for n, what, cmd, name in cases:
            res = {}
            for tree in ("before", "after"):
                cwd = work / f"{tree}-{len(rows)}"
                cwd.mkdir()
                seconds, peak, code, err = run(roots[tree], cmd, cwd)
                res[tree] = {"seconds": seconds, "peak": peak, "code": code, "err": err, "out": cwd / name}
            same = all(r["code"] == 0 for r in res.values()) and _same(res["before"]["out"], res["after"]["out"])
            row = {"rows": n, "case": what,
                   "before s": round(res["before"]["seconds"], 2), "after s": round(res["after"]["seconds"], 2),
                   "before MB": round(res["before"]["peak"]), "after MB": round(res["after"]["peak"]),
                   "same output": same if all(r["code"] == 0 for r in res.values()) else
                   "; ".join(f"{t}: exit {r['code']} {r['err']}" for t, r in res.items() if r["code"])}
            rows.append(row)
            print(row, flush=True)
            for r in res.values():
                shutil.rmtree(r["out"].parent, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    first = {r["case"]: r for r in rows if r["rows"] == sizes[0]}
    notes = [f"before: {desc['before']}", f"after: {desc['after']}"]
    for r in rows:
        if r["rows"] == sizes[-1] and r["case"] in first:
            growth = r["after MB"] / max(first[r["case"]]["after MB"], 1)
            notes.append(f"{r['case']}: after, peak memory x{growth:.2f} from {sizes[0]} to {sizes[-1]} rows "
                         f"({'met' if growth <= 1.5 else 'NOT met'}: target <= 1.5)")
    print("\n".join(notes))
    write_table(rows, out / "states_stream", "Categorical release, streamed (before/after)\n\n" + "\n".join(
        f"- {x}" for x in notes))
    return rows


if __name__ == "__main__":
    main()
