"""design and compare on long sequences (issue 24): time and peak memory from n = 1e4 to 1e8.

Usage: python benchmarks/design_scale.py [--out DIR] [--quick] [--sizes N,N,...] [--repeat R] [--occupancy]

Writes design_scale.csv / .md into DIR (default bench-out).  Each run is the command line in a
fresh process (interpreter start, imports, design, the exact checks, the text output written to a
file in a temporary folder inside DIR): ``redactopt design --n N --eps 1 --private P`` (with its
comparison lines) and ``redactopt compare --n N --eps 1 --private P``, the private record first,
in the middle and last, in the paper's Fig. 3 setting (alpha = 0.01, beta = 0.8).  ``seconds`` is
measured outside the process (end to end), ``peak_rss_mb`` is its ``VmHWM``; the best of
``--repeat`` runs (default 1) is kept.  ``vs_1e4`` is the time over the same command's time at
n = 1e4 and the same position.

Targets (issue 24): at n = 1e7 and 1e8, peak memory <= 300 MB and time <= 3x that of n = 1e4.
Before issue 24, ``design --n 10000000 --eps 1`` took 103 s and 15.4 GB, and n = 1e8 failed with
MemoryError (design: 23.8 GiB, compare: 47.7 GiB).  ``--occupancy`` adds the occupancy chain
(alpha = 0.003, beta = 0.012; its window holds about 600 records, where the side-frontier optimum
itself needs about 25 s and 1.1 GB whatever n).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402

SIZES = [10**4, 10**6, 10**7, 10**8]
TARGET_MB, TARGET_RATIO = 300.0, 3.0

_CLI = """
import json
from redactopt.interface.cli import main
rc = main({argv!r})
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM")][0].split()[1]
print(json.dumps({{"rc": rc, "peak_rss_mb": int(hwm) / 1024}}))
"""


def _run(argv: list[str]) -> tuple[float, float]:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _CLI.format(argv=argv)], capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{out.stderr[-3000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if res["rc"] != 0:
        raise SystemExit(f"{' '.join(argv)} exited {res['rc']}:\n{out.stderr[-3000:]}")
    return seconds, float(res["peak_rss_mb"])


def _sizes(text: str) -> list[int]:
    return [int(float(t)) for t in text.split(",") if t.strip()]


def main(argv: list[str] | None = None) -> list[dict]:
    ap = parser(__doc__)
    ap.add_argument("--sizes", type=_sizes, default=None, metavar="N,N,...",
                    help="sequence lengths (default 1e4,1e6,1e7,1e8; --quick: 1e4,1e6)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each case, the best kept (default 1)")
    ap.add_argument("--occupancy", action="store_true", help="also the occupancy chain (slow: ~25 s a design)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    out = out_dir(args.out)
    sizes = args.sizes or ([10**4, 10**6] if args.quick else SIZES)
    chains = [("fig3", "0.01", "0.8")] + ([("occupancy", "0.003", "0.012")] if args.occupancy else [])
    rows: list[dict] = []
    base: dict[tuple, float] = {}
    with tempfile.TemporaryDirectory(prefix="_scale_tmp.", dir=out) as tmp:  # removed on any exit
        target = str(Path(tmp) / "out.txt")
        for name, a, b in chains:
            for command in ("design", "compare"):
                for n in sizes:
                    for where, pos in (("first", 1), ("middle", n // 2), ("last", n)):
                        argv = [command, "--n", str(n), "--eps", "1", "--private", str(pos), "--alpha", a,
                                "--beta", b, "--out", target, "--force", "--quiet"]
                        runs = [_run(argv) for _ in range(args.repeat)]
                        seconds, peak = min(s for s, _ in runs), max(m for _, m in runs)
                        key = (name, command, where)
                        if n == min(sizes):
                            base[key] = seconds
                        ratio = seconds / base[key] if key in base else float("nan")
                        long = n >= 10**7
                        rows.append({"chain": name, "command": command, "n": n, "private": where,
                                     "seconds": seconds, "peak_rss_mb": peak, "vs_1e4": ratio,
                                     "met": (peak <= TARGET_MB and ratio <= TARGET_RATIO) if long else ""})
                        print(rows[-1], flush=True)
    write_table(rows, out / "design_scale", "design and compare on long sequences (benchmarks/design_scale.py)")
    return rows


if __name__ == "__main__":
    main()
