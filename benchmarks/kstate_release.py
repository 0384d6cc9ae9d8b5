"""k-state releases of many sequences (``apply --categorical --by --private-column``).

Usage: python benchmarks/kstate_release.py [--out DIR] [--quick]

Writes kstate_release.csv / .md into DIR (default bench-out).  A synthetic table of S sequences
of L rows each (a sticky 3-state chain, one private row per sequence at one of 10 positions, so
10 distinct designs), written as CSV, is released by the command line with ``--workers 1`` and
with every core; the table gives the wall time, the peak memory of the process (its children
included, from ``resource``), and whether the two releases are byte-identical (they must be:
designs are deterministic and the draws are keyed by sequence).  No issue sets a target here;
the numbers are for the closing note and the README.  The time is mostly the designs, and it
depends on the chain fitted from the table: the smaller table fits a chain whose designs take longer.
"""

from __future__ import annotations

import hashlib
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402

P = np.array([[0.9, 0.07, 0.03], [0.05, 0.9, 0.05], [0.02, 0.08, 0.9]])
LABELS = np.array(["home", "work", "shop"])


def make_table(path: Path, sequences: int, length: int, positions: int = 10, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    x = np.zeros((sequences, length), dtype=int)
    x[:, 0] = rng.integers(0, 3, sequences)
    cum = np.cumsum(P, axis=1)
    for t in range(1, length):
        x[:, t] = (rng.random(sequences)[:, None] > cum[x[:, t - 1]]).sum(axis=1)
    flag = np.zeros((sequences, length), dtype=int)
    flag[np.arange(sequences), rng.integers(length // 4, length // 4 + positions, sequences)] = 1
    pd.DataFrame({"person": np.repeat(np.arange(sequences), length), "t": np.tile(np.arange(length), sequences),
                  "place": LABELS[x.ravel()], "hide": flag.ravel()}).to_csv(path, index=False)


def release(src: Path, out: Path, workers: int | None) -> tuple[float, float]:
    """Wall seconds and peak MB (the largest child's maximum resident set) of one CLI release."""
    cmd = [sys.executable, "-m", "redactopt", "apply", str(src), "--column", "place", "--categorical", "--by",
           "person", "--private-column", "hide", "--eps", "1", "--seed", "1", "--quiet", "--out", str(out)]
    if workers is not None:
        cmd += ["--workers", str(workers)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    secs = time.perf_counter() - t
    return secs, max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024.0


def main(argv: list[str] | None = None) -> list[dict]:
    args = parser(__doc__).parse_args(argv)
    out = out_dir(args.out)
    sizes = [(1000, 100)] if args.quick else [(1000, 100), (10000, 100)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for sequences, length in sizes:
            src = Path(tmp) / f"t{sequences}.csv"
            make_table(src, sequences, length)
            digests = {}
            for workers in (1, None):
                dst = Path(tmp) / f"o{sequences}_{workers}.csv"
                secs, mb = release(src, dst, workers)
                digests[workers] = hashlib.sha256(dst.read_bytes()).hexdigest()
                rows.append({"rows": sequences * length, "sequences": sequences, "distinct_designs": 10,
                             "workers": workers or "every core", "seconds": round(secs, 2),
                             "peak_MB_largest_process": round(mb), "identical_to_workers_1": ""})
            rows[-1]["identical_to_workers_1"] = "yes" if digests[1] == digests[None] else "NO"
    for r in rows:
        print(r)
    write_table(rows, out / "kstate_release", "k-state releases of many sequences (benchmarks/kstate_release.py)")
    return rows


if __name__ == "__main__":
    main()
