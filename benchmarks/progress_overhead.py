"""What progress costs (issue 37, item 3): the same runs unwatched and watched by drawn bars.

Each case runs once to warm up, then ``--repeat`` times unwatched (no listener: every report is one
list check) and ``--repeat`` times inside ``redactopt.interface.progress.watched(True)`` drawing into
memory (the bars, their redraw thread and, where it runs, SCIP's event handler all at work); the best
time of each is kept.  Cases without a time limit that binds, so both sides do the same work:

* ``design n=3000``: the default local design (``optimal``) of the README's chain at n = 3000;
* ``design global n=120``: SCIP's branch and bound (``method="global"``, alpha 0.1, beta 0.15, eps 2) at
  n = 120, p = 60 (its window; it closes the gap in a few seconds);
* ``class scan n=300``: ``design_class(..., cls="scan")`` of a slowly mixing chain;
* ``apply 3000 rows``: a release of a 0/1 column of 3,000 rows with ten private rows, chain given.

Prints a table and writes ``progress_overhead.csv|md`` into ``--out``.
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, out_dir, parser, write_table  # noqa: E402

from redactopt import MarkovChain  # noqa: E402
from redactopt.engine.classes_design import design_class  # noqa: E402
from redactopt.engine.design import design  # noqa: E402
from redactopt.interface.progress import watched  # noqa: E402


def _table(folder: Path) -> Path:
    rng = np.random.default_rng(1)
    x = [0]
    for _ in range(2999):
        x.append(1 - x[-1] if rng.random() < (0.05 if x[-1] == 0 else 0.1) else x[-1])
    path = folder / "t.csv"
    path.write_text("v\n" + "\n".join(map(str, x)) + "\n")
    return path


def _best(fn, repeat: int, watch: bool) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        if watch:
            with watched(True, title="bench", file=io.StringIO(), delay=0.0):
                fn()
        else:
            fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each case and mode (best kept; default 3)")
    args = ap.parse_args()
    out = out_dir(args.out)
    repeat = 1 if args.quick else args.repeat
    from redactopt.release.apply import apply_table

    with tempfile.TemporaryDirectory() as tmp:
        src = _table(Path(tmp))
        dest = Path(tmp) / "o.csv"
        cases = {
            "design n=3000": lambda: design(MarkovChain(0.01, 0.8), 3000, eps=1.0, p=1),
            "design global n=120": lambda: design(MarkovChain(0.1, 0.15), 120, eps=2.0, p=60, method="global",
                                                  time_limit=600),
            "class scan n=300": lambda: design_class(MarkovChain(0.00773908, 0.0024669), 300, eps=1.0, p=100,
                                                     cls="scan", time_limit=600),
            "apply 3000 rows": lambda: apply_table(src, dest, column="v", eps=1.0, private=list(range(1499, 1509)),
                                                   alpha=0.05, beta=0.1, seed=3, force=True, workers=1),
        }
        if args.quick:
            cases.pop("class scan n=300")
        rows = []
        for name, fn in cases.items():
            fn()  # warm-up: imports, caches
            plain = _best(fn, repeat, False)
            shown = _best(fn, repeat, True)
            rows.append({"case": name, "unwatched_s": round(plain, 4), "with_bars_s": round(shown, 4),
                         "ratio": round(shown / plain, 3)})
            print(f"{name:<22} unwatched {plain:8.3f} s   with bars {shown:8.3f} s   x{shown / plain:.3f}", flush=True)
    write_table(rows, out / "progress_overhead", "Progress overhead (best of %d runs each)" % repeat)
    print(machine())


if __name__ == "__main__":
    main()
