"""``redactopt audit --compose A.json B.json ...``: the cumulative leakage of several releases of the same rows."""

from __future__ import annotations

import argparse
import json
from typing import Any

from redactopt.interface.options import EXIT_FAIL, EXIT_OK, refuse_given

#: What a composed audit states, in one line (docs/mathematics.md, §14).
COMPOSE_NOTE = ("independent local redactions of the same records reveal exactly what the product mechanism "
                "(Π of their Pr(⊥|x)) reveals: 'cumulative' is its exact leakage, not a bound")


def cmd_compose(args: argparse.Namespace) -> int:
    """Run ``audit --compose``: print the composed audit; exit 0 if ``--eps`` is met (or none is given), else 1."""
    from redactopt.release.ledger import compose_releases

    if args.mechanism is not None:
        raise ValueError("--compose takes the reports itself: give them after --compose, not as FILE")
    refuse_given(args, ["method", "n", "private", "reading", "split", "alpha", "beta", "exact", "attack"],
                 "does not apply to --compose (each report carries its chain, rows and private records)")
    rep = compose_releases(list(args.compose), eps=args.eps)
    if (args.format or "text") == "json":
        print(json.dumps({**rep, "note": COMPOSE_NOTE}, indent=2))
    else:
        print(compose_text(rep))
    return EXIT_OK if rep["passed"] in (None, True) else EXIT_FAIL


def compose_text(rep: dict[str, Any]) -> str:
    """The composed audit as text: one line per private record, the worst, the verdict."""
    names = [r["report"] for r in rep["releases"]]
    lines = [f"compose   : {len(names)} releases of {rep['rows']} rows, {rep['private_records']} private record(s)",
             f"note      : {COMPOSE_NOTE}", f"chains    : {rep['chains']}"]
    for i, r in enumerate(rep["releases"]):
        lines.append(f"release {i + 1} : {r['report']}  (eps {r['eps']:g}; worst leakage alone {r['leakage_alone']:.10g})")
    head = f"  {'sequence':<12} {'private':>8} {'cumulative':>14} " + " ".join(f"{'alone ' + str(i + 1):>14}"
                                                                          for i in range(len(names)))
    lines += ["", head]
    for rec in rep["records"]:
        sid = "-" if rec["sequence"] is None else str(rec["sequence"])
        lines.append(f"  {sid:<12} {rec['private']:>8} {rec['cumulative']:>14.10g} "
                     + " ".join(f"{a:>14.10g}" for a in rec["alone"]))
    w = rep["worst"]
    where = f"record {w['private']}" + ("" if w["sequence"] is None else f" of sequence {w['sequence']}")
    lines += ["", f"cumulative: {w['cumulative']:.10g}  (exact, worst over {rep['private_records']} private record(s): "
                  f"{where})",
              f"alone     : worst {rep['worst_alone']:.10g}; their sum {rep['sum_alone']:.10g} (shown for comparison "
              "only: for correlated data a sum is not a bound in general)"]
    if rep["eps"] is None:
        lines.append("result    : report only (no --eps given)")
    else:
        lines.append(f"eps       : {rep['eps']:g}")
        lines.append("result    : " + ("PASS (proven under every chain judged)" if rep["passed"] else
                                       "FAIL: the cumulative leakage is not proven to be at most eps"))
    return "\n".join(lines)
