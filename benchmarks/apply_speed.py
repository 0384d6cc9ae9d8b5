"""Speed of the redaction step (values + q -> released column with nulls) and of whole releases.

Usage: python benchmarks/apply_speed.py [--out DIR] [--quick] [--sizes N,N,...]

Writes apply_speed.csv / .md into DIR (default bench-out).  Target (issue 5):
the redaction step runs at >= 2e7 records/s on one core.  Cases:

* ``window``: one long sequence with a block of 60 private records designed at eps = 1 for
  the occupancy chain (alpha = 0.003, beta = 0.012): only the few hundred records of the
  design window can be redacted, everything else is published without a draw.
* ``dense``: the worst case, every record has 0 < q < 1 and needs a random draw.

Each is run with the seeded PCG64 source and the secure source (``os.urandom``).  The
step is ``Redactor.redact`` (exact Bernoulli draws) plus building the released column as
an Arrow ``int8`` array with nulls, per chunk of 1e6 records.  Whole releases
(``apply_table``: two streaming passes, fit, design, write) are timed on generated CSV
and Parquet files of 10^6, 4*10^6 and 1.6*10^7 rows, in a fresh process each, with the
peak resident memory, to show that memory does not grow with the number of rows: the input
is streamed in chunks of 250,000 rows, the design is a sparse mechanism (blocks around the
private records: a block of 60 minutes in the middle and single records at 10% and 90%),
and the JSON report, which lists ``redact_prob`` for every record, is streamed too.  The
generated files live in a temporary folder inside DIR that is removed when the script
ends, also when it is interrupted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402

from redactopt.release.bits import SecureBits, SeededBits  # noqa: E402
from redactopt.release.plan import SequencePlan  # noqa: E402
from redactopt.release.redactor import Redactor  # noqa: E402
from redactopt.model.chain import MarkovChain  # noqa: E402
from redactopt.engine.joint import design_joint_sparse  # noqa: E402

CHUNK = 1_000_000


class _Table:
    """Stands in for a DesignResult where only ``redact_prob`` (dense) is read."""

    def __init__(self, q: np.ndarray) -> None:
        self.redact_prob = q
        self.utility = float("nan")


def _step(redactor: Redactor, values: np.ndarray, n_chunks: int, cycle: bool = False) -> tuple[float, int]:
    import pyarrow as pa

    redacted = 0
    t = time.perf_counter()
    for i in range(n_chunks):
        j = 0 if cycle else i  # cycle: every chunk reuses positions 0..CHUNK-1 (a table of one chunk)
        pos = np.arange(j * CHUNK, (j + 1) * CHUNK, dtype=np.int64)
        mask = redactor.redact(None, pos, values)
        valid = np.packbits(~mask, bitorder="little")
        col = pa.Array.from_buffers(pa.int8(), CHUNK, [pa.py_buffer(valid), pa.py_buffer(values)])
        redacted += col.null_count
    return time.perf_counter() - t, redacted


_GENERATE = """
import numpy as np, pandas as pd
from redactopt.model.chain import MarkovChain
from redactopt.judge.leakage import sample_chains
n, path = {n}, r"{path}"
rng = np.random.default_rng(1)
x = np.empty(n, dtype=np.int8)
for a in range(0, n, 200_000):
    m = min(200_000, n - a)
    x[a:a + m] = sample_chains(MarkovChain(0.003, 0.012), m, 1, rng)[0]
