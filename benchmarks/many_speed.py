"""Many sequences (issue 16): releases of thousands of sequences, one design per distinct block shape.

Usage: python benchmarks/many_speed.py [--out DIR] [--quick] [--sequences LIST] [--repeat R] [--no-dask]

Writes many_speed.csv / .md into DIR (default bench-out).  Targets (issue 16):

* ``csv``: 2,000 sequences of 500 records (10^6 rows, CSV), one private record per sequence
  from ``--private-column``, alpha = 0.003, beta = 0.012, eps = 1, ``--seed 1``, released with
  the command line exactly as the issue ran it
  (``redactopt apply many.csv --column Occupancy --by sid --private-column optout --eps 1
  --alpha 0.003 --beta 0.012 --seed 1 --out out.csv --report rep.json``) takes at most 10 s
  end to end (a fresh process: interpreter start, imports, scan, designs, draws, output,
  report) on the 2-core development machine; it took 794 s before issue 16;
* ``parquet``: 10^5 sequences of 500 records (5 * 10^7 rows, Parquet) in at most 5 minutes,
  with peak memory flat in the number of sequences (10^4 against 10^5; ``--sequences``);
* ``dask``: a Dask ``LocalCluster`` of 2 worker processes on the same rows as a partitioned
  Parquet dataset (files cut through sequences) gives the in-memory release, row for row
  (compared by streaming digests of every column of both outputs) and the same report
  (summary and per-sequence rows).

Data: ``sid`` (text ids ``s000000``, ...), ``t`` (position), ``Occupancy`` (a stationary
chain with the occupancy parameters; ``--sequences`` cases cut one long chain into sequences,
the CSV case draws each sequence on its own) and ``optout`` (one private record per sequence,
at a uniformly drawn position).  Every release runs in a fresh process; ``seconds`` is
measured outside it (end to end) and ``peak_rss_mb`` is that process's ``VmHWM`` (the
designs' worker processes, a fixed few, are not included: ``--workers 1`` rows measure
everything in one process).  Each case runs ``--repeat`` times (default 2): the machine is
shared, so the best and every run are reported.  Generated files live in a temporary folder
inside DIR, removed at the end, also when interrupted.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402

ALPHA, BETA, EPS, SEED, LENGTH = 0.003, 0.012, 1.0, 1, 500

_GENERATE = """
import sys
import numpy as np, pyarrow as pa, pyarrow.csv as pcsv, pyarrow.parquet as pq
sys.path.insert(0, {here!r})
from apply_speed import chain_values
k, m, path, each = {k}, {m}, {path!r}, {each}
rng = np.random.default_rng(1)
if each:  # every sequence a stationary chain of its own
    occ = np.concatenate([chain_values(m, {alpha}, {beta}, rng) for _ in range(k)])
else:  # one long stationary chain cut into sequences (each starts stationary too)
    occ = chain_values(k * m, {alpha}, {beta}, rng)
opt = np.zeros(k * m, dtype=np.int8)
opt[np.arange(k) * m + rng.integers(0, m, k)] = 1
names = pa.array([f"s{{i:06d}}" for i in range(k)])
sid = pa.DictionaryArray.from_arrays(pa.array(np.repeat(np.arange(k, dtype=np.int32), m)), names).cast(pa.string())
table = pa.table({{"sid": sid, "t": np.tile(np.arange(m, dtype=np.int32), k), "Occupancy": occ, "optout": opt}})
if path.endswith(".csv"):
    pcsv.write_csv(table, path, pcsv.WriteOptions(quoting_style="none"))
elif path.endswith(".parquet"):
    pq.write_table(table, path, row_group_size=250_000)
else:  # a folder: a partitioned dataset, files cut through sequences
    import os
    os.makedirs(path)
    rows = table.num_rows
    cuts = np.linspace(0, rows, {parts} + 1).astype(int) + np.r_[0, [137] * ({parts} - 1), 0]
    for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        pq.write_table(table.slice(a, b - a), os.path.join(path, f"part.{{i}}.parquet"), row_group_size=250_000)
"""

_HWM = """
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM")][0].split()[1]
"""

_CLI = """
import json, sys
from redactopt.interface.cli import main
rc = main({argv!r})
""" + _HWM + """
print(json.dumps({{"rc": rc, "peak_rss_mb": int(hwm) / 1024}}))
"""

_DASK = """
import json, time
from distributed import Client, LocalCluster
from redactopt.release.dask_backend import apply_dask
t0 = time.perf_counter()
with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \\
        Client(cluster):
    started = time.perf_counter()
    rep = apply_dask({src!r}, {dst!r}, column="Occupancy", by="sid", private_column="optout", eps={eps},
                     alpha={alpha}, beta={beta}, seed={seed}, report={report!r}, force=True)
    seconds = time.perf_counter() - started
