"""Command-line interface: a thin layer over the library (no mathematics here).

Exit codes: 0 success, 1 a privacy check failed, 2 bad usage or input (one line on
stderr naming the command, never a traceback).  Positions on the command line and in
files are 1-based; the library is 0-based.  Conventions shared by every command (one
name per concept, ``-`` for standard input/output, old spellings as aliases) are in
:mod:`redactopt.interface.options`.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import signal
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from redactopt import _progress, datasets
from redactopt.version import __version__
from redactopt._validate import check_n
from redactopt.engine.compare import compare_point, compare_states_point, design_point
from redactopt.engine.design import METHODS, design
from redactopt.engine.local import resolve_split
from redactopt.engine.joint import design_joint_sparse
from redactopt.engine.design import design_sparse
from redactopt.engine.window import covers
from redactopt.engine.tuning import tuned_three_region
from redactopt.errors import MissingExtraError, PrivacyCheckError, TooLongError, UsageError
from redactopt.interface import report, supervise
from redactopt.engine.varying import design_varying
from redactopt.interface.report import positions_text, witness_text
from redactopt.interface.bench import bench_files, run_bench
from redactopt.interface.cli_classes import add_class_option
from redactopt.interface.cli_data import add_apply_parser, add_fit_parser
from redactopt.interface.cli_report import (
    add_plot_option,
    add_report_parser,
    check_plot,
    maybe_plot_compare,
    maybe_plot_design,
)
from redactopt.interface.options import (
    read_transition,
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    EXIT_FAIL,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    Parser,
    add_format,
    add_quiet,
    add_renamed,
    list_of,
    merge_renamed,
    parse_positions,
    refuse_given,
    rename_value,
    show_required,
)
from redactopt.interface.outputs import Output, check_outputs, existing_file, text_kind
from redactopt.interface.progress import Bars, iterate, phase_line, phases_of, progress_enabled, watched
from redactopt.io import (STDIO, atomic_open, check_input_path, check_writable, design_to_dict, read_mechanisms,
                          write_output)
from redactopt.judge.attack import attack
from redactopt.judge.audit import WitnessRuns, audit, exact_audit
from redactopt.judge.certify import DesignResult, SparseDesign
from redactopt.model.chain import Chain, MarkovChain, is_markov
from redactopt.model.classes import ChainClass, parse_range
from redactopt.model.varying import VaryingChain, judged_chain
from redactopt.paper.mechanisms import markov_quilt, three_region

__all__ = ["main", "build_parser"]

DEFAULT_PRIVATE = "1"
DEFAULT_TIME_LIMIT = 60.0
#: ``audit --attack`` stops after its first batch when the run would take longer than this (seconds).
DEFAULT_ATTACK_LIMIT = 600.0

#: 3R's budget split applies to these design methods (the others have no split).
SPLIT_METHODS = ("optimal", "3r", "3r-calibrated")
#: ``design --transition`` on more than two states: the methods with a k-state form.
KSTATE_METHODS = ("optimal", "dim", "local", "global")


# ---------------------------------------------------------------------------
# shared options
# ---------------------------------------------------------------------------
def _add_chain_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--alpha", default=None, metavar="A|LO:HI",
                    help=f"P(X_t+1=1 | X_t=0), in (0, 1) (default {DEFAULT_ALPHA}, the paper's Fig. 3); a range "
                         "LO:HI (with --beta) makes the guarantee hold for every chain of the box (a class of chains)")
    ap.add_argument("--beta", default=None, metavar="B|LO:HI",
                    help=f"P(X_t+1=0 | X_t=1), in (0, 1) (default {DEFAULT_BETA}); or a range LO:HI")


def _add_problem_options(ap: argparse.ArgumentParser, *, required: bool, several: bool = False) -> None:
    ap.add_argument("--n", type=int, required=required, default=None, help="number of records (>= 1)")
    ap.add_argument("--eps", type=float, required=required, default=None, help="privacy budget in nats (> 0)")
    _add_chain_options(ap)
    if several:
        add_renamed(ap, "--private", "--p", default=None, metavar="POSITIONS",
                    help=f"1-based position(s) of the private record(s) (default {DEFAULT_PRIVATE}); several (1,5 or "
                         "3-7) are designed jointly, as apply does, and verified exactly about each")
    else:
        add_renamed(ap, "--private", "--p", default=None, metavar="POSITION",
                    help=f"1-based position of the private record (default {DEFAULT_PRIVATE})")


def _add_output_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--out", default=None, metavar="FILE",
                    help="write to FILE instead of standard output ('-': standard output); its directory must exist")
    ap.add_argument("--force", action="store_true",
                    help="overwrite --out and --plot if they exist (every output is checked before any work)")


def _chain(args: argparse.Namespace, default: MarkovChain | None = None) -> MarkovChain | ChainClass:
    """The chain of ``--alpha``/``--beta``, or the box of chains when either is a range ``LO:HI``.

    An option not given takes ``default``'s value (the Fig. 3 chain if none).
    """
    a = parse_range(args.alpha, "--alpha") if args.alpha is not None else (
        (default.alpha,) * 2 if default else (DEFAULT_ALPHA,) * 2)
    b = parse_range(args.beta, "--beta") if args.beta is not None else (
        (default.beta,) * 2 if default else (DEFAULT_BETA,) * 2)
    if a[0] == a[1] and b[0] == b[1]:
        return MarkovChain(a[0], b[0])
    nominal = default if default is not None and default in ChainClass.box(a, b) else None
    return ChainClass.box(a, b, nominal=nominal)


def _range_item(name: str) -> Callable[[str], tuple[float, float]]:
    """A list item of ``compare --alpha/--beta``: a number or ``LO:HI``."""
    def parse(text: str) -> tuple[float, float]:
        return parse_range(text, name)
    return parse


def _one_private(args: argparse.Namespace, n: int) -> int:
    """The single 0-based private position of ``--private`` (default 1)."""
    pos = parse_positions(DEFAULT_PRIVATE if args.private is None else args.private, n)
    if len(pos) != 1:
        raise UsageError(f"--private: this command protects one private record, got {len(pos)} positions "
                         "(several private records: redactopt apply, or the library's design_joint)")
    return pos[0]


def _check_outputs(args: argparse.Namespace, out_kind: str) -> None:
    """Refuse a bad ``--out`` or ``--plot`` before anything is read or designed (:mod:`redactopt.interface.outputs`):
    ``--out`` holds ``out_kind`` (``text``, ``json``, ``csv``)."""
    check_outputs([Output("--out", args.out, out_kind),
                   Output("--plot", getattr(args, "plot", None), "figure", stdout=False,
                          why_not_stdout=" ending in .png or .svg, not standard output")],
                  force=args.force, inputs=[("--chain", getattr(args, "chain", None)),
                                            ("--transition", existing_file(getattr(args, "transition", None)))])


def _write_output(text: str, out: str | None, force: bool) -> None:
    """Write to ``--out`` (standard output without it or for ``-``); a file written is named in one line."""
    write_output(text, out, force=force)
    if out is not None and out != STDIO:
        print(f"wrote {out}")


# ---------------------------------------------------------------------------
# audit
# ---------------------------------------------------------------------------
def _audit_parser(sub: argparse._SubParsersAction) -> None:
    ap = sub.add_parser(
        "audit",
        help="exact leakage, witness output and utility of a mechanism; PASS/FAIL",
        description=(
            "Compute the exact leakage L(X_p -> Y) (Definition 1) of a mechanism, an output that attains it "
            "(the witness), and its utility. Give a mechanism file (format redactopt.mechanism/3, as written "
            "by 'redactopt design --format json', or the older /2, /1 and redactopt.kmechanism/1), the report of "
            "'redactopt apply' (every designed sequence is audited), '-' for standard input, or build one of "
            "the paper's mechanisms with --method. A scan, owner or holder mechanism file (format "
            "redactopt.class-mechanism/1, from 'design --class ... --out') or the report of 'apply --class' is "
            "judged exactly as well, every mechanism it holds (same verdicts and exit statuses). Each private "
            "record is judged on its block of rows that can "
            "be redacted and the always-published row on each side, which is exact for the whole sequence. "
            "A file carries its own n, eps, chain and private records and is judged by them; with a file, --eps E "
            "re-judges it against another budget, and --alpha with --beta (both, numbers or LO:HI ranges; one "
            "alone is an error) under another chain or class of chains, while --n, --private, --reading and "
            "--split apply to --method only. Exit status 0 if the leakage is <= eps, 1 if it is above, 2 on bad "
            "input."
        ),
    )
    ap.add_argument("mechanism", nargs="?", metavar="FILE",
                    help="mechanism JSON file or apply report ('-': standard input)")
    ap.add_argument("--method", choices=["3r", "mq"], help="build the paper's 3R or MQ mechanism")
    _add_problem_options(ap, required=False)
    ap.add_argument("--reading", choices=["section4", "theorem1", "algorithm2"], default=None,
                    help="--method 3r: which reading of the paper (default section4: Eqs. 1-2 with the side budgets)")
    add_renamed(ap, "--split", "--eps-left", default=None,
                help="--method 3r, section4 reading: the budget split, half (default: eps/2 per side, the whole "
                     "eps on the only side), auto (the split maximising Theorem 1's utility, as the paper would "
                     "choose it, whatever it leaks: the audit judges it) or eps_left as a number "
                     "(the right side gets eps - eps_left)")
    add_format(ap, ["text", "json"])
    ap.add_argument("--exact", action="store_true",
                    help="also recompute the leakage in rational arithmetic from the numbers exactly as written "
                         "and certify L <= eps exactly (each private record's block of rows that can be redacted, with its "
                         "always-published neighbours, may hold up to 64 records)")
    ap.add_argument("--attack", action="store_true",
                    help="also run the Bayes-optimal adversary on sampled chains (on the worst private record of "
                         "the exact audit; only its block of rows that can be redacted is sampled) and report a "
                         "statistically valid lower bound on the leakage")
    ap.add_argument("--samples", type=int, default=None,
                    help="--attack: chains per value of X_p (default 200000)")
    ap.add_argument("--confidence", type=float, default=None,
                    help="--attack: confidence of the lower bound (default 0.95)")
    add_renamed(ap, "--attack-seed", "--seed", type=int, default=None,
                help="--attack: seed of the sampling (default: OS entropy)")
    ap.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                    help=f"--attack: stop after the first batch of chains (seconds in) when the whole run, at "
                         f"that pace, would take longer than this (default {DEFAULT_ATTACK_LIMIT:g} s)")
    ap.add_argument("--compose", nargs="+", metavar="REPORT", default=None,
                    help="the cumulative exact leakage of several release reports of the same rows (apply --report, "
                         "local mechanisms, independent draws): their composition is the product mechanism, judged "
                         "exactly per private record; with --eps, exit 1 unless every record is proven within it")
    ap.add_argument("--ledger", default=None, metavar="LEDGER",
                    help="re-judge a ledger of releases (apply --ledger): each release's exact leakage alone and the "
                         "cumulative leakage after it, per private record; exit 1 unless the cumulative leakage is "
                         "proven within the ledger's total budget")
    add_quiet(ap)
    ap.set_defaults(func=_cmd_audit)


def _build_mechanism(args: argparse.Namespace) -> tuple[MarkovChain, Any]:
    if args.n is None or args.eps is None:
        raise UsageError("--method needs --n and --eps")
    if args.method == "mq":
        refuse_given(args, ["reading", "split"], "applies to --method 3r only")
    reading = args.reading or "section4"
    if reading != "section4":
        refuse_given(args, ["split"], f"applies to the section4 reading only (--reading {reading} fixes its budgets)")
    judge = _chain(args)  # the chain, or the class of chains the mechanism is judged for
    chain = judge.nominal if isinstance(judge, ChainClass) else judge  # the paper builds it for one chain
    n = check_n(args.n, "--n")
    p = _one_private(args, n)
    if args.method == "mq":
        return judge, markov_quilt(chain, n, eps=args.eps, p=p)
    split = resolve_split(args.split, n, p, args.eps)
    # auto: the paper's choice (Theorem 1's best split, whatever it leaks): what the audit is for
    eps_left = tuned_three_region(chain, n, eps=args.eps, p=p, private=False).eps_left if split == "auto" else split
    return judge, three_region(chain, n, eps=args.eps, p=p, eps_left=eps_left, reading=reading)


def _audit_one(chain: MarkovChain | ChainClass, q: np.ndarray, private: tuple[int, ...], eps: float, method: str,
               info: dict | None, args: argparse.Namespace, rng: np.random.Generator) -> dict[str, Any]:
    rep = audit(chain, q, private=private, eps=eps, method=method, info=info)
    passed = rep["passed"]
    if args.exact:
        # the same doubles the float audit judged (and a release would draw with)
        cert = exact_audit(chain, q, private=private, eps=eps)
        rep["exact"] = {"status": cert.status, "leakage": cert.leakage, "taylor_terms": cert.terms,
                        "ratio_digits": len(str(cert.ratio.denominator))}
        passed = passed and cert.status == "certified"
    if args.attack:
        rep["attack"] = attack_entry(chain, q, rep["witness_private"] - 1, rep["eps"], args, rng)
    rep["passed"] = bool(passed)
    return rep


def attack_entry(chain: Any, q: Any, p: int, eps: float, args: argparse.Namespace,
                 rng: np.random.Generator) -> dict[str, Any]:
    """``audit --attack``: the Bayes-optimal adversary on private record ``p`` (0-based; the worst of the
    exact audit), any chain; its statistically valid lower bound and what it observed."""
    samples = 200_000 if args.samples is None else args.samples
    limit = DEFAULT_ATTACK_LIMIT if args.time_limit is None else args.time_limit
    try:
        with Bars(progress_enabled(args.quiet), unit="chains") as bars:
            res = attack(chain, q, p=p, samples=samples,
                         confidence=0.95 if args.confidence is None else args.confidence, rng=rng,
                         progress=lambda done, total: bars("attack", done, total), max_seconds=limit)
    except TooLongError as exc:
        raise UsageError(f"--attack would take about {_duration(exc.seconds)} ({samples} chains per value "
                         f"of X_p); lower --samples or raise --time-limit (now {limit:g} s)") from None
    labels = [str(v) for v in getattr(chain, "labels", (0, 1))]
    return {"private": p + 1, "lower_bound": res.lower_bound, "confidence": res.confidence,
            "samples": res.samples, "max_observed": res.max_observed,
            "event_prob_favoured": res.event_prob_favoured, "event_prob_other": res.event_prob_other,
            "pair": [labels[res.favoured], labels[res.other]], "violation_shown": bool(res.lower_bound > eps)}


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _chain_text(chain: dict) -> str:
    """A file's chain in one line: its matrix, or the levels of a chain that varies with the step."""
    if "level_runs" in chain:
        runs = chain["level_runs"]
        return (f"varies with the step: {len(chain['levels'])} level(s) ({', '.join(chain['levels'][:6])}"
                f"{', ...' if len(chain['levels']) > 6 else ''}) over {runs[-1][1]} rows in {len(runs)} run(s)")
    return "P = " + "; ".join(",".join(f"{float(Fraction(v)) if isinstance(v, str) else v:.6g}" for v in row)
                              for row in chain["transition"])


