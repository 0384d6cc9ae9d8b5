"""Mechanism classes on the command line (issue 26): ``design --class``, ``compare --class``,
``apply --class`` and ``audit`` of class-mechanism files and class release reports.

The parsers of the commands live in :mod:`redactopt.interface.cli` and
:mod:`redactopt.interface.cli_data`; each hands over to this module when ``--class`` names a class
other than ``local`` (``local``, the default, is today's path, untouched), and ``audit`` when the
file is a class mechanism (:mod:`redactopt.classes_io`) or a class release report
(:mod:`redactopt.release.class_apply`).  Conventions as everywhere: exit 0 success, 1 a privacy
check failed, 2 bad usage or input (one line); positions 1-based; states named by their labels.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import sys
from typing import Any

from redactopt.interface.progress import phases_of
from redactopt.errors import PrivacyCheckError, UsageError
from redactopt.interface.cli_report import check_plot
from redactopt.interface.options import EXIT_FAIL, EXIT_OK, parse_positions, refuse_given
from redactopt.interface.report import positions_text, witness_text
from redactopt.io import STDIO, check_input_path, write_output
from redactopt.model.mechanism_classes import CLASSES

__all__ = ["class_name", "class_list", "add_class_option", "cmd_class_design", "cmd_class_compare",
           "cmd_class_apply", "maybe_class_audit", "class_audit_text", "several_private_why"]

_CLASSES_TEXT = ", ".join(CLASSES)


def class_name(text: str) -> str:
    """argparse type of ``--class CLS``: one of :data:`~redactopt.model.mechanism_classes.CLASSES`."""
    name = text.strip()
    if name not in CLASSES:
        raise argparse.ArgumentTypeError(f"unknown class {text!r}; the classes are {_CLASSES_TEXT}")
    return name


def class_list(text: str) -> list[str]:
    """argparse type of ``compare --class A,B,...``: classes, comma-separated, each once."""
    items = [t.strip() for t in text.split(",")]
    if any(not t for t in items):
        raise argparse.ArgumentTypeError(f"empty item in {text!r}; the classes are {_CLASSES_TEXT}")
    return list(dict.fromkeys(class_name(t) for t in items))


def add_class_option(ap: argparse.ArgumentParser, command: str) -> None:
    """Register ``--class`` for ``design``, ``compare`` (a list) or ``apply``."""
    kinds = ("local: each record redacted on its own value (the paper's class, the default); scan: each "
             "side of the private record read outward, stopping once and publishing from there on, never "
             "reading X_p; owner: any mechanism of the records other than X_p; holder: any mechanism, X_p "
             "included. Each class contains the one before it")
    if command == "compare":
        ap.add_argument("--class", dest="cls", type=class_list, default=None, metavar="CLS[,CLS...]",
                        help="compare mechanism classes instead of methods: one row per class of local,scan,"
                             "owner,holder (in that order), each the best verified design of the class with "
                             f"its certified bound; one --n, --eps and --private per table; --plot FILE draws every "
                             f"class against eps for one chain, --n and --private ({kinds})")
        return
    what = {"design": "design the best verified mechanism of this class, with a certified bound over the "
                      "class (binary --alpha/--beta or k-state --transition chains; one private record, or with scan "
                      "and a two-state chain one run of adjacent records such as --private 49-53: each side read "
                      "outward from the run). With "
                      "scan, owner or holder, --out FILE always writes the mechanism file (JSON, format "
                      "redactopt.class-mechanism/1, which 'redactopt audit' reads) and the text summary still "
                      "goes to standard output; --method, --split, --certify-time, --no-compare, --plot, ranges "
                      "LO:HI and --format csv apply to local only",
            "apply": "release with a mechanism of this class: each distinct (length, private positions) of the "
                     "sequences gets the class's verified design, drawn exactly (secure source, or --seed); the "
                     "report holds every mechanism (format redactopt.class-mechanism/1) and 'redactopt audit' "
                     "re-judges it. The chain is given (--alpha/--beta numbers, --transition) or fitted (on the "
                     "rows published with certainty, or --fit-on); a scan protects one private record (or one run "
                     "of adjacent records of a two-state chain) per sequence, owner and holder several through disjoint blocks; --method, --robust, --workers, "
                     "--html, --chunk-rows, --backend dask and --report-sequences apply to local only"}[command]
    ap.add_argument("--class", dest="cls", type=class_name, default=None, metavar="{" + ",".join(CLASSES) + "}",
                    help=f"{what}. Default local: today's {command}, unchanged ({kinds})")


def several_private_why(cls: str, command: str) -> str:
    """Why ``command --class cls`` refuses several private records (one line)."""
    if cls == "scan":
        run = ", or one run of adjacent records (3-7)" if command == "design" else ""
        return ("--private: a scan publishes every record beyond its first release on each side, so it protects "
                f"one private record per sequence{run}; give one position{' or one run' if run else ''}, or use "
                "--class local (several are designed jointly)")
    if command == "design":
        return (f"--private: design --class {cls} designs the mechanism of one private record (a class-mechanism "
                f"file holds one; a run of adjacent records: --class scan or local); several far enough apart: "
                f"apply --class {cls} (disjoint blocks around them), or --class local (a joint design)")
    return (f"--private: design --class {cls} designs the mechanism of one private record (a class-mechanism file "
            f"holds one); several far enough apart: apply --class {cls} (disjoint blocks around them), or "
            "--class local (a joint design)")


def _point_chain(args: argparse.Namespace, *, labels: tuple[str, ...] | None = None) -> Any:
    """The chain of ``--transition`` (a KChain) or of ``--alpha``/``--beta`` numbers (the design's defaults)."""
    from redactopt.interface.options import DEFAULT_ALPHA, DEFAULT_BETA, read_transition
    from redactopt.model.chain import MarkovChain
    from redactopt.model.classes import parse_range

    if getattr(args, "transition", None) is not None:
        refuse_given(args, ["alpha", "beta"], "cannot be combined with --transition (the matrix is the chain)")
        return read_transition(args.transition, getattr(args, "labels", None))
    refuse_given(args, ["labels"], "applies to --transition only")
    a = parse_range(args.alpha, "--alpha") if args.alpha is not None else (DEFAULT_ALPHA,) * 2
    b = parse_range(args.beta, "--beta") if args.beta is not None else (DEFAULT_BETA,) * 2
    if a[0] != a[1] or b[0] != b[1]:
        raise UsageError(f"--alpha/--beta: a range LO:HI (a class of chains) applies to --class local only; "
                         f"--class {args.cls} designs for one chain")
    chain = MarkovChain(a[0], b[0])
    if labels is None:
        return chain
    from redactopt.model.chain import Chain as KChain

    return KChain.from_binary(chain, labels=labels)


# --------------------------------------------------------------------------
# design
# --------------------------------------------------------------------------
def cmd_class_design(args: argparse.Namespace) -> int:
    """``redactopt design --class scan|owner|holder``: format_text or the mechanism file (``--out``: always the file)."""
    from redactopt._validate import check_eps, check_n
    from redactopt.engine.classes_design import design_class, format_text
    from redactopt.interface.options import rename_value

    cls = args.cls
    if args.method != "optimal":
        raise UsageError(f"--method chooses among the local optimisers; --class {cls} has its own (give --class local "
                         "or no --class for --method)")
    refuse_given(args, ["split", "certify_time", "no_compare", "plot"], "applies to --class local only")
    rename_value(args, "format", {"table": "text"})
    fmt = args.format or "text"
    if fmt not in ("text", "json"):
        raise UsageError(f"--format {fmt} applies to --class local (a table of redaction probabilities); "
                         f"--class {cls}: text or json")
    chain = _point_chain(args)
    n = check_n(args.n, "--n")
    eps = check_eps(args.eps, "--eps")
    private = parse_positions("1" if args.private is None else args.private, n)
    is_run = len(private) > 1 and sorted(private) == list(range(min(private), max(private) + 1))
    if len(private) > 1 and not (is_run and cls == "scan"):
        raise UsageError(several_private_why(cls, "design"))
    if is_run and (getattr(chain, "k", 2) != 2):
        raise UsageError("--private: a run of private records is designed in the scan class for two-state chains "
                         "(--alpha/--beta or a 2x2 --transition); give one position, or --class local")
    if args.time_limit <= 0:
        raise UsageError(f"--time-limit must be > 0, got {args.time_limit:g}")
    if args.out == STDIO and args.format == "text":
        raise UsageError("--out - writes the mechanism file to standard output; the text summary needs it too "
                         "(give --out FILE, or --format json)")
    d = design_class(chain, n, eps=eps, p=private if is_run else private[0], cls=cls, time_limit=args.time_limit)
    mech_file = json.dumps(d.to_dict(), indent=2)
    if args.out is None or args.out == STDIO:
        shown = json.dumps(dict(d.to_dict(), phases=phases_of(args)), indent=2) if fmt == "json" else mech_file
        write_output(shown if fmt == "json" or args.out == STDIO else format_text(d), None)
        return EXIT_OK
    if fmt == "text":
        write_output(format_text(d), None)
    write_output(mech_file, args.out, force=args.force)
    print(f"wrote {args.out}")
    return EXIT_OK


# --------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------
def _compare_chains(args: argparse.Namespace) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``(cli_compare's chain arguments, the row's chain columns)`` of every chain of the lists."""
    if args.transition is not None:
        if args.alpha is not None or args.beta is not None:
            raise UsageError("--alpha/--beta cannot be combined with --transition (the matrix is the chain)")
        from redactopt.interface.options import read_transition

        kc = read_transition(args.transition, args.labels).to_dict()
        shown = ";".join(",".join(str(v) for v in row) for row in kc["transition"])
        return [({"transition": kc["transition"], "labels": kc["labels"]},
                 {"states": ",".join(kc["labels"]), "transition": shown})]
    if args.labels is not None:
        raise UsageError("--labels applies to --transition only")
    from redactopt.interface.options import DEFAULT_ALPHA, DEFAULT_BETA

    out = []
    for a, b in itertools.product(args.alpha or [(DEFAULT_ALPHA,) * 2], args.beta or [(DEFAULT_BETA,) * 2]):
        if a[0] != a[1] or b[0] != b[1]:
            raise UsageError("--alpha/--beta: a range LO:HI (a class of chains) applies to the methods' compare; "
                             "--class compares designs for one chain")
        out.append(({"alpha": a[0], "beta": b[0]}, {"alpha": a[0], "beta": b[0]}))
    return out


def cmd_class_compare(args: argparse.Namespace) -> int:
    """``redactopt compare --class local,scan,...``: format_compare's table (or JSON/CSV rows) per point."""
    from redactopt._validate import check_eps, check_n
    from redactopt.engine.classes_design import cli_compare, format_compare
    from redactopt.interface.options import rename_value
    from redactopt.interface.report import rows_csv

    rename_value(args, "format", {"markdown": "text"})
    fmt = args.format or "text"  # (the outputs were checked by compare itself, before any reading)
    chains = _compare_chains(args)
    privates = parse_positions("1" if args.private is None else args.private)
    points = list(itertools.product(args.n, chains, privates, args.eps))
    for n, _, p, eps in points:  # every point is checked before the first (slow) design
        if p >= check_n(n, "--n"):
            raise UsageError(f"--private: position {p + 1} is outside the {n} records")
        check_eps(eps, "--eps")
    if args.plot is not None:
        if len(args.n) * len(chains) * len(privates) > 1:
            raise UsageError("--plot with --class draws every class against eps for one chain, one --n and one "
                             "--private; give one of each (and several --eps)")
        check_plot(args)
    rows, blocks = [], []
    for n, (chain_args, shown), p, eps in points:
        got = cli_compare({**chain_args, "n": n, "eps": eps, "private": p + 1, "classes": ",".join(args.cls),
                           "time_limit": args.time_limit})
        rows += [{"n": n, "private": p + 1, "eps": eps, **shown, **r} for r in got]
        head = "  ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in
                         {"n": n, "p": p + 1, "eps": eps, **shown}.items())
        blocks.append(head + "\n" + format_compare(got))
    text = json.dumps(rows, indent=2) if fmt == "json" else rows_csv(rows) if fmt == "csv" else "\n\n".join(blocks)
    write_output(text, args.out, force=args.force)
    if args.out is not None and args.out != STDIO:
        print(f"wrote {args.out}")
    if args.plot is not None:
        from redactopt.interface.plots import classes_figure, save_figure

        path = save_figure(classes_figure(rows), args.plot, force=bool(args.force))
        print(f"wrote {path}", file=sys.stderr if fmt != "text" and args.out in (None, STDIO) else sys.stdout)
    return EXIT_OK


