"""The data commands ``fit`` and ``apply`` (registered by :mod:`redactopt.interface.cli`).

A thin layer over :mod:`redactopt.release`: parse, call, print.  Exit codes as everywhere:
0 success, 1 a privacy check failed, 2 bad usage or input (one line on stderr naming the
row or column).  Positions are 1-based.  ``-`` reads CSV from standard input or writes to
standard output; then the summary goes to standard error, so the data stay clean.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import Any


from redactopt.engine.joint import JOINT_METHODS
from redactopt.errors import PrivacyCheckError, UsageError
from redactopt.interface.options import (
    EXIT_FAIL,
    EXIT_OK,
    add_format,
    add_quiet,
    keep_option,
    parse_positions,
    read_transition,
    refuse_given,
)
from redactopt.interface.cli_classes import add_class_option
from redactopt.interface.cli_ledger import add_ledger_options, ledger_lines, open_ledger
from redactopt.interface.cli_report import add_html_option, check_html, maybe_write_html
from redactopt import _progress
from redactopt.interface.progress import phases_of
from redactopt.interface.report import release_lines
from redactopt.io import STDIO, stdin_as_file
from redactopt.model.classes import parse_range

#: What a report that names the private rows says on its first line (:data:`redactopt.release.reveals.CONFIDENTIAL`).
CONFIDENTIAL = "CONFIDENTIAL: names the private rows — do not publish with the release"

__all__ = ["add_fit_parser", "add_apply_parser"]

def _add_input(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("input", metavar="INPUT",
                    help="CSV (.csv/.txt/.tsv, optionally compressed: .csv.gz/.bz2/.xz/.zst) or Parquet (.parquet) "
                         "file; '-' reads CSV from standard input; with apply --backend dask a folder or a glob of "
                         "files")
    ap.add_argument("--chunk-rows", type=int, default=None,
                    help="rows read at a time (default one million); memory grows with this, not with the input")


def _chunk(args: argparse.Namespace) -> dict[str, int]:
    return {} if args.chunk_rows is None else {"chunk_rows": args.chunk_rows}


# --------------------------------------------------------------------------
# fit
# --------------------------------------------------------------------------
def add_fit_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``redactopt fit INPUT --column NAME [--by ID] [--format text|json]``."""
    ap = sub.add_parser(
        "fit",
        help="fit the chain to a binary (alpha, beta) or categorical column, with intervals and an order test",
        description=(
            "Maximum-likelihood estimates of alpha = P(0->1) and beta = P(1->0) from the transitions of a 0/1 "
            "column of a CSV or Parquet file (format by extension), pooled over the sequences of --by (rows "
            "of one id in file order; default: the whole file is one sequence). Prints confidence intervals, "
            "the transition counts, a likelihood-ratio test of a first- against a second-order chain, and "
            "warnings (short data, estimates at 0 or 1). A missing or non-0/1 value stops with one line "
            "naming the row and column (exit 2). With --categorical the column's values are the states and "
            "the same estimator fits the transition matrix row by row (intervals of every entry, the same "
            "order test, never-seen transitions smoothed unless --smoothing none)."
        ),
    )
    _add_input(ap)
    ap.add_argument("--column", required=True, help="the binary (0/1) column")
    ap.add_argument("--by", default=None, help="column naming the sequence of each row")
    ap.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    ap.add_argument("--interval", choices=["wilson", "lr", "wald"], default="wilson",
                    help="wilson score (default), binomial likelihood-ratio, or wald; of every transition "
                         "probability (alpha and beta of a binary column, every entry of a categorical one)")
    ap.add_argument("--categorical", action="store_true",
                    help="a k-state chain: the column's values (as text) are the states, in order of first appearance")
    ap.add_argument("--smoothing", choices=["kt", "none"], default=None,
                    help="--categorical: rows with a never-seen transition use the Krichevsky-Trofimov estimate "
                         "(kt, default) or keep the estimate 0 (none)")
    ap.add_argument("--order-by", default=None, metavar="COL",
                    help="order the rows of each sequence by this column (numbers, datetimes or text) before "
                         "counting transitions, as apply does; with a datetime column the fit also tests one chain "
                         "against one per hour of the day and one per weekday")
    ap.add_argument("--varies-with", default=None, metavar="COL[:hour|:weekday|:hour+weekday]",
                    help="also fit a chain whose transitions change with a level: the hour, the weekday or both of "
                         "a datetime column, or the values of any column (the step from a row to the next uses the "
                         "row's level); prints each level's counts and estimates with intervals, levels without "
                         "data, and the homogeneity test (one chain against one per level)")
    add_format(ap, ["text", "json"])
    add_quiet(ap)
    ap.set_defaults(func=_cmd_fit)