def matrix_audit_text(rep: dict[str, Any]) -> str:
    """The audit of a mechanism whose chain is given as a matrix (states by their labels)."""
    a, b = rep["pair"]
    lines = [f"mechanism : {rep['method']}  n={rep['n']}  private={positions_text(rep['private'])}  "
             f"k={rep['k']}  states={','.join(rep['states'])}",
             "chain     : " + _chain_text(rep["chain"]),
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


def maybe_matrix_audit(args: argparse.Namespace) -> int | None:
    """``redactopt audit FILE`` on a mechanism of a chain given as a matrix (or a categorical apply report): its audit's exit status; ``None`` for any other file.

    Standard input is read once; for a file that is not k-state it is put back for the binary reader.
    """
    from redactopt.judge.audit import kaudit
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
        print(json.dumps(reports[0], indent=2) if (args.format or "text") == "json" else matrix_audit_text(reports[0]))
    elif (args.format or "text") == "json":
        print(json.dumps({"designs": reports, "passed": passed}, indent=2))
    else:
        blocks = []
        for j, r in enumerate(reports):
            ids = r.get("sequences", [])
            shown = ", ".join(ids[:5]) + (f", … ({len(ids)} in all)" if len(ids) > 5 else "")
            blocks.append(f"design {j + 1} of {len(reports)} (sequences: {shown or 'none'})\n" + matrix_audit_text(r))
        failed = sum(1 for r in reports if not r["passed"])
        blocks.append(f"overall   : {'PASS' if passed else 'FAIL'} ({len(reports) - failed} of {len(reports)} "
                      "designs pass)")
        print("\n\n".join(blocks))
    return EXIT_OK if passed else EXIT_FAIL


#: What ``audit`` checks on a public report (``apply --public-report``), and what it cannot.
PUBLIC_AUDIT = ("public report: every design checked exactly on its own sub-problem (its private offsets); not "
                "checked: where the designs are placed in the release — the private positions are in the "
                "confidential report only")


def maybe_public_audit(args: argparse.Namespace, rng: np.random.Generator) -> int | None:
    """``redactopt audit PUBLIC.json`` on a public report: each of its designs judged exactly on its own
    sub-problem; ``None`` for any other file."""
    if args.mechanism is None or args.mechanism == STDIO:
        return None
    try:
        d = json.loads(check_input_path(args.mechanism).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValueError):
        return None  # the other readers report it
    if not (isinstance(d, dict) and d.get("format") == "redactopt.release.public-report/1"):
        return None
    if args.method:
        raise UsageError("give either a mechanism file or --method, not both")
    refuse_given(args, ["n", "private", "reading", "split", "alpha", "beta"],
                 "applies to --method only: a public report carries its designs' chain, n and private offsets")
    from redactopt.io import is_matrix_file, mechanism_from_dict
    from redactopt.judge.audit import kaudit
    from redactopt.io import kmechanism_from_dict

    reports = []
    for i, entry in enumerate(d.get("designs") or []):
        mech, where = (entry or {}).get("mechanism"), f"{args.mechanism}: designs[{i}].mechanism"
        mf = kmechanism_from_dict(mech, where=where) if is_matrix_file(mech) else mechanism_from_dict(mech, where=where)
        eps = mf.eps if args.eps is None else args.eps
        if not is_matrix_file(mech):
            rep = _audit_one(mf.chain_class or mf.chain, mf.redact_prob, mf.private, eps, mf.method, None, args, rng)
        else:
            rep = kaudit(mf.chain, mf.redact_prob, private=mf.private, eps=eps, method=mf.method,
                         exact=bool(args.exact))
        reports.append({"design": entry.get("id", i), "_binary": not is_matrix_file(mech), **rep})
    if not reports:
        raise UsageError(f"{args.mechanism}: the public report lists no design")
    passed = all(r["passed"] for r in reports)
    kinds = [r.pop("_binary") for r in reports]
    if (args.format or "text") == "json":
        print(json.dumps({"passed": passed, "checked": PUBLIC_AUDIT, "designs": reports}, indent=2,
                         default=_as_list))
    else:
        blocks = [f"design {r['design']} (on its own sub-problem)\n" + (report.audit_text(r) if binary else
                                                                          matrix_audit_text(r))
                  for r, binary in zip(reports, kinds)]
        blocks.append(f"checked   : {PUBLIC_AUDIT}\nresult    : {'PASS' if passed else 'FAIL'} "
                      f"({sum(r['passed'] for r in reports)} of {len(reports)} designs pass)")
        print("\n\n".join(blocks))
    return EXIT_OK if passed else EXIT_FAIL


def _cmd_audit(args: argparse.Namespace) -> int:
    fmt = args.format or "text"
    if not args.attack:
        refuse_given(args, ["samples", "confidence", "attack_seed", "time_limit"], "applies to --attack only")
    if args.compose is not None:
        from redactopt.interface.cli_ledger import cmd_compose

        return cmd_compose(args)
    if args.ledger is not None:
        from redactopt.interface.cli_ledger import cmd_ledger_audit

        return cmd_ledger_audit(args)
    rng = np.random.default_rng(args.attack_seed)
    if args.mechanism is not None:
        pstatus = maybe_public_audit(args, rng)  # a public report (apply --public-report, issue 36)
        if pstatus is not None:
            return pstatus
        from redactopt.interface.cli_classes import maybe_class_audit
        cstatus = maybe_class_audit(args)  # a scan/owner/holder mechanism or class release (issue 26)
        if cstatus is not None:
            return cstatus
        kstatus = maybe_matrix_audit(args)  # a mechanism of a chain given as a matrix
        if kstatus is not None:
            return kstatus
        if args.method:
            raise UsageError("give either a mechanism file or --method, not both")
        refuse_given(args, ["n", "private", "reading", "split"],
                     "applies to --method only: a mechanism file carries its own n and private records")
        if (args.alpha is None) != (args.beta is None):
            given, missing = ("--alpha", "--beta") if args.alpha is not None else ("--beta", "--alpha")
            raise UsageError(f"{given} re-judges the file under another chain only together with {missing}: "
                             "give both (numbers or LO:HI ranges) or neither (the file's own chain)")
        restated = _chain(args) if args.alpha is not None else None
        reports = []
        for seq_id, mf in read_mechanisms(args.mechanism):
            # --alpha with --beta (numbers or LO:HI ranges) judge the file's mechanism for another chain or
            # a class of chains; --eps against another budget; by default the file's own chain (or class)
            judge = restated if restated is not None else (mf.chain_class or mf.chain)
            eps = mf.eps if args.eps is None else args.eps
            rep = _audit_one(judge, mf.redact_prob, mf.private, eps, mf.method, None, args, rng)
            if seq_id is not None:
                rep = {"sequence": seq_id, **rep}
            reports.append(rep)
    elif args.method:
        chain, mech = _build_mechanism(args)
        reports = [_audit_one(chain, mech.redact_prob, mech.private, mech.eps, mech.method, mech.info, args, rng)]
    else:
        raise UsageError("give a mechanism file, '-' for standard input, or --method 3r|mq with --n and --eps")
    passed = all(r["passed"] for r in reports)
    if len(reports) == 1:
        out: Any = reports[0]
        text = report.audit_text(out)
    else:
        out = {"passed": passed, "sequences": reports}
        text = "\n\n".join(report.audit_text(r) for r in reports)
        text += f"\n\nresult    : {'PASS' if passed else 'FAIL'} ({sum(r['passed'] for r in reports)} of " \
                f"{len(reports)} sequences pass)"
    if args.mechanism is not None:  # a ledgered release: the ledger as its report states it (issue 39)
        from redactopt.interface.cli_ledger import report_ledger_lines

        text += report_ledger_lines(args.mechanism)
    print(json.dumps(out, indent=2, default=_as_list) if fmt == "json" else text)
    return EXIT_OK if passed else EXIT_FAIL


def _as_list(obj: Any) -> list:
    """JSON for an audit's witness (:class:`redactopt.judge.audit.WitnessRuns`): every record."""
    if isinstance(obj, WitnessRuns):
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


# ---------------------------------------------------------------------------
# design
# ---------------------------------------------------------------------------
def _design_parser(sub: argparse._SubParsersAction) -> None:
    ap = sub.add_parser(
        "design",
        help="design the mechanism with the most utility whose exact leakage is <= eps",
        description=(
            "Design a local redaction mechanism for n records of a binary Markov chain with the private "
            "record at --private, maximising utility subject to exact leakage <= eps. Prints the redaction "
            "probabilities per record, the utility, the exact leakage (re-verified after rounding), a "
            "certified upper bound on the best achievable utility with the gap (and a line when a time limit "
            "stopped the search before the gap closed), and the paper's mechanisms for comparison. Defaults: "
            "the paper's Fig. 3 setting (alpha=0.01, beta=0.8, private record 1) and --method optimal. "
            "--class scan|owner|holder designs in a larger class of mechanisms instead (docs/beyond_local.md): "
            "the best verified one, its exact leakage and a certified bound over the class."
        ),
    )
    _add_problem_options(ap, required=False, several=True)
    ap.add_argument("--chain", default=None, metavar="FILE",
                    help="a chain whose transition matrix changes from step to step (docs/commands.md, 'Varying "
                         "chains'): a JSON file holding it, or a mechanism file or report whose 'chain' is one (e.g. "
                         "'fit --varies-with ... --format json'); --n is its number of rows. A file whose every step holds one "
                         "matrix, starting from that matrix's stationary law, is that homogeneous chain and is designed "
                         "exactly as --alpha/--beta or --transition would design it")
    ap.add_argument("--method", choices=list(METHODS) + ["auto"], default="optimal",
                    help="optimal (default: best verified of the side-frontier optimum, calibrated 3R, DIM and, on "
                         "small problems, SCIP; several private records: the per-record optima combined and every "
                         "candidate of auto), 3r (paper, as printed), 3r-calibrated, mq (Algorithm 1), dim (exact "
                         "window optimum), global (PySCIPOpt only), sgp (CVXPY only), auto (apply's joint design: "
                         "joint windows, the footnote's maximum, local improvement), local (successive linear "
                         "programming); a --transition of more than two states: optimal, dim, local or global")
    ap.add_argument("--transition", default=None, metavar='FILE|"p11,p12,...;p21,..."',
                    help="the chain as a matrix instead of --alpha/--beta (any number of states; a 2x2 matrix "
                         "designs exactly as its --alpha/--beta): a JSON file with 'transition' and 'labels' (e.g. "
                         "the output of 'fit --categorical --format json') or the rows of the matrix, ';' between rows")
    ap.add_argument("--labels", default=None, metavar="A,B,...",
                    help="--transition: the states' names (default: the file's labels, or 0..k-1)")
    ap.add_argument("--split", default=None,
                    help="3R budget split for --method optimal, 3r and 3r-calibrated: auto (tuned, default), "
                         "half (eps/2 per side) or eps_left as a number")
    add_format(ap, ["text", "json", "csv"], old={"table": "text"},
               help="text (default), json (the mechanism file format plus certificate) or csv")
    _add_output_options(ap)
    add_plot_option(ap)
    ap.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT, metavar="SECONDS",
                    help=f"seconds for the whole design, every optimiser together (default {DEFAULT_TIME_LIMIT:g}); a "
                         "design stopped by it says so and keeps its certificate")
    ap.add_argument("--certify-time", type=float, default=None, metavar="SECONDS",
                    help="--method optimal on problems beyond the global solver's default sizes (binary: "
                         "one-sided n > 12, two-sided n > 6; --transition: n > 8): also run it for this many "
                         "seconds (within --time-limit), for a tighter certified upper bound than Lemma 2's, "
                         "whatever the gap (default: off; on the default sizes SCIP runs only while the gap is "
                         "above 1e-6); with --transition it also replaces SCIP's default 10 s on the default sizes")
    ap.add_argument("--no-compare", action="store_true", help="text format: skip the comparison lines")
    add_class_option(ap, "design")
    add_quiet(ap)
    ap.set_defaults(func=_cmd_design)


