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
    ap.add_argument("--extend", action="store_true",
                    help="with --ledger: INPUT holds only the rows appended to the ledger's sequences (by --by); "
                         "release them so that every private record, old and new, stays within the total budget "
                         "(only the earlier releases' open tail is judged with them: the old rows are not read). "
                         "--private takes positions among the new rows, or 'none'")


def open_ledger(args: argparse.Namespace) -> Any:
    """The :class:`~redactopt.release.ledger_release.LedgeredRelease` of ``apply --ledger`` (``None`` without
    one), after refusing in one line what a ledger cannot compose."""
    from pathlib import Path

    from redactopt.errors import UsageError

    if args.ledger is None:
        refuse_given(args, ["total_eps", "consistent", "extend"], "applies with --ledger FILE only")
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


# --------------------------------------------------------------------------
# audit --ledger FILE; the ledger's lines in apply's and audit's summaries
# --------------------------------------------------------------------------
LEDGER_NOTE = ("alone: the release's own exact leakage (a --consistent release shows the earlier releases' values, "
               "so alone it leaks what they leak together); cumulative: the exact leakage of releases 1..j "
               "together (the product of their factors), not a sum")


def cmd_ledger_audit(args: argparse.Namespace) -> int:
    """``audit --ledger FILE``: every release re-judged from the ledger's factors; exit 0 if the cumulative
    leakage after the last release is proven within the ledger's total budget, else 1."""
    from redactopt.release.ledger import audit_ledger

    if args.mechanism is not None:
        raise ValueError("--ledger takes the ledger file itself: give it after --ledger, not as FILE")
    refuse_given(args, ["method", "n", "private", "reading", "split", "alpha", "beta", "exact", "attack", "eps"],
                 "does not apply to --ledger (the ledger carries its chains, rows, private records and budget)")
    rep = audit_ledger(args.ledger)
    if (args.format or "text") == "json":
        print(json.dumps({**rep, "note": LEDGER_NOTE}, indent=2))
    else:
        lines = [f"ledger    : {rep['ledger']}  ({len(rep['releases'])} release(s) of {rep['rows']} rows, column "
                 f"{rep['column']!r}" + (f" by {rep['by']!r}" if rep["by"] else "") + ")",
                 f"note      : {LEDGER_NOTE}"]
        lines += history_lines(rep["releases"], rep["total_eps"])
        if not rep["stored_matches"]:
            lines.append("stored    : the ledger's stored leakages differ from the re-judged ones above (edited?)")
        lines.append("result    : " + (f"PASS (cumulative {rep['cumulative']:.10g} proven <= total {rep['total_eps']:g} "
                                       "under every chain of the ledger)" if rep["passed"] else
                                       f"FAIL: the cumulative leakage is not proven <= {rep['total_eps']:g}"))
        print("\n".join(lines))
    return EXIT_OK if rep["passed"] else EXIT_FAIL


def history_lines(releases: list[dict[str, Any]], total: float | None) -> list[str]:
    """One line per release of a ledger: its ε, its leakage alone and the cumulative leakage after it."""
    head = f"  {'release':>7} {'time':<25} {'eps':>6} {'alone':>14} {'cumulative':>14}  of total {total:g}" \
        if total is not None else f"  {'release':>7} {'time':<25} {'eps':>6} {'alone':>14} {'cumulative':>14}"
    out = [head]
    for r in releases:
        out.append(f"  {r['release']:>7} {str(r.get('time') or ''):<25} {r['eps']:>6g} {r['leakage_alone']:>14.10g} "
                   f"{r['cumulative']:>14.10g}" + ("  (consistent)" if r.get("consistent") else ""))
    return out


def ledger_lines(ledger: dict[str, Any] | None) -> list[str]:
    """What ``apply`` prints of a ledgered release (its report's ``ledger`` section)."""
    if not ledger:
        return []
    u = ledger["utility"]
    lines = [f"ledger    : release {ledger['release']} of {ledger['file']} (total budget {ledger['total_eps']:g}"
             + ("; consistent: the earlier releases' values published again" if ledger["consistent"] else "") + ")"]
    lines += history_lines(ledger["releases"], None)
    lines.append(f"ledger    : cumulative {ledger['cumulative']:.10g} <= {ledger['total_eps']:g} (exact, every "
                 f"ledgered release together); this release alone {ledger['leakage_alone']:.10g}; expected utility "
                 f"{u['expected']:.6g}, certified upper bound {u['upper_bound']:.6g} (gap {u['gap']:.3g})")
    return lines