def _cmd_fit(args: argparse.Namespace) -> int:
    """``redactopt fit``: one streaming scan and one estimator; the column's codec is 0/1 unless --categorical.

    ``--order-by`` orders each sequence first (in memory, as apply does); the alternatives to one chain
    (``--varies-with``, and per hour and weekday of a datetime ``--order-by``) take one more pass each.
    """
    if not args.categorical:
        refuse_given(args, ["smoothing"], "applies to --categorical only")
    # pandas and pyarrow load with the data commands only: design and audit start faster
    from redactopt.release.fit import fit_counts
    from redactopt.release.levels import model_alternatives, parse_varies_with

    spec = None if args.varies_with is None else parse_varies_with(args.varies_with)
    options = dict(smoothing=args.smoothing or "kt") if args.categorical else {}
    with stdin_as_file(args.input) as path:  # progress: main() watches (redactopt._progress)
        state, labels, source, where = _fit_scan(args, path, spec, _progress.report)
        if state.rows == 0:
            raise UsageError(f"{where}: no data rows")
        try:
            with _progress.phase("fit"):
                fit = fit_counts(state.counts(), tuple(labels), confidence=args.confidence,
                                 interval=args.interval, **options)
        except ValueError as exc:
            if not args.categorical:
                raise
            raise UsageError(f"{args.input}: {exc}") from None
        with _progress.phase("check"):
            alt = model_alternatives(source, column=args.column, by=args.by, order_by=args.order_by,
                                     varies_with=spec, labels=tuple(labels), categorical=args.categorical, fit=fit,
                                     confidence=args.confidence, interval=args.interval, **options)
    if (args.format or "text") == "json":
        d: dict[str, Any] = {"input": str(args.input), "column": args.column, "by": args.by,
                             "order_by": args.order_by}
        d.update(fit.to_dict())
        d.update(alt.to_dict())
        print(json.dumps(d, indent=2))
    else:
        print(f"input     : {args.input}  column '{args.column}'" + (f"  by '{args.by}'" if args.by else "")
              + (f"  ordered by '{args.order_by}'" if args.order_by else "")
              + ("  (categorical)" if args.categorical else ""))
        print(fit.text())
        if alt.text():
            print(alt.text())
    return EXIT_OK


def _fit_scan(args: argparse.Namespace, path: Any, spec: Any, bars: Any) -> tuple[Any, Any, Any, str]:
    """The scan ``fit`` estimates from: ``(state, labels, reader of the rows in sequence order, label)``."""
    from redactopt.release.passes import ordered_scan, scan_states, scan_table
    from redactopt.release.codec import BinaryCodec, StatesCodec
    from redactopt.release.fit import BINARY_LABELS
    from redactopt.release.tables import TableReader

    reader = TableReader(path, label="<stdin>" if args.input == STDIO else None, **_chunk(args))
    reader.require(args.column, args.by, args.order_by, None if spec is None else spec.column)
    if args.order_by is not None:
        codec = StatesCodec(args.column) if args.categorical else BinaryCodec(args.column)
        state, ordered = ordered_scan(reader, column=args.column, by=args.by, private_column=None,
                                      order_by=args.order_by, codec=codec)
        return state, (codec.labels if args.categorical else BINARY_LABELS), ordered.reader, reader.label
    if args.categorical:
        state, labels = scan_states(reader, column=args.column, by=args.by, progress=bars)
        return state, labels, reader, reader.label
    return scan_table(reader, column=args.column, by=args.by, progress=bars), BINARY_LABELS, reader, reader.label