def _cmd_design(args: argparse.Namespace) -> int:
    rename_value(args, "format", {"table": "text"})
    # every output first: a mechanism file of a class beyond local is JSON whatever --format says
    _check_outputs(args, "json" if args.cls not in (None, "local") else text_kind(args.format))
    given = None
    if args.chain is not None:
        given, args.n = _read_design_chain(args)
        if isinstance(given, VaryingChain):
            return _cmd_design_varying(args, given)
    for opt in ("n", "eps"):
        if getattr(args, opt) is None:
            raise UsageError(f"design needs --{opt}")
    if args.cls not in (None, "local"):  # a mechanism class beyond local (issue 26)
        from redactopt.interface.cli_classes import cmd_class_design

        return cmd_class_design(args)
    check_plot(args)
    fmt = args.format or "text"
    # the chain given as a matrix (any number of states), or a --chain file's constant chain that is not a MarkovChain
    matrix = args.transition is not None or (given is not None and not is_markov(given))
    if matrix:
        refuse_given(args, ["alpha", "beta"], "cannot be combined with --transition (the matrix is the chain)")
        refuse_given(args, ["split"], "has no effect with --transition (it splits 3R's budget, a binary mechanism)")
    else:
        refuse_given(args, ["labels"], "applies to --transition only")
    if args.method not in SPLIT_METHODS:
        refuse_given(args, ["split"], f"has no effect with --method {args.method} (it splits 3R's budget: "
                                      f"{', '.join(SPLIT_METHODS)})")
    if args.method != "optimal":
        refuse_given(args, ["certify_time"], "applies to --method optimal only")
    if fmt != "text":
        refuse_given(args, ["no_compare"], "applies to --format text only")
    chain = given if given is not None else read_transition(args.transition, args.labels) if matrix else _chain(args)
    n = check_n(args.n, "--n")
    private = parse_positions(DEFAULT_PRIVATE if args.private is None else args.private, n)
    if len(private) > 1:
        refuse_given(args, ["split", "certify_time"], "applies to one private record (several are designed jointly)")
    if matrix and args.method not in KSTATE_METHODS and not chain.binary:
        raise UsageError(f"--method {args.method} has no k-state form (it is built on the two values of a binary "
                         f"record); with a {chain.k}-state --transition use one of {', '.join(KSTATE_METHODS)}")
    # bars on stderr (a terminal) for designs longer than a second: main() watches (redactopt._progress)
    try:
        res = _design_for(args, chain, n, private)
    except PrivacyCheckError as exc:
        sys.stderr.write(f"redactopt design: privacy check failed: {exc}\n")
        return EXIT_FAIL
    if fmt == "json":
        d = design_to_dict(res)
        if args.out in (None, STDIO):  # the times on standard output only: a mechanism file stays reproducible
            d["phases"] = phases_of(args)
        _write_output(json.dumps(d, indent=2), args.out, args.force)
    elif fmt == "csv":
        _write_chunks(report.design_csv(res) if is_markov(res.chain) else [report.states_csv(res)],
                      args.out, args.force)
    elif not is_markov(res.chain):  # a chain given as a matrix (not a MarkovChain's): its states' labels
        with _progress.phase("compare"):
            dim = None if args.no_compare else (
                res if args.method == "dim" else
                design_sparse(chain, n, eps=args.eps, p=private[0], method="dim") if len(private) == 1 else
                design_joint_sparse(chain, n, eps=args.eps, private=private, method="dim"))
        _write_output(report.states_table(res, dim), args.out, args.force)
    else:
        several = len(private) > 1
        with _progress.phase("compare"):
            alts = None if args.no_compare or several else report.alternatives_for(res, time_limit=args.time_limit)
        _write_output(report.design_table(res, alts), args.out, args.force)
    maybe_plot_design(args, res)
    return EXIT_OK


