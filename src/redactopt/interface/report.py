"""Text, CSV and Markdown renderings of designs, audits and comparisons (no mathematics).

Long lists are summarised in text (private positions as ranges, a long witness output as
runs of equal values); ``--format json`` always carries everything.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import textwrap
from collections.abc import Iterator
from typing import Any

import numpy as np

from redactopt.judge.audit import as_sparse
from redactopt.judge.certify import DesignResult, SparseDesign, SparseRows
from redactopt.engine.compare import alternatives
from redactopt.model.influence import delta_star, region_letters
from redactopt.paper.mechanisms import default_split

__all__ = ["release_lines", "record_rows", "record_runs", "design_table", "design_csv", "alternatives_for", "rows_csv", "rows_markdown",
           "compare_text", "positions_text", "witness_text", "audit_text", "stopped_text"]

#: Longest witness shown record by record; longer ones are shown as runs.
WITNESS_RECORDS_SHOWN = 60
#: Most runs (of positions or of witness values) shown before the middle is elided.
RUNS_SHOWN = 12


#: Records read at once while a long table is collapsed into runs (bounded memory).
_CHUNK = 1 << 20


def _split_of(res: DesignResult | SparseDesign) -> tuple[float, float]:
    p = res.private[0]
    if "eps_left" in res.info and "eps_right" in res.info:
        return float(res.info["eps_left"]), float(res.info["eps_right"])
    return default_split(res.n, p, res.eps)


def _explicit(res: DesignResult | SparseDesign) -> tuple[int, int]:
    """Records ``a..b-1`` outside of which every record is published and (one private record) in R_S.

    The blocks, the private records and each side's records nearer than Delta* (the first distance in R_S) of its
    3R budget (from there on every record is in R_S: the max-influence does not increase).
    """
    n = res.n
    rows = res.redact_prob if isinstance(res.redact_prob, SparseRows) else None
    if rows is None:
        return 0, n
    a, b = min(res.private), max(res.private) + 1
    if rows.starts:
        a, b = min(a, rows.starts[0]), max(b, rows.starts[-1] + rows.blocks[-1].shape[0])
    if len(res.private) == 1:
        p = res.private[0]
        el, er = _split_of(res)
        a = min(a, p - (p if el <= 0.0 else min(p, delta_star(res.chain, el))))
        b = max(b, p + 1 + (n - 1 - p if er <= 0.0 else min(n - 1 - p, delta_star(res.chain, er))))
    return a, b


def _letters(res: DesignResult | SparseDesign, t: np.ndarray) -> np.ndarray:
    """3R region letters of records ``t`` (one private record), ``-`` with several private records."""
    if len(res.private) != 1:
        return np.full(t.shape, "-", dtype="<U1")
    p, (el, er) = res.private[0], _split_of(res)
    out = np.full(t.shape, "P", dtype="<U1")
    for side, budget in ((t < p, el), (t > p, er)):
        if side.any():
            out[side] = region_letters(res.chain, np.abs(t[side] - p), budget)
    return out


def record_runs(res: DesignResult | SparseDesign) -> Iterator[tuple[int, int, str, float, float]]:
    """Maximal runs ``(first, last, region, Pr(⊥|X=0), Pr(⊥|X=1))`` of equal records (0-based, inclusive).

    Time and memory grow with the stretch around the private records and the blocks, not with
    ``n``: beyond it every record is published and in R_S.
    """
    n = res.n
    a, b = _explicit(res)
    rows = res.redact_prob
    run: list | None = [0, a - 1, "S" if len(res.private) == 1 else "-", 0.0, 0.0] if a > 0 else None
    for c in range(a, b, _CHUNK):
        t = np.arange(c, min(b, c + _CHUNK))
        q = rows.rows(t[0], t[-1] + 1) if isinstance(rows, SparseRows) else np.asarray(rows)[t[0]: t[-1] + 1]
        lab = _letters(res, t)
        change = np.flatnonzero((lab[1:] != lab[:-1]) | np.any(q[1:] != q[:-1], axis=1)) + 1
        for i, j in zip(np.r_[0, change], np.r_[change, t.size]):
            key = [str(lab[i]), float(q[i, 0]), float(q[i, 1])]
            if run is not None and run[2:] == key:
                run[1] = int(t[j - 1])
                continue
            if run is not None:
                yield tuple(run)  # type: ignore[misc]
            run = [int(t[i]), int(t[j - 1])] + key
    tail = ["S" if len(res.private) == 1 else "-", 0.0, 0.0]
    if b < n:
        if run is not None and run[2:] == tail:
            run[1] = n - 1
        else:
            if run is not None:
                yield tuple(run)  # type: ignore[misc]
            run = [b, n - 1] + tail
    if run is not None:
        yield tuple(run)  # type: ignore[misc]


def record_rows(res: DesignResult | SparseDesign) -> Iterator[dict[str, Any]]:
    """Per record: 1-based position, distance to p (the nearest private record), 3R region,
    Pr(⊥|X=0), Pr(⊥|X=1) — from the runs, so a long sequence is never held in memory."""
    priv = np.asarray(res.private)
    for first, last, region, q0, q1 in record_runs(res):
        for t in range(first, last + 1):
            yield {"position": t + 1, "distance": int(np.min(np.abs(priv - t))), "region": region,
                   "pr_bottom_x0": q0, "pr_bottom_x1": q1}


def alternatives_for(res: DesignResult | SparseDesign, *, time_limit: float = 60.0) -> list[dict[str, Any]]:
    """The comparison lines for one private record (for a class: the class, at its nominal chain)."""
    return alternatives(res.chain_class or res.chain, res.n, eps=res.eps, p=res.private[0], time_limit=time_limit)


def stopped_text(gap: float) -> str:
    """The one line saying that a time limit, not a closed gap, ended the search."""
    return f"stopped by the time limit; remaining gap {gap:.3g} (raise --time-limit to narrow it)"


def run_text(run: dict[str, Any]) -> str:
    """One run of private records (``info["runs"]``): what its window design publishes, its certified bound there
    and which problem gave the bound, and where the refinement stopped (1-based rows)."""
    (a, b), (lo, hi) = run["private"], run["window"]
    gap = run["upper_bound"] - run["published"]
    relaxed = f", from {run['relaxation']} alone" if run.get("relaxation") else ""
    text = (f"{a}-{b}: rows {lo}-{hi} publish {run['published']:.6g}, bound {run['upper_bound']:.6g} "
            f"(gap {gap:.3g} records; {run['solver']}{relaxed})")
    target = run.get("target_gap")
    if target is not None and math.isfinite(target) and run.get("status") == "optimal":
        text += f"; refined until the gap met the target {run['target_gap'] * (hi - lo + 1):.3g} records"
    elif run.get("status") == "time_limit":
        text += "; refinement stopped by the time limit"
    return text


def method_text(res: DesignResult | SparseDesign) -> str:
    """The method of a design and the solver whose proposal won (``optimal``: the best candidate)."""
    src = res.info.get("source")
    return res.method + (f" ({'best candidate' if res.method == 'optimal' else 'solver'}: {src})" if src else "")


def _summary(res: DesignResult | SparseDesign) -> list[tuple[str, str]]:
    c = res.certificate
    rows = [
        ("method", method_text(res)),
        ("utility", f"{res.utility:.10g}"),
        ("leakage", f"{res.leakage:.15g} (exact, re-verified after rounding; eps = {res.eps:g})"),
        ("upper bound", f"{c.upper_bound:.10g} ({c.solver}; valid for {c.scope} local redaction mechanisms"
                        + (" private for the class)" if res.chain_class is not None else ")")),
        ("gap", f"{c.gap:.3g}"),
    ]
    per = getattr(res, "per_private", None)
    if per is not None and len(res.private) > 1:  # several private records: the exact leakage about each
        rows.insert(3, ("each", _elide([f"{p + 1}: {v:.10g}" for p, v in zip(res.private, per)], "  ")))
    if res.info.get("bound_relaxation"):
        rows.insert(rows.index(("gap", f"{c.gap:.3g}")), ("bound from", f"{res.info['bound_relaxation']} alone (a "
                                                          "problem with fewer private records: a relaxation)"))
    for run in res.info.get("runs", []):  # each run of private records: its design, bound and relaxation
        rows.append(("run", run_text(run)))
    if c.stopped:
        rows.append(("search", stopped_text(c.gap)))
    if res.chain_class is not None:
        ch = res.chain
        rows.insert(1, ("class", f"{res.chain_class.describe()}: private for every chain; utility, bound and the "
                                 f"table at the nominal chain alpha={ch.alpha:g} beta={ch.beta:g}"))
        for pt in res.info.get("point_optima", []):
            rows.append(("deciding", f"alpha={pt['alpha']:g} beta={pt['beta']:g}: point optimum {pt['utility']:.10g}, "
                                     f"bound {pt['upper_bound']:.10g} (both at that chain)"))
    return rows


def _distance_range(private: np.ndarray, first: int, last: int) -> tuple[int, int]:
    """Smallest and largest distance to the nearest private record over records ``first..last``: it is
    0 at a private record, rises to the midpoints between two of them and falls again."""
    inside = private[(private >= first) & (private <= last)]
    mids = (private[:-1] + private[1:]) // 2
    points = np.r_[first, last, inside, mids[(mids >= first) & (mids <= last)], mids[(mids + 1 >= first) & (mids + 1 <= last)] + 1]
    d = np.abs(points[:, None] - private[None, :]).min(axis=1)
    return (0 if inside.size else int(d[:2].min())), int(d.max())


def _run_line(res: DesignResult | SparseDesign, first: int, last: int, region: str, q0: float, q1: float) -> str:
    lo, hi = _distance_range(np.asarray(res.private), first, last)
    pos = f"{first + 1}" if first == last else f"{first + 1}-{last + 1}"
    dist = f"{lo}" if lo == hi else f"{lo}-{hi}"
    return f"{pos:>21} {dist:>19}  {region:^6}  {q0:>12.6g} {q1:>12.6g}"


def _header(res: DesignResult | SparseDesign) -> str:
    ch, cc = res.chain, res.chain_class
    where = f"p={res.private[0] + 1}" if len(res.private) == 1 else f"private={positions_text([p + 1 for p in res.private])}"
    chain = (f"alpha={cc.alpha[0]:g}:{cc.alpha[1]:g}  beta={cc.beta[0]:g}:{cc.beta[1]:g}" if cc is not None and cc.alpha
             else f"alpha={ch.alpha:g}  beta={ch.beta:g}")
    return f"design: n={res.n}  {where}  {chain}  eps={res.eps:g}"


def design_table(res: DesignResult | SparseDesign, alts: list[dict[str, Any]] | None, *, max_rows: int = 200) -> str:
    """The table of ``redactopt design``: record by record up to :data:`WITNESS_RECORDS_SHOWN` records,
    else runs of equal records (``first-last``), the middle elided beyond ``max_rows`` runs."""
    out = [_header(res), ""]
    if res.n <= WITNESS_RECORDS_SHOWN:
        out.append(f"{'pos':>6} {'dist':>6}  region  {'Pr(⊥|X=0)':>12} {'Pr(⊥|X=1)':>12}")
        out += [f"{r['position']:>6} {r['distance']:>6}  {r['region']:^6}  "
                f"{r['pr_bottom_x0']:>12.6g} {r['pr_bottom_x1']:>12.6g}" for r in record_rows(res)]
    else:
        out.append(f"{'pos':>21} {'dist':>19}  region  {'Pr(⊥|X=0)':>12} {'Pr(⊥|X=1)':>12}")
        runs = list(itertools.islice(record_runs(res), max_rows + 1))
        if len(runs) > max_rows:
            runs = list(record_runs(res))
            hidden = len(runs) - max_rows
            runs = runs[: max_rows // 2] + [None] + runs[-max_rows // 2:]  # type: ignore[list-item]
        for r in runs:
            out.append(f"{'…':>21} ({hidden} runs not shown; use --format csv or json)" if r is None
                       else _run_line(res, *r))
    out.append("")
    out += [f"{k:<12}: {v}" for k, v in _summary(res)]
    if alts:
        out += ["", "comparison (exact utility and leakage):"]
        width = max(len(a["name"]) for a in alts)
        for a in alts:
            leak = "—" if a["leakage"] is None else f"{a['leakage']:.6g}"
            mark = "ok" if a["passed"] else "VIOLATION"
            note = f"  ({a['note']})" if a.get("note") and not a["passed"] else ""
            out.append(f"  {a['name']:<{width}}  utility {a['utility']:<10.6g} leakage {leak:>10}  {mark}{note}")
    return "\n".join(out)


def design_csv(res: DesignResult | SparseDesign) -> Iterator[str]:
    """Per-record CSV in pieces, preceded by ``#`` summary lines (``pandas.read_csv(..., comment='#')``).

    Streamed from the runs (:func:`record_runs`): memory stays bounded whatever ``n``.
    """
    head = io.StringIO()
    for k, v in _summary(res):
        head.write(f"# {k}: {v}\n")
    head.write("position,distance,region,pr_bottom_x0,pr_bottom_x1\n")
    yield head.getvalue()
    priv = np.asarray(res.private)
    for first, last, region, q0, q1 in record_runs(res):
        tail = f",{region},{q0!r},{q1!r}\n"
        for c in range(first, last + 1, _CHUNK):
            t = np.arange(c, min(last + 1, c + _CHUNK))
            d = np.abs(t[:, None] - priv[None, :]).min(axis=1) if priv.size > 1 else np.abs(t - priv[0])
            yield "".join(f"{a},{b}{tail}" for a, b in zip((t + 1).tolist(), d.tolist()))


def rows_csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def _cell(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return "nan" if v != v else f"{v:.4g}"
    return str(v)


def rows_markdown(rows: list[dict[str, Any]], keys: list[str] | None = None) -> str:
    keys = keys or list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(_cell(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(lines) + "\n"


#: ``compare --format text``: (column of :data:`~redactopt.engine.compare.COMPARE_COLUMNS`, heading).
COMPARE_TEXT_COLUMNS = [
    ("n", "n"), ("p", "p"), ("alpha", "alpha"), ("beta", "beta"), ("eps", "eps"), ("optimal", "optimal"),
    ("optimal_upper_bound", "bound"), ("optimal_gap", "gap"), ("calibrated_3r", "cal. 3R"), ("three_region", "3R"),
    ("three_region_leakage", "3R leak"), ("mq", "MQ"), ("dim_optimal", "DIM"), ("thm2_bound", "Thm 2"),
]


def compare_text(rows: list[dict[str, Any]]) -> str:
    """``redactopt compare --format text``: a Markdown table that fits a terminal (about 90 columns).

    The main columns only (every column: ``--format csv`` or ``json``); ``alpha`` and ``beta``
    move to a heading line when every row has the same chain; ``*`` marks 3R's exact leakage
    above eps and a Theorem-2 bound the exact DIM optimum beats.
    """
    same = [k for k in ("alpha", "beta") if len({str(r[k]) for r in rows}) == 1]
    keys = [(k, h) for k, h in COMPARE_TEXT_COLUMNS if k not in same]
    head = ["compare: " + "".join(f"{k}={_cell(rows[0][k])}  " for k in same) +
            "(utilities; * = leaks more than eps, or a bound the DIM optimum beats)"]

    def cell(r: dict[str, Any], k: str) -> str:
        text = f"{r[k]:.2g}" if k == "optimal_gap" else _cell(r[k])
        flagged = (k == "three_region_leakage" and r["three_region_violates"]) or (k == "thm2_bound" and r["thm2_violated"])
        return text + " *" if flagged else text

    lines = ["| " + " | ".join(h for _, h in keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(cell(r, k) for k, _ in keys) + " |" for r in rows]
    return "\n".join(head + lines) + "\n"


def states_compare_text(rows: list[dict[str, Any]], chain: Any) -> str:
    """``redactopt compare --transition`` on more than two states: one Markdown row per point."""
    head = (f"compare: k={chain.k}  states={','.join(str(s) for s in chain.labels)}  P = "
            + "; ".join(",".join(f"{v:.4g}" for v in r) for r in chain.transition)
            + "\n(utilities, every design verified exactly; 3R, MQ and Theorem 2 have no k-state form)")
    keys = [("n", "n"), ("p", "p"), ("eps", "eps"), ("optimal", "optimal"), ("optimal_upper_bound", "bound"),
            ("optimal_gap", "gap"), ("optimal_source", "source"), ("dim", "DIM optimum"), ("local", "local LP")]

    def cell(r: dict[str, Any], k: str) -> str:
        return f"{r[k]:.2g}" if k == "optimal_gap" else _cell(r[k])

    lines = ["| " + " | ".join(h for _, h in keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(cell(r, k) for k, _ in keys) + " |" for r in rows]
    stopped = [f"row {i} (n={r['n']}, p={r['p']}, eps={r['eps']:g}): {stopped_text(r['optimal_gap'])}"
               for i, r in enumerate(rows, 1) if r["optimal_stopped"]]
    return "\n".join([head] + lines + stopped) + "\n"


# ---------------------------------------------------------------------------
# audits
# ---------------------------------------------------------------------------
def _runs(values: list[Any]) -> list[tuple[int, int, Any]]:
    """Maximal runs ``(first, last, value)`` of equal consecutive values (0-based, inclusive)."""
    runs: list[tuple[int, int, Any]] = []
    for i, v in enumerate(values):
        if runs and runs[-1][2] == v and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i, v)
        else:
            runs.append((i, i, v))
    return runs


def _elide(parts: list[str], sep: str) -> str:
    if len(parts) <= RUNS_SHOWN:
        return sep.join(parts)
    half = RUNS_SHOWN // 2
    return sep.join(parts[:half] + [f"… {len(parts) - 2 * half} more …"] + parts[-half:])


def positions_text(positions: list[int]) -> str:
    """1-based positions for text output: ``[1, 5]``, or as ranges when long.

    ``[1120, 1121, ..., 1179]`` -> ``1120-1179 (60 positions)``.
    """
    if len(positions) <= 4:
        return "[" + ", ".join(map(str, positions)) + "]"
    pos = sorted(positions)
    runs: list[list[int]] = []
    for v in pos:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    parts = [f"{a}-{b}" if b > a else f"{a}" for a, b in runs]
    return f"{_elide(parts, ',')} ({len(pos)} positions)"


def witness_text(witness: Any) -> str:
    """A witness output for text: record by record when short, else runs ``first-last: value``.

    ``witness`` is a list of 0, 1 and ``None`` (⊥), or a
    :class:`redactopt.judge.audit.WitnessRuns` (its runs are used as they are).
    """
    if len(witness) <= WITNESS_RECORDS_SHOWN:
        return " ".join("⊥" if v is None else str(v) for v in witness)
    runs = getattr(witness, "runs", None)
    if runs is None:
        runs = _runs(["⊥" if v is None else str(v) for v in witness])
    else:
        runs = [(a, b, "⊥" if v < 0 else str(witness.shown(v))) for a, b, v in runs]
    parts = [f"{a + 1}-{b + 1}: {v}" if b > a else f"{a + 1}: {v}" for a, b, v in runs]
    return f"{_elide(parts, '  ')}  ({len(witness)} records; --format json lists each)"


def audit_text(report: dict[str, Any]) -> str:
    """Human-readable form of an audit (:func:`redactopt.judge.audit.audit`'s report)."""
    ratio_dir = f"Pr(y | X_p={report['favoured']}) / Pr(y | X_p={1 - report['favoured']})"
    lines = []
    if report.get("sequence") is not None:
        lines.append(f"sequence  : {report['sequence']}")
    lines.append(f"mechanism : {report['method']}  n={report['n']}  private={positions_text(report['private'])}  "
                 f"alpha={report['chain']['alpha']:g}  beta={report['chain']['beta']:g}")
    if "info" in report and "regions" in report["info"]:
        lines.append(f"regions   : {report['info']['regions']}  (P private, S small, M medium, L large)")
    cc = report.get("chain_class")
    if cc is not None:
        box = (f"alpha {cc['alpha'][0]:g}:{cc['alpha'][1]:g}  beta {cc['beta'][0]:g}:{cc['beta'][1]:g}"
               if "alpha" in cc else f"{len(cc['chains'])} chains")
        wc = report["worst_chain"]
        lines.append(f"class     : {box}  (every chain; worst at alpha={wc['alpha']:g} beta={wc['beta']:g}, "
                     f"utility at the nominal chain)")
    lines += [
        f"eps       : {report['eps']:.6g}",
        f"leakage   : {report['leakage']:.10g}  (exact, nats; worst private record {report['witness_private']}"
        f"{', worst over the class' if cc is not None else ''})",
        f"witness   : {witness_text(report['witness'])}",
        f"            attains log {ratio_dir}",
        f"utility   : {report['utility']:.10g}",
    ]
    if "exact" in report:
        ex = report["exact"]
        lines.append(f"exact     : {ex['status']} (rational arithmetic on the doubles; "
                     f"L = {ex['leakage']:.10g})")
    if "attack" in report:
        at = report["attack"]
        lines.append(f"attack    : leakage >= {at['lower_bound']:.6g} with confidence {at['confidence']:g} "
                     f"(private record {at['private']}; {at['samples']} chains per value of X_p; largest observed "
                     f"|log ratio| {at['max_observed']:.6g})" + ("  -> violation shown" if at["violation_shown"] else ""))
    if report["passed"]:
        verdict = "PASS"
    elif report["leakage"] > report["eps"]:
        verdict = "FAIL: leakage exceeds eps"
    else:
        verdict = "FAIL: not certified exactly"
    lines.append(f"result    : {verdict}")
    return "\n".join(lines)


def states_table(res: Any, dim: Any | None) -> str:
    """A design on a chain given as a matrix: one column per state label, then utility, leakage, bound and
    the exact window optimum for comparison (the paper's 3R and MQ have no k-state form)."""
    labels = [str(s) for s in res.chain.labels]
    priv = np.asarray(res.private)
    p = int(priv[0])
    where = f"p={p + 1}" if priv.size == 1 else f"private={positions_text([int(v) + 1 for v in priv])}"
    head = f"design: n={res.n}  {where}  k={res.chain.k}  states={','.join(labels)}  eps={res.eps:g}"
    w = max(10, max(len(s) for s in labels) + 6)
    pw = max(6, len(str(res.n)))
    lines = [head, "", "pos".rjust(pw) + "   dist" + "".join(f"Pr(⊥|{s})".rjust(w + 1) for s in labels)]
    rows = as_sparse(res.redact_prob, k=res.chain.k)  # never n rows: the blocks and one row either side
    first = max(0, min(rows.starts[0] if rows.starts else p, p) - 1)
    last = min(res.n - 1, max(rows.starts[-1] + rows.blocks[-1].shape[0] - 1 if rows.starts else p,
                              int(priv[-1])) + 1)
    if first > 0:
        lines.append("   ...  (every earlier record is published)")
    for t, row in zip(range(first, last + 1), rows.rows(first, last + 1)):
        dist = int(np.abs(priv - t).min())
        lines.append(f"{t + 1:{pw}d} {dist:6d}" + "".join(f"{v:.6g}".rjust(w + 1) for v in row))
    if last < res.n - 1:
        lines.append("   ...  (every later record is published)")
    c = res.certificate
    wit = witness_text(res.witness.witness_output())
    a, b = res.witness.pair_labels
    lines += [
        f"method      : {method_text(res)}",
        f"utility     : {res.utility:.10g}",
        f"leakage     : {res.leakage:.15g} (exact, re-verified after rounding; eps = {res.eps:g})",
        f"witness     : {wit}",
        f"              attains log Pr(y | X_p={a}) / Pr(y | X_p={b})",
        f"upper bound : {c.upper_bound:.10g} ({c.solver}; valid for all local redaction mechanisms)",
        f"gap         : {c.gap:.3g}",
    ]
    if c.stopped:
        lines.append("search      : stopped by the time limit; remaining gap above")
    elif c.gap > 1e-6 and c.solver == "lemma2" and priv.size == 1 and "global" not in res.info.get("candidates", {}):
        lines.append("search      : Lemma 2's bound only (SCIP did not run at this size); --certify-time SECONDS "
                     "runs it for a tighter bound")
    if dim is not None:
        lines += ["", "comparison (exact utility and leakage):",
                  (f"  DIM optimum (exact window)   utility {dim.utility:<10.6g} leakage {dim.leakage:10.6g}  ok"
                   if priv.size == 1 else
                   f"  DIM per record, max          utility {dim.utility:<10.6g} leakage {dim.leakage:10.6g}  ok"),
                  "  3R and MQ                    " + (
                      f"compared with --alpha {res.chain.alpha:.17g} --beta {res.chain.beta:.17g} (the same chain)"
                      if res.chain.binary else "no k-state form (the paper's regions and quilt are binary)")]
    return "\n".join(lines)


def states_csv(res: Any) -> str:
    """The design as CSV (labels quoted where they hold commas, quotes or line breaks)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["pos", "dist"] + [f"redact_prob_{s}" for s in res.chain.labels])
    p = res.private[0]
    for t, r in enumerate(np.asarray(res.redact_prob)):
        w.writerow([t + 1, abs(t - p)] + [repr(float(v)) for v in r])
    return buf.getvalue().rstrip("\n")


def varying_table(res: Any) -> str:
    """A design on a chain that varies with the step: each redactable row with its level, then utility, exact
    leakage (worst over the private records, on their segments), the certified bound and the gap."""
    chain = res.chain
    labels = [str(s) for s in chain.labels]
    priv = [int(p) for p in res.private]
    head = (f"design: n={res.n}  private={positions_text([p + 1 for p in priv])}  k={chain.k}  "
            f"levels={len(set(chain.row_level.tolist()))}  eps={res.eps:g}  (a chain that varies with the step)")
    w = max(10, max(len(s) for s in labels) + 6)
    lines = [head, "", "pos".rjust(7) + "  level" + "".join(f"Pr(⊥|{s})".rjust(w + 1) for s in labels)]
    rows = as_sparse(res.redact_prob, k=chain.k)
    for s, blk in zip(rows.starts, rows.blocks):
        lines.append("   ...")
        for t, row in zip(range(s, s + blk.shape[0]), blk):
            lines.append(f"{t + 1:7d}  {chain.level_of(t):>5}" + "".join(f"{v:.6g}".rjust(w + 1) for v in row))
    lines.append("   ...  (every other record is published)")
    c = res.certificate
    lines += [
        f"method      : {res.method} ({res.info.get('source', res.method)})",
        f"utility     : {res.utility:.10g}",
        f"leakage     : {res.leakage:.15g} (exact under the varying chain, re-verified after rounding; eps = {res.eps:g})",
        f"upper bound : {c.upper_bound:.10g} ({c.solver}: Lemma 2 per step; valid for all local redaction mechanisms)",
        f"gap         : {c.gap:.3g}",
    ]
    return "\n".join(lines) + "\n"


def release_lines(columns: dict[str, Any], fit_rows: dict[str, Any] | None, summary: str, *,
                  reveals: dict[str, Any] | None = None, cover: dict[str, Any] | None = None) -> list[str]:
    """The summary lines every release prints: what is covered, what is written but not covered (with its
    figure), what is left out, what the pattern of redactions shows (``reveals``, ``cover``), which rows the
    chain was fitted on, and the plain-language paragraph."""
    from redactopt.release.report import fit_rows_text

    lines = [f"covered   : {', '.join(columns['protected'])} (the private rows' values: the guarantee)"]
    if reveals is not None and not reveals.get("positions_protected"):
        lines.append("positions : NOT covered: the pattern of redactions shows which sequences hold private records "
                     "and where (--cover K hides them among decoys)")
    if cover is not None:
        copies = ", ".join(f"{c['per_sequence']} of length {c['length']} (real with probability <= "
                           f"{c['bound']:.3g})" for c in cover["copies"])
        cost = cover.get("expected_redacted") or {}
        lines.append(f"cover     : {cover['k']} decoy(s) per private run; every sequence holds {copies}")
        if cost:
            lines.append(f"cover cost: {cost['without']:.6g} expected redacted rows without the cover, "
                         f"{cost['with']:.6g} with it")
    for f in columns["not_covered"]:
        what = ("no published rows to measure" if f.get("accuracy") is None else
                f"accuracy {100 * f['accuracy']:.1f}% (majority rate {100 * f['majority']:.1f}%) of the rule "
                f"'{f['rule']}'" + (f", {f['categories']} categories" if f.get("kind") == "categories" else ""))
        lines.append(f"NOT covered: {f['column']} ({f['role']}): {what}")
    if columns.get("dropped"):
        shown = ", ".join(columns["dropped"][:6]) + (" ..." if len(columns["dropped"]) > 6 else "")
        lines.append(f"not written: {shown}  (--keep COL or --keep-all writes them, not covered)")
    where = fit_rows_text(fit_rows or {})
    if where:
        lines.append(f"fit rows  : {where}")
    lines += textwrap.wrap(summary, width=100, initial_indent="in short  : ", subsequent_indent="            ")
    return lines