# --------------------------------------------------------------------------
# apply
# --------------------------------------------------------------------------
def add_apply_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``redactopt apply INPUT --column NAME (--private LIST | --private-column NAME) --eps E ...``."""
    ap = sub.add_parser(
        "apply",
        help="design a mechanism for the private records of a table, draw the redactions, write the release",
        description=(
            "Protect the private records of a 0/1 column (--column), or of several categorical columns together "
            "(--protect; numeric ones binned with --bin): fit the chain on the rows the release publishes with "
            "certainty (unless it is given: --alpha/--beta, --transition, or --fit-on a public table), design a "
            "mechanism whose exact leakage about every private record is <= eps (verified on the whole sequence), "
            "draw the redactions exactly with the operating system's secure source (or --seed, not for real "
            "releases) and write the release, redacted entries empty (CSV) or null (Parquet). The release holds "
            "the protected column(s), --by and --order-by and nothing else unless named (--keep, --keep-all); "
            "every other column written is listed in the summary and the report as not covered by the guarantee, "
            "with the accuracy of the best single-threshold (numbers, dates) or per-category (text) rule that "
            "predicts the protected value from it on the published rows, next to the majority-class rate. The "
            "--private-column is never written unless named in --keep. The output is written to a temporary "
            "file and renamed; it is never overwritten without --force, never created in a missing directory, "
            "and the input is never modified. '-' reads CSV from standard input (--out - writes CSV to standard "
            "output, --report - the report). Exit 0 on success, 1 if no design passes the privacy check, 2 on "
            "bad input (one line naming the row or column, no output written)."
        ),
    )
    _add_input(ap)
    _add_columns_options(ap)
    _add_chain_and_design_options(ap)
    _add_output_options(ap)
    add_class_option(ap, "apply")
    add_format(ap, ["text", "json"], help="summary: text (default) or json")
    add_quiet(ap)
    ap.set_defaults(func=_cmd_apply)


def _add_columns_options(ap: argparse.ArgumentParser) -> None:
    """apply: what is protected, what else is written, the order and the private rows."""
    ap.add_argument("--column", default=None, help="the binary (0/1) column to protect (or --protect)")
    ap.add_argument("--protect", default=None, metavar="COL[,COL...]",
                    help="protect several categorical or binary columns together: a row's record is the tuple of "
                         "their values (a k-state chain of tuples), and a redaction empties all of them")
    ap.add_argument("--bin", action="append", default=None, metavar="COL:EDGE[,EDGE...]",
                    help="turn a numeric protected column into categories first (e.g. Light:100,400: <100, "
                         "100-400, >=400); written as its category. Repeat for several columns")
    ap.add_argument("--keep", default=None, metavar="COL[,COL...]",
                    help="also write these columns (not covered by the guarantee: the summary measures each)")
    ap.add_argument("--keep-all", action="store_true",
                    help="write every column (the --private-column only if also named in --keep); a CSV release "
                         "of a CSV file then keeps the input's bytes, redacted fields emptied")
    ap.add_argument("--order-by", default=None, metavar="COL",
                    help="order the rows of each sequence by this column (numbers, datetimes or text, as its values "
                         "read) before fitting and releasing; the output keeps the input's row order. Holds the "
                         "needed columns in memory")
    ap.add_argument("--fit-on", default=None, metavar="FILE",
                    help="fit the chain on this separate, public table (the same column(s); --by and --order-by "
                         "where it has them) instead of the release's own published rows")
    grp = ap.add_mutually_exclusive_group(required=True)
    grp.add_argument("--private", metavar="POSITIONS",
                     help="1-based positions and ranges in the sequence, e.g. 5000,5010-5020")
    grp.add_argument("--private-column", metavar="NAME", help="a 0/1 column flagging the private rows")
    ap.add_argument("--by", default=None, help="column naming the sequence of each row (use --private-column)")


def _add_chain_and_design_options(ap: argparse.ArgumentParser) -> None:
    """apply: the budget, the chain (given, fitted, a box) and the design."""
    ap.add_argument("--eps", type=float, required=True, help="privacy budget per private record (nats, > 0)")
    ap.add_argument("--alpha", default=None, metavar="A|LO:HI",
                    help="P(0->1); fitted from the data if omitted. LO:HI (with --beta, a number or LO:HI): "
                         "private for every chain of the box")
    ap.add_argument("--beta", default=None, metavar="B|LO:HI", help="P(1->0); fitted from the data if omitted")
    ap.add_argument("--robust", type=float, default=None, metavar="LEVEL",
                    help="fit the chain and make the release private for every chain of the box of its "
                         "confidence intervals, each at level 1-(1-LEVEL)/2 so that the box covers the true "
                         "chain with probability >= LEVEL (e.g. 0.95); the report records the box, the worst "
                         "leakage over it and what robustness costs. Not with --alpha/--beta")
    ap.add_argument("--method", choices=list(JOINT_METHODS), default="auto",
                    help="auto (default: best of joint DIM windows and per-record designs, then an exact local "
                         "improvement) or a design method applied per private record and combined by the "
                         "elementwise maximum")
    ap.add_argument("--time-limit", type=float, default=60.0, metavar="SECONDS",
                    help="seconds for the release's design phase, every design together (default 60); a design "
                         "stopped by it says so and keeps its certificate")
    ap.add_argument("--varies-with", default=None, metavar="COL[:hour|:weekday|:hour+weekday]",
                    help="design for a chain whose transitions change with a level (the hour, weekday or both of a "
                         "datetime column, or any column's values): fitted per level on the rows the release "
                         "publishes with certainty, each sequence designed for its own rows' steps (a 0/1 column)")
    ap.add_argument("--categorical", action="store_true",
                    help="a categorical column (k states, its values as text): fit a k-state chain unless --transition")
    ap.add_argument("--transition", default=None, metavar='FILE|"p11,...;p21,..."',
                    help="the k-state chain of a categorical column (implies --categorical): a JSON file with "
                         "'transition' and 'labels' or the rows of the matrix")
    ap.add_argument("--workers", type=int, default=None, metavar="N",
                    help="processes computing designs at once, this one included (default: every core; 1: all in "
                         "this process). Each distinct design is computed once however many sequences share it, "
                         "and the release is the same for every N (same --seed, same output). Not with "
                         "--backend dask: there the cluster's workers compute them")


def _add_output_options(ap: argparse.ArgumentParser) -> None:
    """apply: the draws, the output, the report, the back-end."""
    ap.add_argument("--seed", type=int, default=None,
                    help="seed of the redaction draws: reproducible PCG64, for tests and examples only (the "
                         "report says: not for real releases); default: the operating system's secure source")
    ap.add_argument("--out", required=True, metavar="FILE",
                    help="output table (.csv or .parquet, optionally compressed: .csv.gz; a directory with --backend "
                         "dask; '-': CSV to standard output)")
    ap.add_argument("--report", default=None, metavar="FILE",
                    help="write the JSON report (mechanism, chain, leakage, utility) here ('-': standard output); "
                         "'redactopt audit FILE' reads it")
    ap.add_argument("--force", action="store_true",
                    help="overwrite every output that exists (--out, --report, --public-report, --html, the report's "
                         "sequences file); every output is checked before anything is read")
    ap.add_argument("--public-report", default=None, metavar="FILE",
                    help="also write the report without private positions (what a recipient of the release may "
                         "see: eps, chain, utility, every design on its own sub-problem); 'redactopt audit FILE' "
                         "re-judges its designs. The --report names the private rows: never publish it")
    ap.add_argument("--cover", type=int, default=None, metavar="K",
                    help="hide the positions of the private records: K decoy copies per private run in every "
                         "sequence, placed uniformly at random and redacted by the same designs, so that every "
                         "sequence shows the same blocks (a copy is real with probability at most c/(c+K)); the "
                         "summary shows the expected redactions without and with it")
    ap.add_argument("--accept-model", action="store_true",
                    help="release although the rows are out of time order, a test rejects the chain (p < 1e-6) "
                         "with an alternative under which the release would leak more than eps, or a fitted state "
                         "was never observed — each refused otherwise (exit 2, nothing written); the report's first "
                         "line then says what was accepted")
    add_html_option(ap)
    add_ledger_options(ap)
    ap.add_argument("--backend", choices=["memory", "dask"], default="memory",
                    help="memory (default, streams chunks) or dask (a CSV or Parquet dataset: a folder or a glob of "
                         "files, partitioned by file and by runs of Parquet row groups; --out is a folder of part files; "
                         "pip install 'redactopt[dask]')")
    ap.add_argument("--report-sequences", choices=["auto", "inline", "parquet", "jsonl", "none"], default="auto",
                    help="where the report's per-sequence rows (private records, their exact leakage, blocks, "
                         "groups and certificate) go: auto (default: inside the report up to 20 designed sequences, "
                         "else REPORT.sequences.parquet beside it), inline (inside the report), parquet or jsonl "
                         "(REPORT.sequences.parquet / .jsonl beside the report, written in batches: needs --report "
                         "FILE), none. The designs themselves are listed once in the report's 'shapes'")


def _summary(rep: dict[str, Any], report_path: str | None) -> dict[str, Any]:
    """What ``apply`` prints: the report without the per-record tables."""
    fit = rep["chain"].get("fit") or {}
    return {
        "columns": rep["columns"], "fit_rows": rep["chain"].get("fit_rows"), "summary": rep["summary"],
        "output": rep["output"], "rows": rep["rows"], "redacted": rep["utility"]["redacted"],
        "chain": {k: rep["chain"][k] for k in ("alpha", "beta", "source", "class", "robustness") if k in rep["chain"]},
        "eps": rep["eps"], "method": rep["method"],
        "leakage": {"max": rep["leakage"]["max"], "private_records": rep["leakage"]["private_records"]},
        "utility": {k: rep["utility"][k] for k in ("expected", "realised")},
        "designs": {k: rep["designs"][k] for k in ("shapes", "computed", "reflected", "groups", "reused")},
        "sequences": rep["designed_sequences"], "sequences_count": rep["sequences_count"],
        "sequences_file": rep.get("sequences_file"),
        "randomness": rep["randomness"]["source"], "label": rep.get("label"),
        "warnings": list(rep.get("warnings", fit.get("warnings", []))), "report": report_path,
        "notice": rep.get("notice"), "reveals": rep.get("reveals"), "cover": rep.get("cover"),
        "model": rep.get("model"),
        "model_warnings": list((rep.get("model_check") or {}).get("warnings", [])),
        "model_check": (rep.get("model_check") or {}).get("alternatives", []),
        "regions": list(rep.get("regions") or [])[:REGION_LINES + 1],
        "runs": list((rep.get("design_info") or {}).get("runs") or [])[:REGION_LINES],
        "ledger": rep.get("ledger"),
    }


#: ``apply`` prints the region certificates of a one-sequence release up to this many (then says how many more).
REGION_LINES = 4


def region_lines(regions: list[dict[str, Any]]) -> list[str]:
    """One line per region certificate: what the design publishes there, the certified bound, and which bound."""
    out = []
    for r in regions[:REGION_LINES]:
        src = r["solver"] + (f", from {r['relaxation']} alone" if r.get("relaxation") else "")
        out.append(f"certified : rows {r['rows'][0]}-{r['rows'][1]} publish {r['published']:.6g} expected records; "
                   f"no eps-private mechanism more than {r['upper_bound']:.6g} (gap {r['gap']:.3g}; {src})")
    if len(regions) > REGION_LINES:
        out.append("certified : ... more regions in the report")
    return out


def run_line(run: dict[str, Any]) -> str:
    """Where ``--method optimal`` stopped refining a run's bound: at its target gap, or at the time limit."""
    (a, b), (lo, hi) = run["private"], run["window"]
    m = hi - lo + 1
    gap = run["upper_bound"] - run["published"]
    how = (f"stopped at its target gap of {run['target_gap'] * m:.3g} records" if run.get("status") == "optimal"
           else "stopped by the time limit before its target gap")
    return f"search    : the run of {b - a + 1} private records: certified gap {gap:.3g} records on its {m} rows, {how}"


