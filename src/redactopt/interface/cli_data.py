"""The data subcommands ``fit`` and ``apply`` (registered by :mod:`redactopt.interface.cli`).

A thin layer over :mod:`redactopt.release.fit` and :mod:`redactopt.release.apply`: parse, call, print.
Exit codes as everywhere (DESIGN.md): 0 success, 1 a privacy check failed, 2 bad usage
or input (one line on stderr naming the row or column).  Positions are 1-based.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from redactopt.errors import UsageError

__all__ = ["add_fit_parser", "add_apply_parser"]

_EXIT_OK, _EXIT_FAIL = 0, 1


# --------------------------------------------------------------------------
# fit
# --------------------------------------------------------------------------
def add_fit_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``redactopt fit INPUT --column NAME [--by ID] [--format text|json]``."""
    ap = sub.add_parser(
        "fit",
        help="fit the chain (alpha, beta) to a binary column, with intervals and an order test",
        description=(
            "Maximum-likelihood estimates of alpha = P(0->1) and beta = P(1->0) from the transitions "
            "of a 0/1 column of a CSV or Parquet file (format by extension), pooled over the sequences "
            "of --by (rows of one id in file order; default: the whole file is one sequence). Prints "
            "confidence intervals, the transition counts, a likelihood-ratio test of a first- against "
            "a second-order chain, and warnings (short data, estimates at 0 or 1). A missing or non-0/1 "
            "value stops with one line naming the row and column (exit 2)."
        ),
    )
    ap.add_argument("input", help="CSV (.csv/.txt/.tsv) or Parquet (.parquet) file")
    ap.add_argument("--column", required=True, help="the binary (0/1) column")
    ap.add_argument("--by", default=None, help="column naming the sequence of each row")
    ap.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    ap.add_argument("--interval", choices=["wilson", "lr", "wald"], default="wilson",
                    help="wilson score (default), binomial likelihood-ratio, or wald")
    ap.add_argument("--format", choices=["text", "json"], default="text", help="output format")
    ap.add_argument("--chunk-rows", type=int, default=None,
                    help="rows read at a time (default 1000000); memory grows with this, not with the input")
    ap.set_defaults(func=_cmd_fit)


def _cmd_fit(args: argparse.Namespace) -> int:
    from redactopt.release.apply import scan_table
    from redactopt.release.data import DEFAULT_CHUNK_ROWS, TableReader
    from redactopt.release.fit import fit_counts

    reader = TableReader(args.input, chunk_rows=DEFAULT_CHUNK_ROWS if args.chunk_rows is None else args.chunk_rows)
    state = scan_table(reader, column=args.column, by=args.by)
    if state.rows == 0:
        raise UsageError(f"{args.input}: no data rows")
    fit = fit_counts(state.counts(), confidence=args.confidence, interval=args.interval)
    if args.format == "json":
        d: dict[str, Any] = {"input": str(args.input), "column": args.column, "by": args.by}
        d.update(fit.to_dict())
        print(json.dumps(d, indent=2))
    else:
        print(f"input     : {args.input}  column '{args.column}'" + (f"  by '{args.by}'" if args.by else ""))
        print(fit.text())
    return _EXIT_OK