def _read_design_chain(args: argparse.Namespace) -> tuple[Chain | VaryingChain, int]:
    """The chain of ``design --chain FILE``: a :class:`VaryingChain` whose steps vary, or -- when every step
    holds one matrix and the first row starts from its stationary law (exactly) -- that homogeneous chain,
    designed on the constant path bit for bit (:func:`redactopt.model.varying.judged_chain`); and its rows."""
    from redactopt.io import chain_from_dict, load_json

    refuse_given(args, ["alpha", "beta", "transition", "labels"], "does not apply with --chain (the file is the chain)")
    if args.eps is None:
        raise UsageError("design needs --eps")
    d, where = load_json(args.chain)
    raw = d.get("chain", d) if isinstance(d, dict) else d
    raw = raw.get("varies_with", raw) if isinstance(raw, dict) and "varies_with" in raw else raw
    try:
        chain = chain_from_dict(raw, f"{where}: chain")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not isinstance(chain, VaryingChain):
        raise UsageError(f"{where}: the chain has no 'level_runs': give a constant chain with --alpha/--beta or "
                         "--transition")
    if args.n is not None and args.n != chain.n:
        raise UsageError(f"--n {args.n} but the chain of {where} has {chain.n} rows")
    return judged_chain(chain, chain.n), chain.n