# --------------------------------------------------------------------------
# apply
# --------------------------------------------------------------------------
def _apply_refusals(args: argparse.Namespace) -> None:
    """The options of ``apply`` a class release cannot honour (each named)."""
    why = "applies to --class local only"
    refuse_given(args, ["robust", "chunk_rows", "workers", "html"], why)
    if args.method != "auto":
        raise UsageError(f"--method chooses among the local designs; --class {args.cls} has its own design "
                         "(give --class local or no --class for --method)")
    if args.backend != "memory":
        raise UsageError(f"--backend dask is not available with --class {args.cls}")
    if getattr(args, "report_sequences", "auto") != "auto":
        raise UsageError("--report-sequences applies to --class local only (a class report lists every sequence "
                         "and each distinct design once)")
    if args.out == STDIO:
        raise UsageError("--out -: class releases are written to a file (.csv, .tsv or .parquet)")


def _apply_chain(args: argparse.Namespace, binary: bool) -> Any:
    """The given chain of a class release (labels "0", "1" for a 0/1 column), or ``None``: fitted."""
    if args.transition is not None:
        return _point_chain(args)
    if args.alpha is None and args.beta is None:
        return None
    if not binary:
        raise UsageError("--alpha/--beta give the chain of a 0/1 column; a categorical column takes --transition")
    if args.alpha is None or args.beta is None:
        raise UsageError("--alpha and --beta give the chain together: give both, or neither (fitted)")
    return _point_chain(args, labels=("0", "1"))