""" + _HWM + """
print(json.dumps({{"rc": 0, "cluster_start_s": started - t0, "apply_s": seconds, "peak_rss_mb": int(hwm) / 1024,
                  "partitions": rep["partitions"]}}))
"""


def _run(code: str) -> tuple[float, dict]:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"a release failed:\n{out.stderr[-3000:]}")
    return seconds, json.loads(out.stdout.strip().splitlines()[-1])


def _generate(k: int, path: Path, *, each: bool = False, parts: int = 0) -> None:
    code = _GENERATE.format(here=str(Path(__file__).resolve().parent), k=k, m=LENGTH, path=str(path),
                            each=each, alpha=ALPHA, beta=BETA, parts=parts)
    subprocess.run([sys.executable, "-c", code], check=True)


def _apply_argv(src: Path, dst: Path, report: Path, workers: int | None) -> list[str]:
    argv = ["apply", str(src), "--column", "Occupancy", "--by", "sid", "--private-column", "optout",
            "--eps", "1", "--alpha", str(ALPHA), "--beta", str(BETA), "--seed", str(SEED),
            "--out", str(dst), "--report", str(report), "--force", "--quiet"]
    return argv + (["--workers", str(workers)] if workers is not None else [])


def _release_rows(case: str, k: int, src: Path, folder: Path, repeat: int, workers: list[int | None],
                  target_s: float | None) -> tuple[list[dict], dict[int | None, Path]]:
    rows, outputs = [], {}
    suffix = src.suffix
    for w in workers:
        dst, report = folder / f"out_{case}_{k}_{w}{suffix}", folder / f"rep_{case}_{k}_{w}.json"
        runs = []
        for _ in range(repeat):
            seconds, r = _run(_CLI.format(argv=_apply_argv(src, dst, report, w)))
            runs.append((seconds, r["peak_rss_mb"]))
        rep = json.loads(report.read_text())
        side = report.with_name(rep["sequences_file"]) if rep.get("sequences_file") else None
        best = min(s for s, _ in runs)
        rows.append({
            "case": case, "sequences": k, "rows": k * LENGTH, "workers": "all" if w is None else w,
            "seconds_best": best, "seconds_runs": " ".join(f"{s:.2f}" for s, _ in runs),
            "peak_rss_mb": max(m for _, m in runs), "design_s": rep["design_seconds"],
            "designs_computed": rep["designs"]["computed"], "shapes": rep["designs"]["shapes"],
            "groups": rep["designs"]["groups"], "report_kb": report.stat().st_size / 1024,
            "sequences_file_kb": side.stat().st_size / 1024 if side else "",
            "leakage_max": rep["leakage"]["max"], "target_s": target_s if target_s is not None else "",
            "met": (best <= target_s) if target_s is not None else "",
        })
        outputs[w] = dst
        print(rows[-1], flush=True)
    return rows, outputs


def _digests(paths: list[Path]) -> dict[str, str]:
    """Digests of every column of the rows of ``paths`` in order (values and nulls), whatever the batches."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    hashes: dict[str, list] = {}
    rows = 0
    for path in paths:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=1 << 20):
            rows += batch.num_rows
            for name, col in zip(batch.schema.names, batch.columns):
                # one stream each for the values, the validity and (text) the lengths: batch boundaries vanish
                h = hashes.setdefault(name, [hashlib.sha256(), hashlib.sha256(), hashlib.sha256()])
                valid = np.ones(len(col), dtype=bool) if col.null_count == 0 else \
                    col.is_valid().to_numpy(zero_copy_only=False)
                h[1].update(valid.tobytes())
                if pa.types.is_string(col.type):
                    offsets = np.frombuffer(col.buffers()[1], dtype=np.int32)[col.offset: col.offset + len(col) + 1]
                    data = col.buffers()[2]
                    h[2].update(np.diff(offsets).tobytes())
                    h[0].update(memoryview(data)[offsets[0]: offsets[-1]] if data is not None else b"")
                else:
                    v = col.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
                    h[0].update(v.tobytes())
    out = {name: "/".join(x.hexdigest()[:16] for x in h) for name, h in hashes.items()}
    out["rows"] = str(rows)
    return out