def _cmd_design_varying(args: argparse.Namespace, chain: VaryingChain) -> int:
    """``design --chain FILE`` whose steps vary: a design on them (:mod:`redactopt.engine.varying`)."""
    refuse_given(args, ["split", "certify_time", "plot"], "does not apply with --chain (the file is the chain)")
    if args.cls not in (None, "local"):
        raise UsageError("--class scan|owner|holder: not yet for a chain that varies with the step (local only)")
    private = parse_positions(DEFAULT_PRIVATE if args.private is None else args.private, chain.n)
    method = {"optimal": "auto"}.get(args.method, args.method)
    fmt = args.format or "text"
    if fmt not in ("text", "json"):
        raise UsageError("--format csv: not for a chain that varies with the step (use json)")
    res = design_varying(chain, eps=args.eps, private=private, method=method, time_limit=args.time_limit)
    if fmt == "json":
        _write_output(json.dumps(design_to_dict(res), indent=2), args.out, args.force)
    else:
        _write_output(report.varying_table(res), args.out, args.force)
    return EXIT_OK


def _design_for(args: argparse.Namespace, chain: MarkovChain | ChainClass, n: int,
                private: list[int]) -> DesignResult | SparseDesign:
    """One private record: ``design`` where its window is the whole sequence, else the sparse window
    design (any n, memory of the window); several, or ``--method auto``: the joint design of
    ``apply`` (:func:`~redactopt.engine.joint.design_joint_sparse`), exactly verified about each."""
    if len(private) > 1 or args.method == "auto":
        return design_joint_sparse(chain, n, eps=args.eps, private=private, method=args.method,
                                   time_limit=args.time_limit)
    kw = dict(method=args.method, split="auto" if args.split is None else args.split, time_limit=args.time_limit,
              certify_time=args.certify_time or 0.0)
    base = chain.nominal if isinstance(chain, ChainClass) else chain
    if covers(base, n, args.eps, private[0]):
        return design(chain, n, eps=args.eps, p=private[0], **kw)  # type: ignore[arg-type]
    return design_sparse(chain, n, eps=args.eps, p=private[0], **kw)