# --------------------------------------------------------------------------
# apply
# --------------------------------------------------------------------------
def add_apply_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``redactopt apply INPUT --column NAME (--private LIST | --private-column NAME) --eps E ...``."""
    from redactopt.engine.joint import JOINT_METHODS

    ap = sub.add_parser(
        "apply",
        help="design a mechanism for the private records of a table, draw the redactions, write the release",
        description=(
            "Protect the private records of a 0/1 column: fit the chain (unless --alpha and --beta are "
            "given), design a mechanism whose exact leakage about every private record is <= eps "
            "(verified on the whole sequence), draw the redactions exactly with the operating system's "
            "secure source (or --seed, not for real releases) and write every row and every other "
            "column unchanged, redacted entries empty (CSV) or null (Parquet). The output is written "
            "to a temporary file and renamed; it is never overwritten without --force, and the input "
            "is never modified. Exit 0 on success, 1 if no design passes the privacy check, 2 on bad "
            "input (one line naming the row or column, no output written)."
        ),
    )
    ap.add_argument("input", help="CSV (.csv/.txt/.tsv) or Parquet (.parquet) file")
    ap.add_argument("--column", required=True, help="the binary (0/1) column to protect")
    grp = ap.add_mutually_exclusive_group(required=True)
    grp.add_argument("--private", help="1-based positions and ranges in the sequence, e.g. 5000,5010-5020")
    grp.add_argument("--private-column", help="a 0/1 column flagging the private rows")
    ap.add_argument("--eps", type=float, required=True, help="privacy budget per private record (nats, > 0)")
    ap.add_argument("--alpha", type=float, default=None, help="P(0->1); fitted from the data if omitted")
    ap.add_argument("--beta", type=float, default=None, help="P(1->0); fitted from the data if omitted")
    ap.add_argument("--method", choices=list(JOINT_METHODS), default="auto",
                    help="auto (default: best of joint DIM windows and per-record designs, then an exact "
                         "local improvement) or a design method applied per private record and combined "
                         "by the elementwise maximum")
    ap.add_argument("--seed", type=int, default=None,
                    help="reproducible PCG64 draws, for tests only (the report says: not for real releases)")
    ap.add_argument("--out", required=True, help="output table (.csv or .parquet)")
    ap.add_argument("--report", default=None, help="write the JSON report (mechanism, chain, leakage, utility) here")
    ap.add_argument("--force", action="store_true", help="overwrite --out / --report if they exist")
    ap.add_argument("--by", default=None, help="column naming the sequence of each row (use --private-column)")
    ap.add_argument("--backend", choices=["memory", "dask"], default="memory",
                    help="memory (default, streams chunks) or dask (Parquet datasets; pip install redactopt[dask])")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per optimiser call (default 60)")
    ap.add_argument("--chunk-rows", type=int, default=None,
                    help="rows read at a time (default 1000000); memory grows with this, not with the input")
    ap.set_defaults(func=_cmd_apply)


def _cmd_apply(args: argparse.Namespace) -> int:
    from redactopt.release.apply import apply_table, parse_positions
    from redactopt.errors import PrivacyCheckError
    from redactopt.release.data import DEFAULT_CHUNK_ROWS

    private = parse_positions(args.private) if args.private is not None else None
    kwargs = dict(column=args.column, eps=args.eps, private=private, private_column=args.private_column,
                  by=args.by, alpha=args.alpha, beta=args.beta, method=args.method, seed=args.seed,
                  report=args.report, force=args.force, time_limit=args.time_limit)
    try:
        if args.backend == "dask":
            from redactopt.release.dask_backend import apply_parquet_dask

            rep = apply_parquet_dask(args.input, args.out, **kwargs)
        else:
            chunk = DEFAULT_CHUNK_ROWS if args.chunk_rows is None else args.chunk_rows
            rep = apply_table(args.input, args.out, chunk_rows=chunk, **kwargs)
    except PrivacyCheckError as exc:
        sys.stderr.write(f"redactopt apply: privacy check failed: {exc}\n")
        return _EXIT_FAIL
    u = rep["utility"]
    lines = [
        f"wrote     : {rep['output']}  ({rep['rows']} rows, {u['redacted']} redacted)",
        f"chain     : alpha={rep['chain']['alpha']:.6g}  beta={rep['chain']['beta']:.6g}  ({rep['chain']['source']})",
        f"eps       : {rep['eps']:g}   method: {rep['method']}",
        f"leakage   : {rep['leakage']['max']:.10g}  (exact, worst over {len(rep['leakage']['per_private'])} "
        f"private record(s))",
        f"utility   : expected {u['expected']:.6g}  realised {u['realised']:.6g}",
        f"randomness: {rep['randomness']['source']}",
    ]
    if rep.get("label"):
        lines.append(f"label     : {rep['label']}")
    if rep["chain"].get("fit"):
        lines += [f"warning   : {w}" for w in rep["chain"]["fit"]["warnings"]]
    if args.report:
        lines.append(f"report    : {args.report}")
    print("\n".join(lines))
    return _EXIT_OK
