"""One chain in two forms (issue 25): a binary MarkovChain against the same chain given as a 2x2 matrix, and k = 3, 4.

Usage: python benchmarks/chain_forms.py [--out DIR] [--quick] [--repeat R]

Writes chain_forms.csv / .md into DIR (default bench-out).  Every case is timed on the same
data for each form of the chain (best of ``--repeat`` runs after a warm-up):

* ``leakage dense``: exact leakage of one private record in the middle of ``n`` records that
  can all be redacted (the scan runs to both ends);
* ``leakage window``, ``segment``, ``audit``: a 400-row block around the private record inside
  ``n`` records published otherwise (the evaluator should stop at the first published row);
* ``dim``: the window enumeration at n = 1000 on three chains;
* ``lemma2``: the Lemma 2 upper bound at ``n``;
* ``design``: ``design`` (binary) / ``kdesign`` (matrix, k = 3) at n = 100.

The matrix form goes through the one API (``leakage``, ``lemma2_upper_bound`` on a ``Chain``; the k-prefixed
shims of 0.2-0.4 are gone since issue 35: to time an older checkout use ``benchmarks/one_model.py``).
Targets (issue 25): binary dense leakage >= 1e7 records/s; the matrix form of a two-state chain
as fast as the binary one; k-state windows at least as fast as before.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402

from redactopt.engine.design import design  # noqa: E402
from redactopt.engine.kdesign import kdesign  # noqa: E402
from redactopt.judge.audit import audit  # noqa: E402
from redactopt.judge.audit import kaudit  # noqa: E402
from redactopt.judge.leakage import leakage, leakage_segment  # noqa: E402
from redactopt.judge.lemma2 import lemma2_upper_bound  # noqa: E402
from redactopt.model.chain import MarkovChain  # noqa: E402
from redactopt.model.chain import Chain  # noqa: E402
from redactopt.solvers.dim import dim_enumerate  # noqa: E402

P3 = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]]
P4 = [[0.5, 0.2, 0.2, 0.1], [0.1, 0.6, 0.2, 0.1], [0.2, 0.1, 0.5, 0.2], [0.25, 0.25, 0.25, 0.25]]
DIM_CHAINS = ((0.003, 0.012), (0.01, 0.8), (0.05, 0.1))


def _best(fn, repeat: int) -> float:
    from _common import best_time  # the benchmarks folder is on sys.path (scripts and workers)

    return best_time(fn, repeat)


def _forms(binary: MarkovChain) -> list[tuple[str, object]]:
    """The chain as the binary constructor and as the exact 2x2 matrix it stands for."""
    return [("binary", binary), ("matrix k=2", Chain.from_binary(binary))]


def _utility(chain: object, cand: object) -> float:
    """Utility of a proposal (Definition 2) by hand: the published share under the stationary law."""
    return float(((1.0 - np.asarray(cand.redact_prob)) @ chain.stationary).mean())


def _leak(chain: object) -> object:
    return leakage  # one leakage for every chain form


def _leakage_rows(n: int, repeat: int, rng: np.random.Generator) -> list[dict]:
    rows = []
    p = n // 2
    chains = _forms(MarkovChain(0.01, 0.8)) + [("k=3", Chain(P3)), ("k=4", Chain(P4))]
    for form, chain in chains:
        k = chain.transition_matrix.shape[0]
        q = rng.uniform(0.3, 1.0, (n, k))
        q[p] = 1.0
        t = _best(lambda: _leak(chain)(chain, q, p), repeat)
        rows.append({"case": "leakage dense", "form": form, "n": n, "seconds": t, "records_per_s": n / t,
                     "value": _leak(chain)(chain, q, p).leakage})
        w = np.zeros((n, k))
        w[p - 200 : p + 200] = rng.uniform(0.3, 1.0, (400, k))
        w[p] = 1.0
        t = _best(lambda: _leak(chain)(chain, w, p), repeat)
        rows.append({"case": "leakage window 400", "form": form, "n": n, "seconds": t, "records_per_s": n / t,
                     "value": _leak(chain)(chain, w, p).leakage})
        if not isinstance(chain, MarkovChain):
            t = _best(lambda: leakage_segment(chain, w, p), repeat)
            rows.append({"case": "segment window 400", "form": form, "n": n, "seconds": t,
                         "records_per_s": n / t, "value": leakage_segment(chain, w, p).leakage})
        judge = audit if isinstance(chain, MarkovChain) else kaudit
        t = _best(lambda: judge(chain, w, private=[p], eps=5.0), repeat)
        rows.append({"case": "audit window 400", "form": form, "n": n, "seconds": t, "records_per_s": n / t,
                     "value": judge(chain, w, private=[p], eps=5.0)["leakage"]})
    return rows


def _model_rows(n: int, repeat: int) -> list[dict]:
    rows = []
    for a, b in DIM_CHAINS:
        for form, chain in _forms(MarkovChain(a, b)):
            dim = dim_enumerate
            t = _best(lambda: dim(chain, 1000, eps=1.0, p=500), repeat)
            rows.append({"case": f"dim n=1000 alpha={a} beta={b}", "form": form, "n": 1000, "seconds": t,
                         "records_per_s": 1000 / t, "value": _utility(chain, dim(chain, 1000, eps=1.0, p=500))})
    for form, chain in _forms(MarkovChain(0.01, 0.8)):
        bound = lemma2_upper_bound
        t = _best(lambda: bound(chain, n, eps=1.0, private=[n // 2]), repeat)
        rows.append({"case": "lemma2", "form": form, "n": n, "seconds": t, "records_per_s": n / t,
                     "value": bound(chain, n, eps=1.0, private=[n // 2])})
    for form, chain in _forms(MarkovChain(0.2, 0.3)) + [("k=3", Chain(P3))]:
        run = design if isinstance(chain, MarkovChain) else kdesign
        t = _best(lambda: run(chain, 100, eps=1.0, p=50), max(1, repeat // 2))
        rows.append({"case": "design n=100", "form": form, "n": 100, "seconds": t, "records_per_s": 100 / t,
                     "value": run(chain, 100, eps=1.0, p=50).utility})
    return rows


def main(argv: list[str] | None = None) -> list[dict]:
    ap = parser(__doc__)
    ap.add_argument("--repeat", type=int, default=3, help="runs per case; the best counts (default 3)")
    args = ap.parse_args(argv)
    out = out_dir(args.out)
    n = 10**5 if args.quick else 10**6
    rows = _leakage_rows(n, args.repeat, np.random.default_rng(0)) + _model_rows(n, args.repeat)
    for r in rows:
        print(f"{r['case']:>34}  {r['form']:>10}  n={r['n']:>8}  {r['seconds'] * 1e3:9.3f} ms  "
              f"{r['records_per_s']:.3g} rec/s  value {r['value']!r}")
    write_table(rows, out / "chain_forms", "One chain in two forms (benchmarks/chain_forms.py)")
    return rows


if __name__ == "__main__":
    main()
