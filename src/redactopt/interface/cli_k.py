"""Categorical columns on the command line: ``fit --categorical``, ``apply --categorical`` /
``--transition`` and ``audit`` of mechanisms whose chain is given as a matrix (``design --transition``
is the one ``design`` of :mod:`redactopt.interface.cli`).

The commands' parsers live in :mod:`redactopt.interface.cli` and :mod:`redactopt.interface.cli_data`;
each hands over to this module when a k-state option (or file) is given, so the binary path is
untouched.  Conventions as everywhere: exit 0 success, 1 a privacy check failed, 2 bad usage or
input (one line); positions 1-based; every output names the states by their labels.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from fractions import Fraction
from typing import Any

import numpy as np

from redactopt.errors import PrivacyCheckError, UsageError
from redactopt.interface.options import EXIT_FAIL, EXIT_OK, parse_positions, read_transition, refuse_given
from redactopt.interface.report import method_text, positions_text, witness_text
from redactopt.io import STDIO, check_input_path, stdin_as_file, write_output
from redactopt.model.chain import Chain as KChain, parse_transition

__all__ = ["cmd_kfit", "cmd_kapply", "maybe_kaudit", "kaudit_text"]


def _out(text: str, out: str | None, force: bool) -> None:
    write_output(text, out, force=force)


# --------------------------------------------------------------------------
# design
# --------------------------------------------------------------------------
# --------------------------------------------------------------------------
# fit
# --------------------------------------------------------------------------
def _read_table(path: str) -> Any:
    from redactopt.release.kapply import read_table

    df, _ = read_table(check_input_path(path))
    return df


def cmd_kfit(args: argparse.Namespace) -> int:
    """``redactopt fit INPUT --column NAME --categorical``."""
    from redactopt.release.kfit import kfit_sequences

    refuse_given(args, ["chunk_rows"], "applies to binary columns only (a categorical fit reads the column at once)")
    if args.interval != "wilson":
        raise UsageError("--interval: a categorical fit gives Wilson score intervals per entry of each row")
    with stdin_as_file(args.input) as path:
        df = _read_table(str(path))
    if args.column not in df.columns:
        raise UsageError(f"{args.input}: column {args.column!r} not found; the columns are {list(map(str, df.columns))}")
    if len(df) == 0:
        raise UsageError(f"{args.input}: no data rows")
    col = df[args.column]
    bad = np.flatnonzero(col.isna().to_numpy())
    if bad.size:
        raise UsageError(f"{args.input}: row {int(bad[0]) + 1}: column {args.column!r} has a missing value")
    if args.by is not None:
        if args.by not in df.columns:
            raise UsageError(f"{args.input}: column {args.by!r} not found")
        seqs = [g[args.column].tolist() for _, g in df.groupby(args.by, sort=False)]
    else:
        seqs = [col.tolist()]
    try:
        fit = kfit_sequences(seqs, confidence=args.confidence, smoothing=args.smoothing or "kt")
    except ValueError as exc:
        raise UsageError(f"{args.input}: {exc}") from None
    if (args.format or "text") == "json":
        d: dict[str, Any] = {"input": str(args.input), "column": args.column, "by": args.by}
        d.update(fit.to_dict())
        print(json.dumps(d, indent=2))
    else:
        print(f"input     : {args.input}  column '{args.column}'" + (f"  by '{args.by}'" if args.by else "")
              + "  (categorical)")
        print(fit.text())
    return EXIT_OK


# --------------------------------------------------------------------------
# apply
# --------------------------------------------------------------------------
def _kapply_refusals(args: argparse.Namespace, methods: tuple[str, ...]) -> None:
    """The options a categorical release does not take, refused in one line each (before any work)."""
    refuse_given(args, ["alpha", "beta"], "applies to binary columns; a categorical column takes --transition")
    refuse_given(args, ["chunk_rows"], "is not available for categorical columns (the column is read at once)")
    refuse_given(args, ["robust"], "is not available for categorical columns (the guarantee covers the fitted or "
                 "given chain only)")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    if getattr(args, "report_sequences", "auto") != "auto":
        raise UsageError("--report-sequences is not available for categorical columns (the report lists every "
                         "sequence and one mechanism per distinct design)")
    if args.backend != "memory":
        raise UsageError("--backend dask is not available for categorical columns")
    if args.method not in methods:
        raise UsageError(f"--method {args.method} has no k-state form; categorical columns take "
                         f"{', '.join(methods)}")
    if STDIO in (args.out,):
        raise UsageError("--out -: categorical releases are written to a file (.csv, .tsv or .parquet)")


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
        "summary": rep["summary"],
    }


def _kapply_text(rep: dict, args: argparse.Namespace) -> str:
    """What ``apply`` prints (text) for a categorical release."""
    from redactopt.interface.cli_data import release_lines

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
    lines += [f"warning   : {w}" for w in rep["warnings"]]
    lines += release_lines(rep["columns"], rep["chain"].get("fit_rows"), rep["summary"])
    if args.report:
        lines.append(f"report    : {args.report}")
    return "\n".join(lines)


def cmd_kapply(args: argparse.Namespace) -> int:
    """``redactopt apply INPUT --column NAME --categorical|--transition T (--private LIST | --private-column C [--by B]) --eps E --out OUT``."""
    from redactopt.release.kapply import KAPPLY_METHODS, kapply_table

    _kapply_refusals(args, KAPPLY_METHODS)
    chain = read_transition(args.transition) if args.transition else None
    private = parse_positions(args.private) if args.private is not None else None
    from redactopt.interface.cli_data import keep_option

    try:
        with stdin_as_file(args.input) as path:
            rep = kapply_table(path, args.out, column=args.column, eps=args.eps, private=private,
                               private_column=args.private_column, by=args.by, chain=chain, workers=args.workers,
                               method=args.method, seed=args.seed, report=args.report, force=args.force,
                               time_limit=args.time_limit, smoothing=getattr(args, "smoothing", None) or "kt",
                               protect=args.protect, bins=args.bin, keep=keep_option(args), order_by=args.order_by,
                               fit_on=args.fit_on)
    except PrivacyCheckError as exc:
        sys.stderr.write(f"redactopt apply: privacy check failed: {exc}\n")
        return EXIT_FAIL
    rep["input"] = str(args.input)
    text = json.dumps(_kapply_summary(rep, args), indent=2) if (args.format or "text") == "json" else \
        _kapply_text(rep, args)
    stdout_taken = args.report == STDIO
    if not (stdout_taken and args.quiet):
        print(text, file=sys.stderr if stdout_taken else sys.stdout)
    from redactopt.interface.cli_report import maybe_write_html

    maybe_write_html(args, rep)
    return EXIT_OK


# --------------------------------------------------------------------------
# audit
# --------------------------------------------------------------------------
def kaudit_text(rep: dict[str, Any]) -> str:
    a, b = rep["pair"]
    lines = [f"mechanism : {rep['method']}  n={rep['n']}  private={positions_text(rep['private'])}  "
             f"k={rep['k']}  states={','.join(rep['states'])}",
             "chain     : P = " + "; ".join(",".join(f"{float(Fraction(v)) if isinstance(v, str) else v:.6g}"
                                                for v in row) for row in rep["chain"]["transition"]),
             f"eps       : {rep['eps']:.6g}",
             f"leakage   : {rep['leakage']:.10g}  (exact, nats; worst private record {rep['witness_private']})",
             f"witness   : {witness_text(rep['witness'])}",
             f"            attains log Pr(y | X_p={a}) / Pr(y | X_p={b})",
             f"utility   : {rep['utility']:.10g}"]
    if "exact" in rep:
        lines.append(f"exact     : {rep['exact']['status']} (rational arithmetic on the doubles)")
    if "attack" in rep:
        at = rep["attack"]
        lines.append(f"attack    : leakage >= {at['lower_bound']:.6g} with confidence {at['confidence']:g} "
                     f"(private record {at['private']}; {at['samples']} chains per value of X_p; event favouring "
                     f"X_p={at['pair'][0]} over {at['pair'][1]}; largest observed |log ratio| "
                     f"{at['max_observed']:.6g})" + ("  -> violation shown" if at["violation_shown"] else ""))
    verdict = "PASS" if rep["passed"] else ("FAIL: leakage exceeds eps" if rep["leakage"] > rep["eps"]
                                            else "FAIL: not certified exactly")
    lines.append(f"result    : {verdict}")
    return "\n".join(lines)


def maybe_kaudit(args: argparse.Namespace) -> int | None:
    """``redactopt audit FILE`` on a k-state file: its audit's exit status; ``None`` for any other file.

    Standard input is read once; for a file that is not k-state it is put back for the binary reader.
    """
    from redactopt.judge.kaudit import kaudit
    from redactopt.kio import is_kstate, kmechanisms_of

    if args.mechanism == STDIO:
        text = sys.stdin.read()
        try:
            d = json.loads(text)
        except json.JSONDecodeError:
            d = None
        if not is_kstate(d):
            sys.stdin = io.StringIO(text)
            return None
        where = "<stdin>"
    else:
        try:
            path = check_input_path(args.mechanism)
            d = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValueError):
            return None  # the binary reader reports it
        if not is_kstate(d):
            return None
        where = str(args.mechanism)
    if args.method:
        raise UsageError("give either a mechanism file or --method, not both")
    refuse_given(args, ["n", "private", "reading", "split", "alpha", "beta"],
                 "applies to --method only: a k-state mechanism file carries its own chain, n and private records")
    from redactopt.interface.cli import attack_entry

    rng = np.random.default_rng(args.attack_seed)
    reports = []
    for tag, mf in kmechanisms_of(d, where):
        eps = mf.eps if args.eps is None else args.eps
        rep = kaudit(mf.chain, mf.redact_prob, private=mf.private, eps=eps, method=mf.method, exact=bool(args.exact))
        if args.attack:
            rep["attack"] = attack_entry(mf.chain, mf.redact_prob, rep["witness_private"] - 1, eps, args, rng)
        if tag is not None:
            rep["sequences"] = tag
        reports.append(rep)
    passed = all(r["passed"] for r in reports)
    if len(reports) == 1 and "sequences" not in reports[0]:
        print(json.dumps(reports[0], indent=2) if (args.format or "text") == "json" else kaudit_text(reports[0]))
    elif (args.format or "text") == "json":
        print(json.dumps({"designs": reports, "passed": passed}, indent=2))
    else:
        blocks = []
        for j, r in enumerate(reports):
            ids = r.get("sequences", [])
            shown = ", ".join(ids[:5]) + (f", … ({len(ids)} in all)" if len(ids) > 5 else "")
            blocks.append(f"design {j + 1} of {len(reports)} (sequences: {shown or 'none'})\n" + kaudit_text(r))
        failed = sum(1 for r in reports if not r["passed"])
        blocks.append(f"overall   : {'PASS' if passed else 'FAIL'} ({len(reports) - failed} of {len(reports)} "
                      "designs pass)")
        print("\n\n".join(blocks))
    return EXIT_OK if passed else EXIT_FAIL
