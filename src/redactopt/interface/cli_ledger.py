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


# --------------------------------------------------------------------------
# apply --ledger FILE [--total-eps E] [--consistent]
# --------------------------------------------------------------------------
def add_ledger_options(ap: argparse.ArgumentParser) -> None:
    """Register ``--ledger``, ``--total-eps`` and ``--consistent`` on ``apply``."""
    ap.add_argument("--ledger", default=None, metavar="FILE",
                    help="record the release in this ledger (JSON, redactopt.ledger/1, one per dataset; created by "
                         "the first release) and design it against what is left of the ledger's total budget: "
                         "every private record's cumulative exact leakage over all ledgered releases stays "
                         "<= --total-eps (refused in one line, nothing written, when the budget is spent). Binary "
                         "local releases (--column), --backend memory")
    ap.add_argument("--total-eps", type=float, default=None, metavar="E",
                    help="with --ledger: the budget of all releases together per private record (nats); required "
                         "on the ledger's first release, then stored (a later release may omit it)")
    ap.add_argument("--consistent", action="store_true",
                    help="with --ledger: publish again every value an earlier release published (no extra "
                         "leakage: the release is the union) and redraw only the records all of them redacted; "
                         "the release's own leakage is then its cumulative one (give --eps = the total)")


def open_ledger(args: argparse.Namespace) -> Any:
    """The :class:`~redactopt.release.ledger_release.LedgeredRelease` of ``apply --ledger`` (``None`` without
    one), after refusing in one line what a ledger cannot compose."""
    from pathlib import Path

    from redactopt.errors import UsageError

    if args.ledger is None:
        refuse_given(args, ["total_eps", "consistent"], "applies with --ledger FILE only")
        return None
    from redactopt.release.ledger_file import NOT_LOCAL, read_ledger
    from redactopt.release.ledger_release import LedgeredRelease

    if args.cls not in (None, "local"):
        raise UsageError(f"--ledger with --class {args.cls}: {NOT_LOCAL}")
    why = "is not available with --ledger yet (the ledger composes binary local releases on one chain)"
    refuse_given(args, ["varies_with", "categorical", "transition", "protect", "bin", "cover", "public_report",
                        "robust"], why)
    if args.backend != "memory":
        raise UsageError("--ledger runs with --backend memory")
    if args.report_sequences not in ("auto", "inline"):
        raise UsageError("--ledger keeps every designed sequence's mechanism inside the report: "
                         "--report-sequences auto or inline")
    if any(v is not None and ":" in str(v) for v in (args.alpha, args.beta)):
        raise UsageError("--ledger composes releases under one chain each: a box --alpha LO:HI is not available with "
                         "it yet")
    ledger = Path(args.ledger)
    for name, other in (("the input", args.input), ("--out", args.out), ("--report", args.report),
                        ("--html", getattr(args, "html", None)), ("--fit-on", args.fit_on)):
        if other not in (None, "-") and Path(other).resolve() == ledger.resolve():
            raise UsageError(f"--ledger {args.ledger} is also {name}")
    return LedgeredRelease(read_ledger(ledger, create=True), eps=args.eps, total_eps=args.total_eps,
                           consistent=args.consistent, column=args.column, by=args.by, seeded=args.seed is not None)