def cmd_class_apply(args: argparse.Namespace) -> int:
    """``redactopt apply INPUT ... --class scan|owner|holder``."""
    from redactopt.interface.options import keep_option
    from redactopt.interface.report import release_lines
    from redactopt.io import stdin_as_file
    from redactopt.release.class_apply import class_apply_table

    _apply_refusals(args)
    binary = not (args.categorical or args.transition is not None or args.protect is not None or args.bin)
    chain = _apply_chain(args, binary)
    private = parse_positions(args.private) if args.private is not None else None
    try:
        with stdin_as_file(args.input) as path:
            rep = class_apply_table(path, args.out, cls=args.cls, eps=args.eps, report=args.report, force=args.force,
                                    fit_on=args.fit_on, column=args.column, protect=args.protect, bins=args.bin,
                                    binary=binary, private=private, private_column=args.private_column, by=args.by,
                                    chain=chain, seed=args.seed, time_limit=args.time_limit, keep=keep_option(args),
                                    order_by=args.order_by, smoothing=getattr(args, "smoothing", None) or "kt")
    except PrivacyCheckError as exc:
        sys.stderr.write(f"redactopt apply: privacy check failed: {exc}\n")
        return EXIT_FAIL
    rep["input"] = str(args.input)
    if (args.format or "text") == "json":
        keys = ("output", "rows", "class", "states", "eps", "leakage", "utility", "randomness", "label", "warnings",
                "columns", "summary")
        summary = {k: rep[k] for k in keys}
        summary.update(chain={k: rep["chain"][k] for k in ("source", "transition")}, report=args.report,
                       sequences=len(rep["sequences"]), designs=len(rep["designs"]),
                       fit_rows=rep["chain"].get("fit_rows"), phases=phases_of(args))
        text = json.dumps(summary, indent=2)
    else:
        text = "\n".join(_apply_lines(rep, args) + release_lines(rep["columns"], rep["chain"].get("fit_rows"),
                                                                 rep["summary"])
                         + ([f"report    : {args.report}"] if args.report else []))
    taken = args.report == STDIO
    if not (taken and args.quiet):
        print(text, file=sys.stderr if taken else sys.stdout)
    return EXIT_OK