df = pd.DataFrame({{"t": np.arange(n), "temp": rng.random(n).round(4), "occ": x}})
df.to_csv(path, index=False) if path.endswith(".csv") else df.to_parquet(path)
"""

_APPLY = """
import json, time
from redactopt.release.apply import apply_table
n, src = {n}, r"{path}"
t = time.perf_counter()
private = [n // 10] + list(range(n // 2, n // 2 + 60)) + [9 * n // 10]
rep = apply_table(src, src.replace("in_", "out_"), column="occ", eps=1.0, private=private, seed=1,
                  chunk_rows=250_000, force=True, report=src.replace("in_", "report_") + ".json")
# VmHWM is this process's peak resident memory (ru_maxrss would include the forking parent)
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(json.dumps({{"seconds": time.perf_counter() - t, "design_seconds": rep["design_seconds"],
                  "peak_rss_mb": int(hwm) / 1024}}))
"""


def _release(kind: str, n: int, folder: Path) -> dict:
    """Generate a file in one process, release it in a fresh one: seconds and peak memory."""
    path = folder / f"in_{kind}_{n}.{'csv' if kind == 'csv' else 'parquet'}"
    subprocess.run([sys.executable, "-c", _GENERATE.format(n=n, path=path)], check=True)
    try:
        out = subprocess.run([sys.executable, "-c", _APPLY.format(n=n, path=path)], capture_output=True,
                             text=True, check=True)
    finally:  # each size's files go as soon as it is measured (the folder goes at the end)
        for f in folder.glob(f"*_{kind}_{n}.*"):
            f.unlink()
    return json.loads(out.stdout.strip().splitlines()[-1])


def _sizes(text: str) -> list[int]:
    return [int(float(v)) for v in text.split(",")]


def main(argv: list[str] | None = None) -> list[dict]:
    ap = parser(__doc__)
    ap.add_argument("--sizes", type=_sizes, default=None, metavar="N,N,...",
                    help="rows of the whole releases (default 1e6,4e6,1.6e7; --quick: 1e6)")
    ap.add_argument("--chunks", type=int, default=None,
                    help="chunks of 1e6 records for the redaction step (default 20; --quick: 5)")
    args = ap.parse_args(argv)
    quick = args.quick
    out = out_dir(args.out)
    rng = np.random.default_rng(0)
    n_chunks = args.chunks or (5 if quick else 20)
    n = n_chunks * CHUNK
    values = rng.integers(0, 2, CHUNK).astype(np.int8)
    chain = MarkovChain(0.003, 0.012)
    block = list(range(n // 2, n // 2 + 60))
    design = design_joint_sparse(chain, n, eps=1.0, private=block, method="dim")
    window_plan = SequencePlan(None, n, tuple(block), design)
    dense_q = rng.uniform(0.0, 1.0, (CHUNK, 2))
    dense_q[dense_q == 0.0] = 0.5
    dense_plan = SequencePlan(None, CHUNK, (), _Table(dense_q))  # type: ignore[arg-type]
    rows = []
    for case, plan in (("window", window_plan), ("dense", dense_plan)):
        for name, src in (("seeded PCG64", SeededBits(1)), ("secure os.urandom", SecureBits())):
            redactor = Redactor([plan], src)
            cycle = case == "dense"
            _step(redactor, values, 1, cycle)  # warm-up
            best = min(_step(redactor, values, n_chunks, cycle) for _ in range(3))
            sec, red = best
            rows.append({"benchmark": "redaction step", "case": case, "source": name, "records": n,
                         "seconds": sec, "records_per_s": n / sec, "redacted": red,
                         "meets_2e7": bool(n / sec >= 2e7)})
            print(rows[-1], flush=True)
    sizes = args.sizes or ((10**6,) if quick else (10**6, 4 * 10**6, 16 * 10**6))
    with tempfile.TemporaryDirectory(prefix="_apply_tmp.", dir=out) as tmp:  # removed on any exit
        for kind in ("csv", "parquet"):
            for size in sizes:
                r = _release(kind, size, Path(tmp))
                rows.append({"benchmark": f"apply_table {kind}", "case": "window", "source": "seeded PCG64",
                             "records": size, "seconds": r["seconds"], "records_per_s": size / r["seconds"],
                             "redacted": "", "meets_2e7": "", "design_s": r["design_seconds"],
                             "peak_rss_mb": r["peak_rss_mb"]})
                print(rows[-1], flush=True)
    keys = ["benchmark", "case", "source", "records", "seconds", "records_per_s", "redacted", "meets_2e7",
            "design_s", "peak_rss_mb"]
    rows = [{k: r.get(k, "") for k in keys} for r in rows]
    write_table(rows, out / "apply_speed", "Apply: redaction step and whole releases")
    return rows


if __name__ == "__main__":
    main()
