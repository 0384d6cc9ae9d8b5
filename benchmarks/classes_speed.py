"""Classes of chains (issue 14): worst-case leakage over a box, robust designs, robust releases.

Usage: python benchmarks/classes_speed.py [--out DIR] [--quick]

Writes classes_speed.csv / .md into DIR (default bench-out).

* ``sup``: the certified worst-case leakage over the occupancy data's 95 % box
  (alpha in [0.00202, 0.00481], beta in [0.00750, 0.0178]) of a 301-record design around one
  private record and of the walk-through's 60-minute block -- target <= 2 s;
* ``robust design``: n = 10, p = 1, alpha in [0.005, 0.02], beta in [0.6, 0.9], eps = 1 --
  target certified gap <= 1e-3 in <= 30 s;
* ``robust release design``: the walk-through's design over the 95 % box against the point
  design (the release's other steps are the same) -- target <= 3x.

Every result is re-checked: the sup against the exact leakage at 200 random chains of the box.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402

from redactopt import MarkovChain, design  # noqa: E402
from redactopt.engine.joint import design_joint_sparse  # noqa: E402
from redactopt.judge.classes import class_leakage  # noqa: E402
from redactopt.judge.leakage import leakage  # noqa: E402
from redactopt.model.classes import ChainClass  # noqa: E402

NOMINAL = MarkovChain(0.0031181789834736516, 0.011574074074074073)
BOX = ChainClass.box((0.0020195084506997294, 0.004811676006254772),
                     (0.007504851317475318, 0.01781008648898428), nominal=NOMINAL)


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> list[dict]:
    args = parser(__doc__).parse_args(argv)
    out = out_dir(args.out)
    rng = np.random.default_rng(14)
    rows = []
    block = np.asarray(design(NOMINAL, 301, eps=1.0, p=150).redact_prob)
    walk = design_joint_sparse(NOMINAL, 8143, eps=1.0, private=list(range(1119, 1179)))
    for name, q, priv in (("sup: 301-record design", block, [150]),
                          ("sup: walk-through block", walk.redact_prob, list(range(1119, 1179)))):
        res, dt = _timed(lambda q=q, priv=priv: class_leakage(BOX, q, priv))
        dense = np.asarray(q)
        checks = 20 if args.quick else 200
        inside = max(leakage(MarkovChain(float(rng.uniform(*BOX.alpha)), float(rng.uniform(*BOX.beta))), dense,
                             priv[0]).leakage for _ in range(checks))
        rows.append({"case": name, "seconds": dt, "value": res.leakage, "detail": f"worst at {res.chain}",
                     "check": f"max over {checks} random chains {inside:.6f} <= sup", "target": "<= 2 s"})
    box = ChainClass.box((0.005, 0.02), (0.6, 0.9))
    res, dt = _timed(lambda: design(box, 10, eps=1.0, p=0))
    rows.append({"case": "robust design n=10 p=1", "seconds": dt, "value": res.certificate.gap,
                 "detail": f"utility {res.utility:.6f} at {res.chain}, bound {res.certificate.upper_bound:.6f}",
                 "check": f"sup {class_leakage(box, res.redact_prob, [0]).leakage:.12f} <= 1",
                 "target": "gap <= 1e-3 in <= 30 s"})
    point, t_point = _timed(lambda: design_joint_sparse(NOMINAL, 8143, eps=1.0, private=list(range(1119, 1179))))
    robust, t_robust = _timed(lambda: design_joint_sparse(BOX, 8143, eps=1.0, private=list(range(1119, 1179))))
    rows.append({"case": "robust release design (walk-through)", "seconds": t_robust, "value": t_robust / t_point,
                 "detail": f"point {t_point:.2f} s; redacted minutes at the estimate "
                           f"{(1 - point.utility) * 8143:.1f} -> {(1 - robust.info['utility_at_nominal']) * 8143:.1f}",
                 "check": f"point design's worst case over the box {class_leakage(BOX, point.redact_prob, list(range(1119, 1179))).leakage:.3f} nats",
                 "target": "<= 3x the point design"})
    for r in rows:
        print(f"{r['case']:>40}: {r['seconds']:7.3f} s  value {r['value']:.4g}  ({r['detail']}; {r['check']})")
    write_table(rows, out / "classes_speed", "Classes of chains: time and results (benchmarks/classes_speed.py)")
    return rows


if __name__ == "__main__":
    main()