def _summary_text(s: dict[str, Any]) -> str:
    # (a model the data prefer that leaks more, model_warnings, is among the warnings printed first)
    lines = [
        f"wrote     : {s['output']}  ({s['rows']} rows, {s['redacted']} redacted)",
        f"chain     : alpha={s['chain']['alpha']:.6g}  beta={s['chain']['beta']:.6g}  ({s['chain']['source']})",
    ]
    box = s["chain"].get("class")
    if box is not None:
        (alo, ahi), (blo, bhi) = box["alpha"], box["beta"]
        lines.append(f"class     : alpha in [{alo:.6g}, {ahi:.6g}], beta in [{blo:.6g}, {bhi:.6g}]  "
                     "(private for every chain of the box)")
    lines += [
        f"eps       : {s['eps']:g}   method: {s['method']}",
        f"leakage   : {s['leakage']['max']:.10g}  (exact, worst over {s['leakage']['private_records']} "
        "private record(s)" + (" and every chain of the box)" if box is not None else ")"),
        f"utility   : expected {s['utility']['expected']:.6g}  realised {s['utility']['realised']:.6g}",
    ]
    lines += ledger_lines(s.get("ledger"))
    if s["sequences_count"] == 1:
        lines += region_lines(s.get("regions") or [])
        lines += [run_line(r) for r in s.get("runs") or [] if r.get("target_gap") is not None]
    rob = s["chain"].get("robustness")
    if rob:
        lines.append(f"robustness: {rob['expected_redacted_robust']:.6g} expected redacted records against "
                     f"{rob['expected_redacted_point']:.6g} for the point design (both at the nominal chain)")
    if s["sequences_count"] > 1:  # many sequences: how many designs they share
        d = s["designs"]
        tried = d["computed"] + d["reflected"]
        lines.append(f"designs   : {d['shapes']} distinct for {d['groups']} group(s) of private records in "
                     f"{s['sequences']} sequence(s), {d['reused']} group(s) sharing one; {tried} candidate design(s) "
                     f"verified ({d['computed']} computed, {d['reflected']} as mirror images)")
    for m in s.get("model_check") or []:
        pv = "n/a" if m["p_value"] is None else f"{m['p_value']:.3g}"
        lines.append(f"model     : under the chain that varies with {m['model']} (homogeneity test p = {pv}, fitted "
                     f"on the same rows) this release leaks {m['leakage']:.6g}")
    lines.append(f"randomness: {s['randomness']}")
    if s["label"]:
        lines.append(f"label     : {s['label']}")
    lines += release_lines(s["columns"], s["fit_rows"], s["summary"], reveals=s.get("reveals"), cover=s.get("cover"))
    if s["report"]:
        lines.append(f"report    : {s['report']}" + (f"  (sequences: {s['sequences_file']})" if s["sequences_file"] else "")
                     + f"  ({CONFIDENTIAL})")
    return warnings_block(s["warnings"]) + "\n".join(lines)


