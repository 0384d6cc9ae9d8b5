"""Command-line interface: a thin layer over the library (no mathematics here).

Exit codes (DESIGN.md): 0 success, 1 a privacy check failed, 2 bad usage or input
(one line on stderr, never a traceback).  Positions on the command line and in files
are 1-based; the library is 0-based.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from redactopt import __version__
from redactopt.errors import UsageError

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

DEFAULT_ALPHA = 0.01
DEFAULT_BETA = 0.8
DEFAULT_P = 1


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def _add_chain_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--alpha", type=float, default=DEFAULT_ALPHA,
                    help=f"P(X_t+1=1 | X_t=0), in (0, 1) (default {DEFAULT_ALPHA}, the paper's Fig. 3)")
    ap.add_argument("--beta", type=float, default=DEFAULT_BETA,
                    help=f"P(X_t+1=0 | X_t=1), in (0, 1) (default {DEFAULT_BETA})")


def _add_problem_options(ap: argparse.ArgumentParser, *, required: bool) -> None:
    ap.add_argument("--n", type=int, required=required, default=None, help="number of records (>= 1)")
    ap.add_argument("--eps", type=float, required=required, default=None,
                    help="privacy budget in nats (> 0)")
    _add_chain_options(ap)
    ap.add_argument("--p", type=int, default=DEFAULT_P,
                    help=f"1-based position of the private record (default {DEFAULT_P})")


def _private_index(n: int, p: int) -> int:
    if not 1 <= p <= n:
        raise UsageError(f"--p must be a 1-based position in 1..{n}, got {p}")
    return p - 1


def _witness_text(w: list[int | None]) -> str:
    return " ".join("⊥" if v is None else str(v) for v in w)


def _emit(obj: dict[str, Any], fmt: str, text: Callable[[dict[str, Any]], str]) -> None:
    if fmt == "json":
        print(json.dumps(obj, indent=2))
    else:
        print(text(obj))


# ---------------------------------------------------------------------------
# audit
# ---------------------------------------------------------------------------
def _audit_parser(sub: argparse._SubParsersAction) -> None:
    ap = sub.add_parser(
        "audit",
        help="exact leakage, witness output and utility of a mechanism; PASS/FAIL",
        description=(
            "Compute the exact leakage L(X_p -> Y) (Definition 1) of a mechanism, an output that "
            "attains it (the witness), and its utility. Give a mechanism file (format "
            "redactopt.mechanism/1, as written by 'redactopt design --format json'), or build one "
            "of the paper's mechanisms with --method. Exit status 0 if the leakage is <= eps, 1 if "
            "it is above, 2 on bad input."
        ),
    )
    ap.add_argument("mechanism", nargs="?", help="mechanism JSON file")
    ap.add_argument("--method", choices=["3r", "mq"], help="build the paper's 3R or MQ mechanism")
    _add_problem_options(ap, required=False)
    ap.add_argument("--reading", choices=["section4", "theorem1", "algorithm2"], default="section4",
                    help="which reading of the paper's 3R (default section4: Eqs. 1-2 with the side budgets)")
    ap.add_argument("--eps-left", type=float, default=None,
                    help="3R left budget (section4 reading); the right gets eps - eps_left")
    ap.add_argument("--format", choices=["text", "json"], default="text", help="output format")
    ap.add_argument("--exact", action="store_true",
                    help="also recompute the leakage in rational arithmetic from the numbers exactly as "
                         "written in the file and certify L <= eps exactly (n <= 64)")
    ap.add_argument("--attack", action="store_true",
                    help="also run the Bayes-optimal adversary on sampled chains and report a "
                         "statistically valid lower bound on the leakage")
    ap.add_argument("--samples", type=int, default=200_000, help="chains per value of X_p for --attack (default 200000)")
    ap.add_argument("--confidence", type=float, default=0.95, help="confidence of the --attack bound (default 0.95)")
    ap.add_argument("--seed", type=int, default=None, help="seed for --attack sampling (default: OS entropy)")
    ap.set_defaults(func=_cmd_audit)


def _cmd_audit(args: argparse.Namespace) -> int:
    from redactopt.judge import audit as audit_mod
    from redactopt.model.chain import MarkovChain
    from redactopt.io import read_mechanism
    from redactopt.paper.mechanisms import markov_quilt, three_region

    if args.mechanism and args.method:
        raise UsageError("give either a mechanism file or --method, not both")
    if args.mechanism:
        mf = read_mechanism(args.mechanism)
        report = audit_mod.audit(mf.chain, mf.redact_prob, private=mf.private, eps=mf.eps, method=mf.method)
    elif args.method:
        if args.n is None or args.eps is None:
            raise UsageError("--method needs --n and --eps")
        chain = MarkovChain(args.alpha, args.beta)
        from redactopt._validate import check_n

        n = check_n(args.n, "--n")
        p = _private_index(n, args.p)
        if args.method == "3r":
            mech = three_region(chain, n, eps=args.eps, p=p, eps_left=args.eps_left, reading=args.reading)
        else:
            mech = markov_quilt(chain, n, eps=args.eps, p=p)
        report = audit_mod.audit(chain, mech.redact_prob, private=mech.private, eps=mech.eps,
                                 method=mech.method, info=mech.info)
    else:
        raise UsageError("give a mechanism file or --method 3r|mq with --n and --eps")
    passed = report["passed"]
    if args.exact:
        from redactopt.judge.exact import certify_exact

        # the same doubles the float audit judged (and a release would draw with)
        chain_, q_, priv_, eps_ = ((mf.chain, mf.redact_prob, mf.private, mf.eps) if args.mechanism
                                   else (chain, mech.redact_prob, mech.private, mech.eps))
        cert = certify_exact(chain_.alpha, chain_.beta, q_.tolist(), list(priv_), eps_)
        report["exact"] = {"status": cert.status, "leakage": cert.leakage, "taylor_terms": cert.terms,
                           "ratio_digits": len(str(cert.ratio.denominator))}
        passed = passed and cert.status == "certified"
    if args.attack:
        import numpy as np

        from redactopt.judge.attack import attack

        chain_, q_, priv_ = ((mf.chain, mf.redact_prob, mf.private) if args.mechanism
                             else (chain, mech.redact_prob, mech.private))
        rng = np.random.default_rng(args.seed)
        worst = None
        for p_ in priv_:
            res = attack(chain_, q_, p=p_, samples=args.samples, confidence=args.confidence, rng=rng)
            if worst is None or res.lower_bound > worst[1].lower_bound:
                worst = (p_, res)
        assert worst is not None
        p_, res = worst
        report["attack"] = {"private": p_ + 1, "lower_bound": res.lower_bound, "confidence": res.confidence,
                            "samples": res.samples, "max_observed": res.max_observed,
                            "event_prob_favoured": res.event_prob_favoured,
                            "event_prob_other": res.event_prob_other,
                            "violation_shown": bool(res.lower_bound > report["eps"])}
    report["passed"] = bool(passed)
    _emit(report, args.format, audit_mod.audit_text)
    return EXIT_OK if passed else EXIT_FAIL


# ---------------------------------------------------------------------------
# design
# ---------------------------------------------------------------------------
def _design_parser(sub: argparse._SubParsersAction) -> None:
    from redactopt.engine.design import METHODS

    ap = sub.add_parser(
        "design",
        help="design the mechanism with the most utility whose exact leakage is <= eps",
        description=(
            "Design a local redaction mechanism for n records of a binary Markov chain with the "
            "private record at --p, maximising utility subject to exact leakage <= eps. Prints the "
            "redaction probabilities per record, the utility, the exact leakage (re-verified after "
            "rounding), a certified upper bound on the best achievable utility with the gap, and the "
            "paper's mechanisms for comparison. Defaults: the paper's Fig. 3 setting "
            "(alpha=0.01, beta=0.8, p=1) and --method optimal."
        ),
    )
    _add_problem_options(ap, required=True)
    ap.add_argument("--method", choices=list(METHODS), default="optimal",
                    help="optimal (default: best verified of global/SGP optimum, calibrated 3R, DIM), "
                         "3r (paper, as printed), 3r-calibrated, mq (Algorithm 1), dim (exact window optimum), "
                         "global (PySCIPOpt only), sgp (CVXPY only)")
    ap.add_argument("--split", default="auto",
                    help="3R budget split: auto (tuned, default), half (eps/2 per side) or eps_left as a number")
    ap.add_argument("--format", choices=["table", "json", "csv"], default="table",
                    help="table (default), json (the mechanism file format plus certificate) or csv")
    ap.add_argument("--out", help="write the output to this file instead of standard output")
    ap.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per optimiser (default 60)")
    ap.add_argument("--certify-time", type=float, default=0.0,
                    help="--method optimal on problems beyond the global solver's default sizes (one-sided "
                         "n > 12, two-sided n > 8): also run it for this many seconds, for a tighter certified "
                         "upper bound than Lemma 2's (default 0: off)")
    ap.add_argument("--no-compare", action="store_true", help="table format: skip the comparison lines")
    ap.set_defaults(func=_cmd_design)


def _refuse_existing(out: str | None, force: bool) -> None:
    """Stop before any work when ``--out`` exists and ``--force`` was not given."""
    from pathlib import Path

    if out and not force and Path(out).exists():
        raise UsageError(f"{out}: exists; pass --force to overwrite")


def _write_output(text: str, out: str | None, force: bool) -> None:
    if out is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    from redactopt.io import write_text_atomic

    write_text_atomic(out, text if text.endswith("\n") else text + "\n", force=force)


def _cmd_design(args: argparse.Namespace) -> int:
    from redactopt._validate import check_n
    from redactopt.errors import PrivacyCheckError
    from redactopt.model.chain import MarkovChain
    from redactopt.engine.design import design
    from redactopt.io import design_to_dict
    from redactopt.interface import report

    chain = MarkovChain(args.alpha, args.beta)
    n = check_n(args.n, "--n")
    p = _private_index(n, args.p)
    _refuse_existing(args.out, args.force)
    try:
        res = design(chain, n, eps=args.eps, p=p, method=args.method, split=args.split,
                     time_limit=args.time_limit, certify_time=args.certify_time)
    except PrivacyCheckError as exc:
        sys.stderr.write(f"redactopt design: privacy check failed: {exc}\n")
        return EXIT_FAIL
    if args.format == "json":
        text = json.dumps(design_to_dict(res), indent=2)
    elif args.format == "csv":
        text = report.design_csv(res)
    else:
        alts = None if args.no_compare else report.alternatives_for(res, time_limit=args.time_limit)
        text = report.design_table(res, alts)
    _write_output(text, args.out, args.force)
    return EXIT_OK


# ---------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------
def _list_of(kind: Callable[[str], Any], name: str) -> Callable[[str], list[Any]]:
    def parse(text: str) -> list[Any]:
        items = [t for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{name} needs at least one value")
        try:
            return [kind(t) for t in items]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a comma-separated list, got {text!r}") from None
    return parse


def _compare_parser(sub: argparse._SubParsersAction) -> None:
    ap = sub.add_parser(
        "compare",
        help="optimum vs calibrated 3R, 3R, MQ, DIM optimum and Theorem 2 over lists of parameters",
        description=(
            "Compare the certified optimum with calibrated 3R, the paper's 3R and MQ (as printed, with "
            "their exact leakage), the exact data-independent optimum and Theorem 2's bound, for every "
            "combination of the comma-separated lists. Example: redactopt compare --n 10 "
            "--eps 0.25,0.5,1,2,4"
        ),
    )
    ap.add_argument("--n", type=_list_of(int, "--n"), required=True, help="number(s) of records")
    ap.add_argument("--eps", type=_list_of(float, "--eps"), required=True, help="budget(s), e.g. 0.25,0.5,1")
    ap.add_argument("--alpha", type=_list_of(float, "--alpha"), default=[DEFAULT_ALPHA], help="alpha value(s)")
    ap.add_argument("--beta", type=_list_of(float, "--beta"), default=[DEFAULT_BETA], help="beta value(s)")
    ap.add_argument("--p", type=_list_of(int, "--p"), default=[DEFAULT_P], help="1-based private position(s)")
    ap.add_argument("--format", choices=["markdown", "csv"], default="markdown", help="markdown (default) or csv")
    ap.add_argument("--out", help="write to this file instead of standard output")
    ap.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per optimiser (default 60)")
    ap.set_defaults(func=_cmd_compare)


def _cmd_compare(args: argparse.Namespace) -> int:
    import itertools

    from redactopt._validate import check_n
    from redactopt.model.chain import MarkovChain
    from redactopt.engine.compare import compare_point
    from redactopt.interface import report

    _refuse_existing(args.out, args.force)
    rows = []
    for n, a, b, p, eps in itertools.product(args.n, args.alpha, args.beta, args.p, args.eps):
        n = check_n(n, "--n")
        chain = MarkovChain(a, b)
        rows.append(compare_point(chain, n, eps=eps, p=_private_index(n, p), time_limit=args.time_limit))
    text = report.rows_csv(rows) if args.format == "csv" else report.rows_markdown(rows)
    _write_output(text, args.out, args.force)
    return EXIT_OK


# ---------------------------------------------------------------------------
# bench
# ---------------------------------------------------------------------------
def _bench_parser(sub: argparse._SubParsersAction) -> None:
    ap = sub.add_parser(
        "bench",
        help="regenerate the paper's figures and tables, the gap table and the audit of the paper",
        description=(
            "Write fig2.png, fig3.png + fig3.csv, fig4.png, table1.md, example1.md, gap_table.csv/.md, "
            "paper_audit.csv/.md (+ per-point CSV) and timings.md into --out. Grids are fixed and the "
            "random audit is seeded. --quick shrinks the grids (a few minutes on two cores)."
        ),
    )
    ap.add_argument("--out", required=True, help="folder to write into (created if missing)")
    ap.add_argument("--quick", action="store_true", help="smaller grids")
    ap.add_argument("--audit-points", type=int, default=None, help="random points of the audit (default 5000)")
    ap.add_argument("--seed", type=int, default=2026, help="seed of the audit sample (default 2026)")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per optimiser (default 60)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    ap.set_defaults(func=_cmd_bench)


def _cmd_bench(args: argparse.Namespace) -> int:
    from pathlib import Path

    from redactopt.interface.bench import run_bench

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder")
    if args.audit_points is not None and args.audit_points < 1:
        raise UsageError(f"--audit-points must be >= 1, got {args.audit_points}")
    run_bench(out, quick=args.quick, progress=not args.no_progress, time_limit=args.time_limit,
              audit_points=args.audit_points, seed=args.seed)
    print(f"wrote {out}")
    return EXIT_OK


# ---------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------


def _data_parsers(sub: argparse._SubParsersAction) -> None:
    from redactopt.interface.cli_data import add_apply_parser, add_fit_parser

    add_fit_parser(sub)
    add_apply_parser(sub)


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(
        prog="redactopt",
        description=(
            "Design, prove and apply local redaction mechanisms for Markov-correlated binary "
            "records. Positions are 1-based; budgets are in nats."
        ),
    )
    ap.add_argument("--version", action="version", version=f"redactopt {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for add in (_design_parser, _audit_parser, _compare_parser, _bench_parser, _data_parsers):
        add(sub)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (also used as the console script)."""
    ap = build_parser()
    args = ap.parse_args(argv)
    if not getattr(args, "func", None):
        ap.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        status = int(args.func(args))
        sys.stdout.flush()  # inside the try: a closed pipe is reported here, not at exit
        return status
    except (UsageError, ValueError, TypeError, FileExistsError, FileNotFoundError,
            IsADirectoryError, PermissionError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        sys.stderr.write(f"redactopt {args.command}: error: {msg}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("redactopt: interrupted\n")
        return 130
    except BrokenPipeError:  # the reader went away (e.g. `| head`): stop quietly, like other tools
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Exception as exc:  # a bug, not bad input: one line, traceback on request
        if os.environ.get("REDACTOPT_DEBUG"):
            raise
        sys.stderr.write(f"redactopt {args.command}: internal error: {type(exc).__name__}: {exc} "
                         "(set REDACTOPT_DEBUG=1 for the traceback)\n")
        return EXIT_INTERNAL


def _entry() -> NoReturn:  # pragma: no cover - console script wrapper
    raise SystemExit(main())


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