def _write_chunks(chunks: Any, out: str | None, force: bool) -> None:
    """Write text pieces to ``--out`` (atomically) or standard output; a file written is named in one line."""
    with atomic_open(STDIO if out is None else out, force=force) as fh:
        for piece in chunks:
            fh.write(piece)
    if out is not None and out != STDIO:
        print(f"wrote {out}")


# ---------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------
def _compare_parser(sub: argparse._SubParsersAction) -> None:
    ap = sub.add_parser(
        "compare",
        help="optimum vs calibrated 3R, 3R, MQ, DIM optimum and Theorem 2 over lists of parameters",
        description=(
            "Compare the certified optimum with calibrated 3R, the paper's 3R and MQ (as printed, with their "
            "exact leakage), the exact data-independent optimum and Theorem 2's bound, one row for every "
            "combination of the comma-separated lists (an empty item is an error). Rows whose optimum was "
            "stopped by the time limit are named below the table. Example: redactopt compare --n 10 "
            "--eps 0.25,0.5,1,2,4. With --class local,scan,owner,holder: one table per point, one row per "
            "mechanism class (utility, certified bound, gap, exact leakage), binary or --transition chains."
        ),
    )
    ap.add_argument("--n", type=list_of(int, "--n"), required=True, help="number(s) of records")
    ap.add_argument("--eps", type=list_of(float, "--eps"), required=True, help="budget(s), e.g. 0.25,0.5,1")
    ap.add_argument("--alpha", type=list_of(_range_item("--alpha"), "--alpha"), default=None,
                    help=f"alpha value(s) (default {DEFAULT_ALPHA}); an item LO:HI makes that row a class of chains")
    ap.add_argument("--beta", type=list_of(_range_item("--beta"), "--beta"), default=None,
                    help=f"beta value(s) (default {DEFAULT_BETA}); an item LO:HI makes that row a class of chains")
    add_renamed(ap, "--private", "--p", default=None, metavar="POSITIONS",
                help="1-based private position(s), one row each: 1,5 or 1-3 (default 1)")
    add_format(ap, ["text", "csv", "json"], old={"markdown": "text"},
               help="text (default: a Markdown table), csv or json")
    _add_output_options(ap)
    add_plot_option(ap, what="utility against eps for every method (one panel per n, p, alpha, beta)")
    ap.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT, metavar="SECONDS",
                    help=f"seconds for each design, every optimiser together (default {DEFAULT_TIME_LIMIT:g}); a "
                         "design stopped by it says so and keeps its certificate")
    add_class_option(ap, "compare")
    ap.add_argument("--transition", default=None, metavar='FILE|"p11,p12,...;p21,..."',
                    help="the chain as a matrix instead of --alpha/--beta (a JSON file with 'transition' and "
                         "'labels', or the rows of the matrix, ';' between rows): a 2x2 matrix compares as its "
                         "alpha/beta; more states compare the certified optimum with the DIM optimum and the local LP")
    ap.add_argument("--labels", default=None, metavar="A,B,...",
                    help="--transition: the states' names (default: the file's labels, or 0..k-1)")
    add_quiet(ap)
    ap.set_defaults(func=_cmd_compare)


