"""The Dask back-end on a LocalCluster of two workers against the in-memory path, on the same rows.

Usage: python benchmarks/dask_speed.py [--out DIR] [--quick] [--rows N] [--format parquet|csv]

Writes dask_speed.csv / .md into DIR (default bench-out).  Target (issue 15): a
1.6e7-row dataset of 8 sequences (8 files of 2e6 rows, one sequence each, Parquet row
groups of 250,000 rows; a block of 60 private records in the middle of every sequence;
``--by``, ``--private-column``, ``--seed``) is released by ``--backend dask`` on a
``LocalCluster`` with 2 worker processes no slower than by the in-memory path on one file
holding the same rows, with identical output.

Both runs are timed in this process around the library call (the cluster is started
before); outputs are compared column by column.  The generated files live in a temporary
folder inside DIR that is removed when the script ends, also when it is interrupted.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402
from apply_speed import ALPHA, BETA, chain_values  # noqa: E402

from redactopt.release.apply import apply_table  # noqa: E402


def _dataset(folder: Path, rows: int, sequences: int, fmt: str) -> Path:
    rng = np.random.default_rng(3)
    per = rows // sequences
    (folder / "ds").mkdir()
    tables = []
    for s in range(sequences):
        priv = np.zeros(per, dtype=np.int8)
        priv[per // 2 : per // 2 + 60] = 1
        t = pa.table({"sid": pa.array([f"room-{s}"] * per), "temp": np.round(rng.random(per), 4),
                      "occ": chain_values(per, ALPHA, BETA, rng), "priv": priv})
        tables.append(t)
        if fmt == "parquet":
            pq.write_table(t, folder / "ds" / f"part.{s}.parquet", row_group_size=250_000)
        else:
            pcsv.write_csv(t, folder / "ds" / f"part.{s}.csv", pcsv.WriteOptions(quoting_style="none"))
    single = folder / f"all.{fmt}"
    whole = pa.concat_tables(tables)
    if fmt == "parquet":
        pq.write_table(whole, single, row_group_size=250_000)
    else:
        pcsv.write_csv(whole, single, pcsv.WriteOptions(quoting_style="none"))
    return single


def _column(path: Path, fmt: str) -> pa.ChunkedArray:
    files = sorted(path.iterdir(), key=lambda p: int(p.name.split(".")[1])) if path.is_dir() else [path]
    if fmt == "parquet":
        return pa.chunked_array([c for f in files for c in pq.read_table(f, columns=["occ"]).column(0).chunks])
    opts = pcsv.ConvertOptions(include_columns=["occ"], column_types={"occ": pa.string()})
    return pa.chunked_array([c for f in files for c in pcsv.read_csv(f, convert_options=opts).column(0).chunks])


def main(argv: list[str] | None = None) -> list[dict]:
    ap = parser(__doc__)
    ap.add_argument("--rows", type=float, default=None, metavar="N", help="rows in all (default 1.6e7; --quick 1.6e6)")
    ap.add_argument("--format", choices=["parquet", "csv"], default="parquet", metavar="FMT",
                    help="parquet (default) or csv")
    args = ap.parse_args(argv)
    out = out_dir(args.out)
    rows_n = int(args.rows or (1.6e6 if args.quick else 1.6e7))
    from distributed import Client, LocalCluster

    from redactopt.release.dask_backend import apply_dask

    kw = dict(column="occ", eps=1.0, private_column="priv", by="sid", seed=1, alpha=ALPHA, beta=BETA)
    rows = []
    with tempfile.TemporaryDirectory(prefix="_dask_tmp.", dir=out) as tmp:
        folder = Path(tmp)
        single = _dataset(folder, rows_n, 8, args.format)
        t = time.perf_counter()
        mem = apply_table(single, folder / f"mem.{args.format}", **kw)
        memory = time.perf_counter() - t
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster):
            t = time.perf_counter()
            dsk = apply_dask(folder / "ds", folder / "dask_out", **kw)
            dask_s = time.perf_counter() - t
        same = _column(folder / f"mem.{args.format}", args.format).equals(_column(folder / "dask_out", args.format))
        same = same and mem["utility"] == dsk["utility"]
        for name, sec, rep in (("in-memory path (one file)", memory, mem), ("dask, LocalCluster 2 workers", dask_s, dsk)):
            rows.append({"backend": name, "format": args.format, "rows": rows_n, "sequences": 8,
                         "partitions": rep.get("partitions", 1), "seconds": sec,
                         "design_seconds": rep["design_seconds"], "redacted": rep["utility"]["redacted"],
                         "dask_over_memory": dask_s / memory, "identical_output": bool(same)})
            print(rows[-1], flush=True)
    write_table(rows, out / "dask_speed", "Dask back-end against the in-memory path")
    return rows


if __name__ == "__main__":
    main()