def _dask_rows(k: int, folder: Path, mem_out: Path, mem_report: Path, repeat: int) -> list[dict]:
    src = folder / f"ds_{k}"
    _generate(k, src, parts=10)
    rows = []
    dst, report = folder / f"dask_out_{k}", folder / f"dask_rep_{k}.json"
    runs = []
    for _ in range(repeat):
        seconds, r = _run(_DASK.format(src=str(src), dst=str(dst), report=str(report), eps=EPS, alpha=ALPHA,
                                       beta=BETA, seed=SEED))
        runs.append((seconds, r))
    mem, dsk = json.loads(mem_report.read_text()), json.loads(report.read_text())
    same_rows = _digests([mem_out]) == _digests(sorted(dst.glob("part.*.parquet"),
                                                       key=lambda p: int(p.name.split(".")[1])))
    skip = {"input", "output", "design_seconds", "apply_seconds", "backend", "dataset_format", "partitions",
            "sequences_file", "designs"}

    def comparable(rep: dict) -> dict:  # the report without paths and timings
        out = {a: b for a, b in rep.items() if a not in skip}
        out["shapes"] = [dict(s, design_info={a: b for a, b in s["design_info"].items() if a != "seconds"})
                         for s in rep["shapes"]]
        return out

    same_report = comparable(mem) == comparable(dsk)
    # the per-sequence rows: Parquet files beside the two reports
    import pyarrow.parquet as pq

    same_sequences = pq.read_table(mem_report.with_name(mem["sequences_file"])).equals(
        pq.read_table(report.with_name(dsk["sequences_file"])))
    best = min(s for s, _ in runs)
    rows.append({
        "case": "dask LocalCluster(2 processes)", "sequences": k, "rows": k * LENGTH, "workers": "2 dask",
        "seconds_best": best, "seconds_runs": " ".join(f"{s:.2f}" for s, _ in runs),
        "peak_rss_mb": max(r["peak_rss_mb"] for _, r in runs), "design_s": dsk["design_seconds"],
        "designs_computed": dsk["designs"]["computed"], "shapes": dsk["designs"]["shapes"],
        "groups": dsk["designs"]["groups"], "report_kb": report.stat().st_size / 1024,
        "sequences_file_kb": report.with_name(dsk["sequences_file"]).stat().st_size / 1024,
        "leakage_max": dsk["leakage"]["max"], "target_s": "",
        "met": bool(same_rows and same_report and same_sequences),
        "note": f"{runs[0][1]['partitions']} partitions; identical rows {same_rows}, report {same_report}, "
                f"per-sequence rows {same_sequences}; cluster start "
                f"{min(r['cluster_start_s'] for _, r in runs):.1f} s (in seconds_best)",
    })
    print(rows[-1], flush=True)
    return rows


def _counts(text: str) -> list[int]:
    return [int(float(v)) for v in text.split(",")]


def main(argv: list[str] | None = None) -> list[dict]:
    ap = parser(__doc__)
    ap.add_argument("--sequences", type=_counts, default=None, metavar="LIST",
                    help="sequences of the Parquet releases (default 1e4,1e5; --quick: 1e3,1e4); the last one is "
                         "also released with Dask")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each release, the best kept (default 2)")
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask comparison")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    out = out_dir(args.out)
    counts = args.sequences or ([1000, 10_000] if args.quick else [10_000, 100_000])
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="_many_tmp.", dir=out) as tmp:  # removed on any exit
        folder = Path(tmp)
        csv = folder / "many.csv"
        _generate(2000, csv, each=True)
        got, _ = _release_rows("csv (issue command)", 2000, csv, folder, args.repeat, [None, 1], 10.0)
        rows += got
        csv.unlink()
        outputs = {}
        for k in counts:
            src = folder / f"many_{k}.parquet"
            _generate(k, src)
            target = 300.0 if k == 100_000 else None
            got, outs = _release_rows("parquet", k, src, folder, args.repeat, [None], target)
            rows += got
            outputs[k] = outs[None]
            src.unlink()
        if not args.no_dask:
            k = counts[-1]
            rows += _dask_rows(k, folder, outputs[k], folder / f"rep_parquet_{k}_None.json", args.repeat)
    keys = ["case", "sequences", "rows", "workers", "seconds_best", "seconds_runs", "peak_rss_mb", "design_s",
            "designs_computed", "shapes", "groups", "report_kb", "sequences_file_kb", "leakage_max", "target_s", "met",
            "note"]
    rows = [{k: r.get(k, "") for k in keys} for r in rows]
    write_table(rows, out / "many_speed", "Many sequences: one design per distinct block shape")
    return rows


if __name__ == "__main__":
    main()
