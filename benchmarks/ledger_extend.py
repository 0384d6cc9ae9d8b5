"""Extending a ledgered series: appending 1e4 rows to a released series of 1e6 against a fresh release of the 1e4.

Usage: python benchmarks/ledger_extend.py [--out DIR] [--quick] [--repeat R]

Writes ledger_extend.csv / .md into DIR (default bench-out).  Target (issue 39): appending 1e4 rows to a
released series of 1e6 (``apply NEW --ledger FILE --extend``: read the ledger, judge the earlier releases'
open tail with the new rows, design, draw, write the new rows and the report, append to the ledger) takes at
most 2x a fresh release of the same 1e4 rows (``apply NEW`` with the same private records, chain and eps).

The series is a two-state chain with the occupancy parameters (alpha = 0.003, beta = 0.012), given to both
releases; the first release (eps 0.6, total budget 1) protects a run of 60 records ending 20 rows before the
end of the old series (so its design reaches the end: the run is *open*, and the extension must judge it)
and one record at 10 %.  The new rows hold one private run of 10 records in their middle.  Both timed
releases run in this process (imports and the first release excluded), ``--repeat`` times each alternately
(default 3), each extension from a fresh copy of the ledger; the best of each is kept.  ``--quick``: a series
of 1e5 rows.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402

from redactopt.release.apply import apply_table  # noqa: E402
from redactopt.release.ledger_extend import extend_table  # noqa: E402
from redactopt.release.ledger_file import read_ledger  # noqa: E402
from redactopt.release.ledger_release import LedgeredRelease  # noqa: E402

ALPHA, BETA = 0.003, 0.012


def series(n: int, rng: np.random.Generator) -> np.ndarray:
    u = rng.random(n)
    x = np.empty(n, dtype=np.int8)
    x[0] = 0
    for t in range(1, n):  # (a loop of 1e6 steps: a second or two, once)
        x[t] = (u[t] < ALPHA) if x[t - 1] == 0 else (u[t] >= BETA)
    return x


def write_csv(path: Path, values: np.ndarray) -> None:
    path.write_text("v\n" + "\n".join(map(str, values.tolist())) + "\n")


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    out = out_dir(args.out)
    n_old = 100_000 if args.quick else 1_000_000
    m = 10_000
    rng = np.random.default_rng(39)
    x = series(n_old + m, rng)
    rows = []
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        d = Path(tmp)
        write_csv(d / "old.csv", x[:n_old])
        write_csv(d / "new.csv", x[n_old:])
        old_private = [n_old // 10] + list(range(n_old - 80, n_old - 20))
        new_private = list(range(m // 2, m // 2 + 10))
        t = time.perf_counter()
        first = LedgeredRelease(read_ledger(d / "ledger.json", create=True), eps=0.6, total_eps=1.0, column="v")
        apply_table(d / "old.csv", d / "old_out.csv", column="v", eps=0.6, private=old_private, alpha=ALPHA,
                    beta=BETA, report=d / "old.json", ledger=first, report_sequences="inline", workers=1)
        first_seconds = time.perf_counter() - t
        shutil.copy(d / "ledger.json", d / "ledger0.json")
        ext_times, fresh_times = [], []
        rep = None
        for i in range(args.repeat):
            shutil.copy(d / "ledger0.json", d / "ledger.json")
            t = time.perf_counter()
            led = LedgeredRelease(read_ledger(d / "ledger.json"), eps=1.0, total_eps=None, column="v")
            rep = extend_table(d / "new.csv", d / "ext.csv", column="v", eps=1.0, ledger=led, private=new_private,
                               report=d / "ext.json", force=True, workers=1)
            ext_times.append(time.perf_counter() - t)
            t = time.perf_counter()
            apply_table(d / "new.csv", d / "fresh.csv", column="v", eps=1.0, private=new_private, alpha=ALPHA,
                        beta=BETA, report=d / "fresh.json", force=True, workers=1)
            fresh_times.append(time.perf_counter() - t)
        assert rep is not None
        seq = rep["sequences"][0]
        rows.append({"old_rows": n_old, "new_rows": m, "first_release_s": first_seconds,
                     "extension_s": min(ext_times), "fresh_s": min(fresh_times),
                     "ratio": min(ext_times) / min(fresh_times), "target": 2.0,
                     "open_earlier": len(seq.get("open_earlier") or []), "wiped": seq.get("wiped", 0),
                     "cumulative": rep["ledger"]["cumulative"], "expected_utility": rep["utility"]["expected"],
                     "upper_bound": rep["utility"]["upper_bound"]})
    for r in rows:
        print(", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
    write_table(rows, out / "ledger_extend", "Extending a ledgered series (issue 39): 1e4 appended rows")


if __name__ == "__main__":
    main()