def warnings_block(warnings: list[str]) -> str:
    """Every warning of a release in a block of its own, printed before the summary (empty when none)."""
    if not warnings:
        return ""
    return "\n".join([f"WARNINGS  : {len(warnings)} (read them before the summary)"]
                     + [textwrap.fill(w, width=100, initial_indent="  - ", subsequent_indent="    ")
                        for w in warnings]) + "\n\n"


def _point_or_range(text: str | None, name: str) -> float | tuple[float, float] | None:
    """``--alpha``/``--beta`` of apply: a number, or ``LO:HI`` for a box of chains (issue 14)."""
    if text is None:
        return None
    lo, hi = parse_range(text, name)
    return lo if lo == hi else (lo, hi)


def check_apply_outputs(args: argparse.Namespace) -> None:
    """Every file ``apply`` may write, checked before anything is read (:mod:`redactopt.interface.outputs`)."""
    from redactopt.interface.outputs import Output, check_outputs, existing_file

    dask, local = args.backend == "dask", args.cls in (None, "local")
    side = None
    if args.report not in (None, STDIO) and args.report_sequences in ("parquet", "jsonl"):
        from redactopt.release.report import sequences_path

        side = str(sequences_path(args.report, args.report_sequences))
    out_why = (" (with --backend dask the release is a folder of part files)" if dask else
               " (class releases are written to a file: .csv, .tsv or .parquet)")
    check_outputs([
        Output("--out", args.out, "folder" if dask else "table", stdout=not dask and local, why_not_stdout=out_why),
        Output("--report", args.report, "json"),
        Output("--public-report", args.public_report, "json", stdout=False,
               why_not_stdout=" (standard output is for the release or its report)"),
        Output("--html", args.html, "html", stdout=False, why_not_stdout=" ending in .html"),
        Output("--report-sequences", side, "any"),
    ], force=args.force, inputs=[("the input", args.input), ("--fit-on", args.fit_on),
                                 ("--transition", existing_file(args.transition))])