def _cmd_compare(args: argparse.Namespace) -> int:
    rename_value(args, "format", {"markdown": "text"})
    _check_outputs(args, text_kind(args.format))
    if args.cls is not None:  # mechanism classes instead of methods (issue 26)
        from redactopt.interface.cli_classes import cmd_class_compare

        return cmd_class_compare(args)
    if args.transition is not None:  # the chain given as a matrix: any number of states
        return _compare_matrix(args)
    refuse_given(args, ["labels"], "applies to --transition only")
    args.alpha = args.alpha or [(DEFAULT_ALPHA,) * 2]
    args.beta = args.beta or [(DEFAULT_BETA,) * 2]
    fmt = args.format or "text"
    check_plot(args)
    privates = parse_positions(DEFAULT_PRIVATE if args.private is None else args.private)
    points = list(itertools.product(args.n, args.alpha, args.beta, privates, args.eps))
    for n, _, _, p, _ in points:  # every point is checked before the first (slow) design
        if p >= check_n(n, "--n"):
            raise UsageError(f"--private: position {p + 1} is outside the {n} records")
    rows = []
    for n, a, b, p, eps in iterate(points, "compare", progress_enabled(args.quiet), total=len(points)):
        chain = MarkovChain(a[0], b[0]) if a[0] == a[1] and b[0] == b[1] else ChainClass.box(a, b)
        opt = design_point(chain, n, eps, p, "optimal", args.time_limit)
        row = compare_point(chain, n, eps=eps, p=p, time_limit=args.time_limit, optimal=opt)
        row["optimal_stopped"] = opt.certificate.stopped
        rows.append(row)
    if fmt == "json":
        text = json.dumps(rows, indent=2)
    elif fmt == "csv":
        text = report.rows_csv(rows)
    else:
        text = report.compare_text(rows)
        text += "".join(f"\nrow {i} (n={r['n']}, p={r['p']}, eps={r['eps']:g}): {report.stopped_text(r['optimal_gap'])}"
                        for i, r in enumerate(rows, 1) if r["optimal_stopped"])
    _write_output(text, args.out, args.force)
    maybe_plot_compare(args, rows)
    return EXIT_OK


def _compare_matrix(args: argparse.Namespace) -> int:
    """``compare --transition``: a 2x2 matrix is its binary chain (every method, 3R, MQ, Theorem 2); on
    more states the certified optimum against the methods with a k-state form, one row per point."""
    refuse_given(args, ["alpha", "beta"], "cannot be combined with --transition (the matrix is the chain)")
    chain = read_transition(args.transition, args.labels)
    if chain.binary:
        args.alpha, args.beta = [(chain.alpha,) * 2], [(chain.beta,) * 2]
        args.transition = args.labels = None
        return _cmd_compare(args)
    if args.plot is not None:
        raise UsageError(f"--plot draws the paper's mechanisms against the optimum; with a {chain.k}-state "
                         "--transition use --format csv or json and plot the columns")
    fmt = args.format or "text"
    privates = parse_positions(DEFAULT_PRIVATE if args.private is None else args.private)
    points = list(itertools.product(args.n, privates, args.eps))
    for n, p, _ in points:
        if p >= check_n(n, "--n"):
            raise UsageError(f"--private: position {p + 1} is outside the {n} records")
    rows = [compare_states_point(chain, n, eps=eps, p=p, time_limit=args.time_limit)
            for n, p, eps in iterate(points, "compare", progress_enabled(args.quiet), total=len(points))]
    if fmt == "json":
        text = json.dumps(rows, indent=2)
    elif fmt == "csv":
        text = report.rows_csv(rows)
    else:
        text = report.states_compare_text(rows, chain)
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
            "paper_audit.csv/.md (+ per-point CSV) and timings.md into --out-dir (created if missing, but "
            "not its parent). Existing files there are refused unless --force. Grids are fixed and the "
            "random audit is seeded. --quick shrinks the grids (a few minutes on two cores)."
        ),
    )
    show_required(add_renamed(ap, "--out-dir", "--out", metavar="DIR", help="directory to write into (required)"))
    ap.add_argument("--force", action="store_true", help="overwrite the files of an earlier run in --out-dir")
    ap.add_argument("--quick", action="store_true", help="smaller grids")
    ap.add_argument("--audit-points", type=int, default=None, help="random points of the audit (default 5000)")
    add_renamed(ap, "--audit-seed", "--seed", type=int, default=None,
                help="seed of the audit's random parameter points (default 2026)")
    ap.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT, metavar="SECONDS",
                    help=f"seconds for each design, every optimiser together (default {DEFAULT_TIME_LIMIT:g}); a "
                         "design stopped by it says so and keeps its certificate")
    add_format(ap, ["text", "json"], help="text (default: one line per part) or json (files and seconds)")
    add_renamed(ap, "--quiet", "--no-progress", action="store_true",
                help="no progress bars (bars appear only on a terminal anyway)")
    ap.set_defaults(func=_cmd_bench)