def _apply_lines(rep: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """The summary lines of a class release before the columns' lines."""
    seqs = rep["sequences"]
    lines = [f"wrote     : {rep['output']}  ({rep['rows']} rows, {rep['utility']['redacted']} redacted)",
             f"class     : {rep['class']}  (every mechanism judged exactly: {', '.join(rep['leakage']['verdicts'])})",
             f"states    : {', '.join(rep['states'])}  (column{'s' if args.protect else ''} "
             f"'{args.protect or args.column}')",
             f"chain     : {rep['chain']['source']}; P = " + "; ".join(
                 ",".join(f"{float(_number(v)):.4g}" for v in row) for row in rep["chain"]["transition"]),
             f"eps       : {rep['eps']:g}",
             f"leakage   : {rep['leakage']['max']:.10g}  (exact, worst over {rep['leakage']['private_records']} "
             "private record(s))",
             f"utility   : expected {rep['utility']['expected']:.6g}  realised {rep['utility']['realised']:.6g}"]
    if rep["by"] is not None:
        lines.append(f"sequences : {len(seqs)} (by '{rep['by']}'), {sum(1 for s in seqs if s['private'])} with "
                     f"private records, {len(rep['designs'])} distinct design(s)")
    lines.append(f"randomness: {rep['randomness']['source']}")
    if rep["label"]:
        lines.append(f"label     : {rep['label']}")
    lines += [f"warning   : {w}" for w in rep["warnings"]]
    return lines


def _number(v: Any) -> float:
    from fractions import Fraction

    return float(Fraction(v)) if isinstance(v, str) else float(v)


# --------------------------------------------------------------------------
# audit
# --------------------------------------------------------------------------
def _read_json(args: argparse.Namespace) -> tuple[Any, str] | None:
    """The parsed file of ``audit FILE`` if it is a class mechanism or class report, else ``None`` (standard
    input put back for the other readers)."""
    from redactopt.classes_io import is_class_mechanism, is_class_report

    if args.mechanism == STDIO:
        text = sys.stdin.read()
        sys.stdin = io.StringIO(text)
        where = "<stdin>"
    else:
        try:
            text = check_input_path(args.mechanism).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, ValueError):
            return None  # the other readers report it
        where = str(args.mechanism)
    try:
        d = json.loads(text)
    except json.JSONDecodeError:
        return None
    return (d, where) if is_class_mechanism(d) or is_class_report(d) else None