def _cmd_apply(args: argparse.Namespace) -> int:
    check_html(args)
    check_apply_outputs(args)
    if (args.column is None) == (args.protect is None):
        raise UsageError("give exactly one of --column (one column) and --protect COL[,COL...] (several together)")
    if args.cover is not None and args.cover < 0:
        raise UsageError(f"--cover must be a whole number of decoys per private run (>= 0), got {args.cover}")
    ledger = open_ledger(args)  # refuses what a ledger cannot compose, before any work
    if args.backend == "dask" or args.cls not in (None, "local"):
        why = "--backend dask" if args.backend == "dask" else f"--class {args.cls}"
        refuse_given(args, ["cover", "public_report", "accept_model"], f"applies to local releases on --backend "
                     f"memory, not with {why}")
    if args.cls not in (None, "local"):  # a scan, owner or holder mechanism (issue 26)
        from redactopt.interface.cli_classes import cmd_class_apply

        return cmd_class_apply(args)
    if getattr(args, "varies_with", None) is not None:
        return _cmd_apply_varying(args)
    if args.categorical or args.transition is not None or args.protect is not None or args.bin:
        return _cmd_apply_categorical(args)  # a chain of k states: categories, tuples, bins
    # pandas and pyarrow load with the data commands only: design and audit start faster
    from redactopt.release.apply import apply_table

    if args.backend == "dask":
        refuse_given(args, ["chunk_rows"], "applies to --backend memory only (Dask reads one partition at a time)")
        refuse_given(args, ["workers"], "applies to --backend memory only (with Dask the cluster decides)")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    if args.extend and args.private == "none":  # appended rows without private records of their own
        args.private, private = None, []
    else:
        private = parse_positions(args.private) if args.private is not None else None
    if ledger is not None and args.extend:  # issue 39: rows appended to a ledgered series
        from redactopt.interface.cli_ledger import cmd_extend

        return cmd_extend(args, ledger, private, keep_option(args))
    if args.robust is not None and (args.alpha is not None or args.beta is not None):
        raise UsageError("--robust fits the box from the data: give it without --alpha/--beta "
                         "(or give the box itself as --alpha LO:HI --beta LO:HI)")
    kwargs = dict(column=args.column, eps=args.eps, private=private, private_column=args.private_column,
                  by=args.by, alpha=_point_or_range(args.alpha, "--alpha"),
                  beta=_point_or_range(args.beta, "--beta"), method=args.method, seed=args.seed,
                  report=args.report, force=args.force, time_limit=args.time_limit,
                  report_sequences=args.report_sequences, robust=args.robust, keep=keep_option(args),
                  fit_on=args.fit_on, order_by=args.order_by)
    if ledger is not None:  # issue 39: designed against the ledger's budget left
        kwargs["alpha"], kwargs["beta"] = ledger.chain(kwargs["alpha"], kwargs["beta"])
        kwargs.update(report_sequences="inline", ledger=ledger)
    issue36 = dict(cover=args.cover, public_report=args.public_report, accept_model=args.accept_model)
    try:
        if args.backend == "dask":
            from redactopt.release.dask_backend import apply_dask

            rep = apply_dask(args.input, args.out, **kwargs)
        else:
            rep = apply_table(args.input, args.out, progress=_progress.report, workers=args.workers, **_chunk(args),
                              **kwargs, **issue36)
    except PrivacyCheckError as exc:
        sys.stderr.write(f"redactopt apply: privacy check failed: {exc}\n")
        return EXIT_FAIL
    summary = _summary(rep, args.report)
    text = json.dumps(dict(summary, phases=phases_of(args)), indent=2) if (args.format or "text") == "json" \
        else _summary_text(summary)
    stdout_taken = STDIO in (args.out, args.report)
    if not (stdout_taken and args.quiet):
        print(text, file=sys.stderr if stdout_taken else sys.stdout)
    maybe_write_html(args, rep)
    return EXIT_OK