def _cmd_bench(args: argparse.Namespace) -> int:
    if args.out_dir is None:
        raise UsageError("--out-dir DIR is required")
    out = Path(args.out_dir)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out-dir {args.out_dir}: exists and is not a directory")
    if not out.parent.is_dir():
        raise UsageError(f"--out-dir {args.out_dir}: directory {out.parent} does not exist (create it first)")
    check_writable(out / "fig2.png" if out.is_dir() else out, shown=f"--out-dir {args.out_dir}")
    if args.audit_points is not None and args.audit_points < 1:
        raise UsageError(f"--audit-points must be >= 1, got {args.audit_points}")
    existing = [f for f in bench_files(out) if f.exists()]
    if existing and not args.force:
        raise FileExistsError(f"{existing[0]}: exists (and {len(existing) - 1} more files of an earlier run); "
                              "pass --force to overwrite")
    fmt = args.format or "text"
    timings = run_bench(out, quick=args.quick, progress=progress_enabled(args.quiet), time_limit=args.time_limit,
                        audit_points=args.audit_points, seed=2026 if args.audit_seed is None else args.audit_seed,
                        log=print if fmt == "text" else (lambda _: None))
    if fmt == "json":
        print(json.dumps({"out_dir": str(out), "files": [str(f) for f in bench_files(out)], "seconds": timings},
                         indent=2))
    else:
        print(f"wrote {out}")
    return EXIT_OK


# ---------------------------------------------------------------------------
# datasets
# ---------------------------------------------------------------------------
def _datasets_parser(sub: argparse._SubParsersAction) -> None:
    ap = sub.add_parser(
        "datasets",
        help="data shipped with redactopt (the UCI occupancy data): list them, print a file's path",
        description=(
            "Data sets installed with redactopt, for examples and tests. 'list' names them; 'path NAME' prints "
            "the path of a file (use it as DATA=$(redactopt datasets path occupancy)); 'info NAME' prints its "
            "source, authors and license."
        ),
    )
    ap.add_argument("action", choices=["list", "path", "info"], help="what to print")
    ap.add_argument("name", nargs="?", default=None, help=f"data set ({', '.join(datasets.NAMES)})")
    ap.add_argument("--split", default=None,
                    help="path: which file (occupancy: training, the default, or test)")
    add_format(ap, ["text", "json"])
    ap.set_defaults(func=_cmd_datasets)


def _cmd_datasets(args: argparse.Namespace) -> int:
    fmt = args.format or "text"
    if args.action == "list":
        refuse_given(args, ["name", "split"], "applies to 'path' and 'info' only")
        entries = {name: {split: str(datasets.path(name, split=split)) for split in datasets.SPLITS[name]}
                   for name in datasets.NAMES}
        print(json.dumps(entries, indent=2) if fmt == "json" else "\n".join(
            f"{name:<10} " + "  ".join(f"{s}: {p}" for s, p in files.items()) for name, files in entries.items()))
        return EXIT_OK
    if args.name is None:
        raise UsageError(f"'{args.action}' needs a data set name ({', '.join(datasets.NAMES)})")
    if args.action == "info":
        refuse_given(args, ["split"], "applies to 'path' only")
        text = datasets.attribution(args.name)
        print(json.dumps({"name": args.name, "attribution": text}, indent=2) if fmt == "json" else text.rstrip())
        return EXIT_OK
    path = datasets.path(args.name, split=args.split or "training")
    print(json.dumps({"name": args.name, "split": args.split or "training", "path": str(path)}) if fmt == "json"
          else path)
    return EXIT_OK


# ---------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The top-level parser; each command is a sub-parser."""
    ap = Parser(
        prog="redactopt",
        description=(
            "Design, prove and apply local redaction mechanisms for Markov-correlated binary records. "
            "Positions are 1-based; budgets are in nats. Exit status: 0 success, 1 a privacy check failed, "
            "2 bad usage or input (every output path is checked before any work), 3 an internal error, "
            "130/143/129 stopped by SIGINT/SIGTERM/SIGHUP (within about a second, with every process it "
            "started, nothing partial left). '-' is standard input or output wherever a file is read or written."
        ),
    )
    ap.add_argument("--version", action="version", version=f"redactopt {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for add in (_design_parser, _audit_parser, _compare_parser, add_fit_parser, add_apply_parser,
                _bench_parser, _datasets_parser, add_report_parser):
        add(sub)
    return ap


def _command_parser(ap: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    sub = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (also used as the console script)."""
    ap = build_parser()
    args, extra = ap.parse_known_args(argv)
    if not getattr(args, "func", None):
        ap.print_help(sys.stderr)
        return EXIT_USAGE
    if extra:  # name the command, as its own errors do
        _command_parser(ap, args.command).error(f"unrecognized arguments: {' '.join(extra)}")
    if argv is None:  # the command line's own process: signals stop the command at once (issue 37)
        supervise.start(args.command)  # returns in the command's process (the supervisor exits by itself)
    args._notes = []
    try:
        merge_renamed(args)
        with warnings.catch_warnings():
            # last guard only (the sources are fixed; every verdict is re-checked exactly anyway):
            # a numpy RuntimeWarning is not for a user to see, except with REDACTOPT_DEBUG
            if not os.environ.get("REDACTOPT_DEBUG"):
                warnings.simplefilter("ignore", RuntimeWarning)
            # progress of every long run on a terminal, and the phase times (issue 37, item 3)
            with watched(progress_enabled(getattr(args, "quiet", False)), title=f"redactopt {args.command}") \
                    as (bars, watch):
                args._watch = watch
                status = int(args.func(args))
            if bars.enabled and watch.phases and time.perf_counter() - watch.started >= bars.delay:
                sys.stderr.write(phase_line(args.command, watch) + "\n")
        sys.stdout.flush()  # inside the try: a closed pipe is reported here, not at exit
    except (UsageError, ValueError, TypeError, FileExistsError, FileNotFoundError, IsADirectoryError,
            PermissionError, MissingExtraError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        sys.stderr.write(f"redactopt {args.command}: error: {msg}\n")
        return EXIT_USAGE
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP: one line, exit 128 + the signal
        return supervise.stopped(args.command, getattr(exc, "signum", signal.SIGINT), exit_now=argv is None)
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
    if not getattr(args, "quiet", False):
        for note in args._notes:
            sys.stderr.write(f"redactopt {args.command}: note: {note}\n")
    return status


def _entry() -> NoReturn:  # pragma: no cover - console script wrapper
    raise SystemExit(main())


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