def _files_of(d: dict) -> list[dict]:
    """The mechanism files of a class-mechanism file (itself) or of a class report (every design's, in order)."""
    from redactopt.classes_io import is_class_report

    if not is_class_report(d):
        return [d]
    return [m for des in d["designs"] for m in des["mechanisms"]]


def _chain_line(transition: Any) -> str:
    """The audit's chain line: ``P = ...`` for one matrix; per level for a chain that varies with the step."""
    def rows(M: Any) -> str:
        return "; ".join(",".join(f"{_number(v):.6g}" for v in row) for row in M)

    if isinstance(transition, dict):  # a varying chain: one matrix per level (docs/commands.md, 'Varying chains')
        return "chain     : varies with the step: " + " | ".join(f"{lv}: P = {rows(M)}" for lv, M in transition.items())
    return "chain     : P = " + rows(transition)


def class_audit_text(rep: dict[str, Any]) -> str:
    """An exact audit of one class mechanism, worded as the local audits (``result : PASS`` / ``FAIL: ...``)."""
    a, b = rep["pair"]
    holder = " (holder scan: reads X_p)" if rep.get("holder") else ""
    lines = [f"mechanism : {rep['class']}{holder}  n={rep['n']}  private={positions_text(rep['private'])}  "
             f"k={len(rep['states'])}  states={','.join(rep['states'])}",
             _chain_line(rep["transition"]),
             f"eps       : {rep['eps']:.6g}",
             f"leakage   : {rep['leakage']:.10g}  (exact, nats)",
             f"witness   : {witness_text(rep['witness'])}",
             f"            attains log Pr(y | X_p={a}) / Pr(y | X_p={b})",
             f"utility   : {rep['utility']:.10g}"]
    verdict = "PASS" if rep["passed"] else ("FAIL: leakage exceeds eps" if rep["leakage"] > rep["eps"]
                                            else "FAIL: not certified exactly")
    lines.append(f"result    : {verdict}")
    return "\n".join(lines)