def _cmd_apply_varying(args: argparse.Namespace) -> int:
    """``apply ... --varies-with COL[:hour|...]``: the release designed for the chain of the levels."""
    from redactopt.release.varying_release import apply_varying_table

    why = "does not apply with --varies-with (the chain is fitted per level)"
    refuse_given(args, ["alpha", "beta", "robust", "transition", "fit_on"], why)
    refuse_given(args, ["categorical", "protect", "bin"], "--varies-with releases a 0/1 column (--column)")
    refuse_given(args, ["cover", "public_report", "accept_model", "workers"],
                 "is not available with --varies-with yet (a release on one chain takes it)")
    if args.report_sequences != "auto":
        raise UsageError("--report-sequences is not available with --varies-with yet (its report holds every sequence)")
    if args.backend == "dask":
        raise UsageError("--varies-with runs with --backend memory")
    if args.method not in ("auto", "dim"):
        raise UsageError(f"--method {args.method}: a chain that varies with the step takes auto or dim")
    private = parse_positions(args.private) if args.private is not None else None
    try:
        rep = apply_varying_table(args.input, args.out, column=args.column, eps=args.eps, varies_with=args.varies_with,
                                  private=private, private_column=args.private_column, by=args.by,
                                  order_by=args.order_by, method=args.method, seed=args.seed, report=args.report,
                                  force=args.force, time_limit=args.time_limit, keep=keep_option(args), **_chunk(args))
    except PrivacyCheckError as exc:
        sys.stderr.write(f"redactopt apply: privacy check failed: {exc}\n")
        return EXIT_FAIL
    text = json.dumps(dict(rep, phases=phases_of(args)), indent=2, default=str) if (args.format or "text") == "json" \
        else _varying_text(rep, args)
    stdout_taken = STDIO in (args.out, args.report)
    if not (stdout_taken and args.quiet):
        print(text, file=sys.stderr if stdout_taken else sys.stdout)
    maybe_write_html(args, rep)
    return EXIT_OK


def _varying_text(rep: dict[str, Any], args: argparse.Namespace) -> str:
    fit = rep["chain"]["fit"]
    t = fit["homogeneity_test"]
    lines = [f"wrote     : {rep['output']}  ({rep['rows']} rows, {rep['utility']['redacted']} redacted)",
             f"chain     : varies with {rep['chain']['varies_with']} ({len(fit['levels'])} levels, fitted per level; "
             f"homogeneity test G2={t['statistic']:.4g} df={t['df']} p={t['p_value']:.3g})",
             f"eps       : {rep['eps']:g}   method: {rep['method']}",
             f"leakage   : {rep['leakage']['max']:.10g}  (exact under each sequence's varying chain, worst over "
             f"{len(rep['leakage']['per_private'])} private record(s))",
             f"utility   : expected {rep['utility']['expected']:.6g}  realised {rep['utility']['realised']:.6g}  "
             f"(upper bound {rep['utility']['upper_bound']:.6g}: Lemma 2 per step)"]
    for m in rep["model_check"]["alternatives"]:
        lines.append(f"model     : under the {m['model']} fitted on the same rows this release leaks {m['leakage']:.6g}")
    lines += release_lines(rep["columns"], rep["chain"].get("fit_rows"), rep["summary"], reveals=rep.get("reveals"))
    if args.report:
        lines.append(f"report    : {args.report}  ({CONFIDENTIAL})")
    return warnings_block(rep.get("warnings", [])) + "\n".join(lines)


# ---------------------------------------------------------------------------
# apply of a categorical column (a chain of k states)
# ---------------------------------------------------------------------------
def _kapply_refusals(args: argparse.Namespace, methods: tuple[str, ...]) -> None:
    """The options a categorical release does not take, refused in one line each (before any work)."""
    refuse_given(args, ["alpha", "beta"], "applies to binary columns; a categorical column takes --transition")
    refuse_given(args, ["robust"], "is not available for categorical columns (the guarantee covers the fitted or "
                 "given chain only)")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    if getattr(args, "report_sequences", "auto") != "auto":
        raise UsageError("--report-sequences is not available for categorical columns (the report lists every "
                         "sequence and one mechanism per distinct design)")
    if args.backend != "memory":
        refuse_given(args, ["chunk_rows"], "applies to --backend memory only (Dask reads one partition at a time)")
        refuse_given(args, ["workers"], "applies to --backend memory only (with Dask the cluster decides)")
        refuse_given(args, ["order_by"], "sorts each sequence in memory: use --backend memory (or write the dataset "
                     "in order)")
    if args.method not in methods:
        raise UsageError(f"--method {args.method} has no k-state form; categorical columns take "
                         f"{', '.join(methods)}")