def report_ledger_lines(path: str) -> str:
    """``audit REPORT`` of a ledgered release: the ledger's history as the report states it ('' otherwise)."""
    from redactopt.io import STDIO, load_json

    if str(path) == STDIO:
        return ""
    try:
        d, _ = load_json(path)
    except ValueError:
        return ""
    led = d.get("ledger") if isinstance(d, dict) else None
    if not isinstance(led, dict) or not isinstance(led.get("releases"), list):
        return ""
    lines = [f"ledger    : release {led.get('release')} of {led.get('file')} (as the report states it; "
             "re-judge every release with: redactopt audit --ledger FILE)"]
    lines += history_lines(led["releases"], led.get("total_eps"))
    return "\n\n" + "\n".join(lines)


def cmd_extend(args: argparse.Namespace, ledger: Any, private: Any, keep: Any) -> int:
    """``apply NEW_ROWS --ledger FILE --extend``: release the appended rows (:mod:`redactopt.release.ledger_extend`)."""
    import sys

    from redactopt.errors import PrivacyCheckError, UsageError
    from redactopt.release.ledger_extend import extend_table

    if args.consistent:
        raise UsageError("--extend publishes only the new rows: --consistent does not apply")
    refuse_given(args, ["fit_on", "accept_model"], "is not available with --extend (the chain is the ledger's or "
                 "--alpha/--beta; the release of the appended rows makes no model checks of its own)")
    try:
        rep = extend_table(args.input, args.out, column=args.column, eps=args.eps, ledger=ledger, private=private,
                           private_column=args.private_column, by=args.by, alpha=_num(args.alpha),
                           beta=_num(args.beta), method=args.method, seed=args.seed, report=args.report,
                           force=args.force, chunk_rows=args.chunk_rows, time_limit=args.time_limit,
                           workers=args.workers, keep=keep, order_by=args.order_by)
    except PrivacyCheckError as exc:
        sys.stderr.write(f"redactopt apply: privacy check failed: {exc}\n")
        return EXIT_FAIL
    if (args.format or "text") == "json":
        text = json.dumps({k: rep[k] for k in ("output", "rows", "eps", "utility", "leakage", "ledger")}, indent=2)
    else:
        lines = [f"wrote     : {rep['output']}  ({rep['rows']} appended rows, {rep['utility']['redacted']} redacted)",
                 f"chain     : alpha={rep['chain']['alpha']:.6g}  beta={rep['chain']['beta']:.6g}  (the ledger's "
                 "or given)",
                 f"eps       : {rep['eps']:g} for the new private records alone; total {rep['ledger']['total_eps']:g}",
                 f"leakage   : {rep['leakage']['max']:.10g} alone (exact, worst over {rep['leakage']['private_records']}"
                 " new private record(s))",
                 f"utility   : expected {rep['utility']['expected']:.6g}  realised {rep['utility']['realised']:.6g}"]
        for r in rep["sequences"]:
            if r.get("open_earlier") or r.get("wiped"):
                sid = "" if r["id"] is None else f"sequence {r['id']}: "
                lines.append(f"extension : {sid}rows from {r['first']} of the extended sequence; earlier private "
                             f"record(s) still open {r.get('open_earlier') or 'none'}; first {r.get('wiped', 0)} new "
                             "row(s) redacted with certainty")
        lines += ledger_lines(rep["ledger"])
        if args.report:
            lines.append(f"report    : {args.report}  (CONFIDENTIAL: names the private rows — do not publish with the "
                         "release)")
        text = "\n".join(lines)
    if not (args.quiet and "-" in (args.out, args.report)):
        print(text, file=sys.stderr if "-" in (args.out, args.report) else sys.stdout)
    from redactopt.interface.cli_report import maybe_write_html

    maybe_write_html(args, rep)
    return EXIT_OK


def _num(v: Any) -> float | None:
    return None if v is None else float(v)