def maybe_class_audit(args: argparse.Namespace) -> int | None:
    """``redactopt audit FILE`` on a class mechanism or class release report: its exit status (0 every mechanism
    certified, 1 otherwise); ``None`` for any other file."""
    from redactopt.classes_io import audit_dict, is_class_report

    got = _read_json(args)
    if got is None:
        return None
    d, where = got
    if args.method:
        raise UsageError("give either a mechanism file or --method, not both")
    refuse_given(args, ["n", "private", "reading", "split", "alpha", "beta"],
                 "applies to --method only: a class-mechanism file carries its own chain, n and private record")
    refuse_given(args, ["exact", "attack", "samples", "confidence", "attack_seed", "time_limit"],
                 "is not available for class mechanisms (their audit is always exact: outward rounding, and "
                 "rationals wherever that cannot decide)")
    if is_class_report(d):
        from redactopt.release.class_audit import audit_report

        got = audit_report(d, where, eps=args.eps)
        reports, problems = got["mechanisms"], got["problems"]
    else:
        reports, problems = [audit_dict(d if args.eps is None else {**d, "eps": args.eps}, where)], []
    for r, m in zip(reports, _files_of(d)):
        r.update(n=m["n"], private=list(m["private"]), states=[str(s) for s in m["states"]],
                 holder=m.get("holder") is True, transition=m["chain"]["transition"])
    passed = all(r["passed"] for r in reports) and not problems
    fmt = args.format or "text"
    if not is_class_report(d):
        text = json.dumps(reports[0], indent=2) if fmt == "json" else class_audit_text(reports[0])
    elif fmt == "json":
        text = json.dumps({"mechanisms": reports, "problems": problems, "passed": passed}, indent=2)
    else:
        blocks = [f"{r['design']}\n{class_audit_text(r)}" for r in reports]
        if problems:
            blocks.append("report    : FAIL: the report disagrees with its designs\n"
                          + "\n".join(f"  - {p}" for p in problems))
        failed = sum(1 for r in reports if not r["passed"])
        blocks.append(f"overall   : {'PASS' if passed else 'FAIL'} ({len(reports) - failed} of {len(reports)} "
                      f"mechanisms pass{'' if not problems else f'; {len(problems)} problem(s) with the report'})")
        text = "\n\n".join(blocks)
    print(text)
    return EXIT_OK if passed else EXIT_FAIL