def _kapply_summary(rep: dict, args: argparse.Namespace) -> dict:
    """What ``apply --format json`` prints for a categorical release."""
    return {
        "output": args.out, "rows": rep["rows"], "redacted": rep["utility"]["redacted"], "states": rep["states"],
        "chain": {"source": rep["chain"]["source"], "transition": rep["chain"]["transition"]},
        "eps": rep["eps"], "method": rep["method"],
        "leakage": {"max": rep["leakage"]["max"], "private_records": len(rep["private"]),
                    "pair": rep["leakage"]["pair"]},
        "utility": {k: rep["utility"][k] for k in ("expected", "realised")}, "blocks": rep.get("blocks"),
        "sequences": len(rep["sequences"]) if "sequences" in rep else 1,
        "designs": len(rep["designs"]) if "designs" in rep else 1,
        "randomness": rep["randomness"]["source"], "label": rep["label"], "warnings": rep["warnings"],
        "report": args.report, "columns": rep["columns"], "fit_rows": rep["chain"].get("fit_rows"),
        "summary": rep["summary"], "notice": rep.get("notice"), "reveals": rep.get("reveals"),
        "cover": rep.get("cover"), "model": rep.get("model"),
    }


def _kapply_text(rep: dict, args: argparse.Namespace) -> str:
    """What ``apply`` prints (text) for a categorical release."""
    lines = [f"wrote     : {args.out}  ({rep['rows']} rows, {rep['utility']['redacted']} redacted)",
             f"states    : {', '.join(rep['states'])}  (column{'s' if args.protect else ''} "
             f"'{args.protect or args.column}')",
             f"chain     : {rep['chain']['source']}; P = " + "; ".join(
                 ",".join(f"{v:.4g}" for v in row) for row in rep["chain"]["transition"]),
             f"eps       : {rep['eps']:g}   method: {rep['method']}",
             f"leakage   : {rep['leakage']['max']:.10g}  (exact, worst over {len(rep['private'])} private "
             f"record(s); pair {rep['leakage']['pair'][0]} vs {rep['leakage']['pair'][1]})",
             f"utility   : expected {rep['utility']['expected']:.6g}  realised {rep['utility']['realised']:.6g}",
             (f"blocks    : {rep['blocks']}" if "blocks" in rep else
              f"sequences : {len(rep['sequences'])} (by '{rep['by']}'), "
              f"{sum(1 for q in rep['sequences'] if q['private'])} with private records, "
              f"{len(rep['designs'])} distinct design(s); worst in sequence "
              f"{rep['leakage']['witness_sequence']}"),
             f"randomness: {rep['randomness']['source']}"]
    if rep["label"]:
        lines.append(f"label     : {rep['label']}")
    lines += release_lines(rep["columns"], rep["chain"].get("fit_rows"), rep["summary"], reveals=rep.get("reveals"),
                           cover=rep.get("cover"))
    if args.report:
        lines.append(f"report    : {args.report}  ({CONFIDENTIAL})")
    return warnings_block(rep["warnings"]) + "\n".join(lines)


def _cmd_apply_categorical(args: argparse.Namespace) -> int:
    """``redactopt apply INPUT --column NAME --categorical|--transition T (--private LIST | --private-column C [--by B]) --eps E --out OUT``."""
    from redactopt.release.states_plan import KAPPLY_METHODS
    from redactopt.release.states import apply_states_table

    _kapply_refusals(args, KAPPLY_METHODS)
    chain = read_transition(args.transition) if args.transition else None
    private = parse_positions(args.private) if args.private is not None else None
    kwargs = dict(eps=args.eps, private=private, private_column=args.private_column, by=args.by, chain=chain,
                  workers=args.workers, method=args.method, seed=args.seed, report=args.report, force=args.force,
                  time_limit=args.time_limit, smoothing=getattr(args, "smoothing", None) or "kt",
                  keep=keep_option(args), order_by=args.order_by, fit_on=args.fit_on)
    try:
        if args.backend == "dask":
            from redactopt.release.dask_backend import apply_dask

            kwargs.pop("workers")
            kwargs.pop("order_by")
            rep = apply_dask(args.input, args.out, column=args.column, protect=args.protect, bins=args.bin,
                             categorical=True, **kwargs)
        else:  # streamed, chunk by chunk
            rep = apply_states_table(args.input, args.out, column=args.column, protect=args.protect,
                                     bins=args.bin, progress=_progress.report, **_chunk(args), **kwargs,
                                     cover=args.cover, public_report=args.public_report,
                                     accept_model=args.accept_model)
    except PrivacyCheckError as exc:
        sys.stderr.write(f"redactopt apply: privacy check failed: {exc}\n")
        return EXIT_FAIL
    rep["input"] = str(args.input)
    text = json.dumps(dict(_kapply_summary(rep, args), phases=phases_of(args)), indent=2) \
        if (args.format or "text") == "json" else \
        _kapply_text(rep, args)
    stdout_taken = STDIO in (args.out, args.report)
    if not (stdout_taken and args.quiet):
        print(text, file=sys.stderr if stdout_taken else sys.stdout)
    from redactopt.interface.cli_report import maybe_write_html

    maybe_write_html(args, rep)
    return EXIT_OK
