"""The attack of ``redactopt audit --attack`` on the walk-through's mechanism, restricted to what can leak.

Usage: python benchmarks/attack_speed.py [--out DIR] [--quick] [--samples N]

Writes attack_speed.csv / .md into DIR (default bench-out).  Targets (issue 15):

* ``redactopt audit report.json --attack --samples 200000`` on the walk-through's
  mechanism (the UCI occupancy data, 8143 records, the lunch hour private: 60 records,
  ``--seed 2015``) takes at most 60 s — it took about 9 hours when every sample was a
  chain of all 8143 records (0.16 s a sample);
* the restricted attack gives the same lower bound, for the same seed, as the attack that
  samples every record (``restrict=False``), checked on a small case here and in
  ``tests/test_mechanism_format.py``.

The command is timed in a fresh process (wall clock, imports included).  The attack that
samples every record is timed on a few thousand samples and its time for 200 000
projected (it is linear in the samples).
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

from redactopt import datasets  # noqa: E402
from redactopt.io import read_mechanisms  # noqa: E402
from redactopt.judge.attack import attack  # noqa: E402
from redactopt.judge.audit import segments  # noqa: E402
from redactopt.model.chain import MarkovChain  # noqa: E402
from redactopt.release.apply import apply_table  # noqa: E402


def main(argv: list[str] | None = None) -> list[dict]:
    ap = parser(__doc__)
    ap.add_argument("--samples", type=int, default=None, metavar="N", help="chains per value of X_p (default 200000; --quick 20000)")
    args = ap.parse_args(argv)
    out = out_dir(args.out)
    samples = args.samples or (20_000 if args.quick else 200_000)
    rows = []
    with tempfile.TemporaryDirectory(prefix="_attack_tmp.", dir=out) as tmp:
        report = Path(tmp) / "report.json"
        apply_table(datasets.path("occupancy"), Path(tmp) / "released.csv", column="Occupancy", eps=1.0,
                    private=list(range(1119, 1179)), seed=2015, report=report)
        t = time.perf_counter()
        res = subprocess.run([sys.executable, "-m", "redactopt", "audit", str(report), "--attack", "--samples",
                              str(samples), "--attack-seed", "1", "--format", "json", "--quiet"],
                             capture_output=True, text=True, check=True)
        wall = time.perf_counter() - t
        at = json.loads(res.stdout)["attack"]
        [(_, mech)] = read_mechanisms(report)
        cells = next(segments(mech.redact_prob, [at["private"] - 1])).rows.shape[0]
        rows.append({"case": "walk-through, restricted (audit --attack)", "records_sampled": cells, "samples": samples,
                     "seconds": wall, "lower_bound": at["lower_bound"], "meets_60s": bool(wall <= 60.0)})
        print(rows[-1], flush=True)
        few = 2000
        t = time.perf_counter()
        attack(mech.chain, mech.redact_prob, p=at["private"] - 1, samples=few, rng=np.random.default_rng(1),
               restrict=False)
        dense = time.perf_counter() - t
        rows.append({"case": "walk-through, every record (restrict=False), projected", "records_sampled": mech.n,
                     "samples": samples, "seconds": dense * samples / few, "lower_bound": "", "meets_60s": ""})
        print(rows[-1], flush=True)
    # a small case: the same lower bound from the same seed, restricted or not
    chain = MarkovChain(0.05, 0.2)
    q = np.zeros((40, 2))
    q[15:22] = [[0.4, 0.9], [0.7, 1.0], [1.0, 1.0], [1.0, 1.0], [0.8, 1.0], [0.3, 0.6], [0.1, 0.2]]
    q[2:4] = 0.5  # another block, beyond the cut
    for restrict in (True, False):
        t = time.perf_counter()
        r = attack(chain, q, p=17, samples=50_000, rng=np.random.default_rng(7), restrict=restrict)
        rows.append({"case": f"small case (n = 40), {'restricted' if restrict else 'every record'}",
                     "records_sampled": 9 if restrict else 40, "samples": 50_000,
                     "seconds": time.perf_counter() - t, "lower_bound": r.lower_bound, "meets_60s": ""})
        print(rows[-1], flush=True)
    write_table(rows, out / "attack_speed", "Attack: sampling only what can leak")
    return rows


if __name__ == "__main__":
    main()
