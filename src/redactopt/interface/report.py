"""Text, CSV and Markdown renderings of designs, audits and comparisons (no mathematics).

Long lists are summarised in text (private positions as ranges, a long witness output as
runs of equal values); ``--format json`` always carries everything.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from redactopt.judge.certify import DesignResult
from redactopt.engine.compare import alternatives
from redactopt.model.influence import regions
from redactopt.paper.mechanisms import default_split

__all__ = ["record_rows", "design_table", "design_csv", "alternatives_for", "rows_csv", "rows_markdown",
           "compare_text", "positions_text", "witness_text", "audit_text", "stopped_text"]

#: Longest witness shown record by record; longer ones are shown as runs.
WITNESS_RECORDS_SHOWN = 60
#: Most runs (of positions or of witness values) shown before the middle is elided.
RUNS_SHOWN = 12


def record_rows(res: DesignResult) -> list[dict[str, Any]]:
    """Per record: 1-based position, distance to p, 3R region, Pr(⊥|X=0), Pr(⊥|X=1)."""
    p = res.private[0]
    if "eps_left" in res.info and "eps_right" in res.info:
        el, er = res.info["eps_left"], res.info["eps_right"]
    else:
        el, er = default_split(res.n, p, res.eps)
    labels = regions(res.chain, res.n, p, el, er).labels
    return [
        {"position": t + 1, "distance": abs(t - p), "region": str(labels[t]),
         "pr_bottom_x0": float(res.redact_prob[t, 0]), "pr_bottom_x1": float(res.redact_prob[t, 1])}
        for t in range(res.n)
    ]


def alternatives_for(res: DesignResult, *, time_limit: float = 60.0) -> list[dict[str, Any]]:
    return alternatives(res.chain, res.n, eps=res.eps, p=res.private[0], time_limit=time_limit)


def stopped_text(gap: float) -> str:
    """The one line saying that a time limit, not a closed gap, ended the search."""
    return f"stopped by the time limit; remaining gap {gap:.3g} (raise --time-limit to narrow it)"


def _summary(res: DesignResult) -> list[tuple[str, str]]:
    c = res.certificate
    src = res.info.get("source")
    rows = [
        ("method", res.method + (f" ({'best candidate' if res.method == 'optimal' else 'solver'}: {src})"
                                 if src else "")),
        ("utility", f"{res.utility:.10g}"),
        ("leakage", f"{res.leakage:.15g} (exact, re-verified after rounding; eps = {res.eps:g})"),
        ("upper bound", f"{c.upper_bound:.10g} ({c.solver}; valid for {c.scope} local redaction mechanisms"
                        + (" private for the class)" if res.chain_class is not None else ")")),
        ("gap", f"{c.gap:.3g}"),
    ]
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


def design_table(res: DesignResult, alts: list[dict[str, Any]] | None, *, max_rows: int = 200) -> str:
    """The table of ``redactopt design``."""
    ch = res.chain
    out = [f"design: n={res.n}  p={res.private[0] + 1}  alpha={ch.alpha:g}  beta={ch.beta:g}  eps={res.eps:g}", ""]
    out.append(f"{'pos':>6} {'dist':>6}  region  {'Pr(⊥|X=0)':>12} {'Pr(⊥|X=1)':>12}")
    rows = record_rows(res)
    shown = rows if len(rows) <= max_rows else rows[: max_rows // 2] + rows[-max_rows // 2 :]
    for i, r in enumerate(shown):
        if len(rows) > max_rows and i == max_rows // 2:
            out.append(f"{'…':>6} ({len(rows) - max_rows} records not shown; use --format csv or json)")
        out.append(f"{r['position']:>6} {r['distance']:>6}  {r['region']:^6}  "
                   f"{r['pr_bottom_x0']:>12.6g} {r['pr_bottom_x1']:>12.6g}")
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


def design_csv(res: DesignResult) -> str:
    """Per-record CSV, preceded by ``#`` summary lines (read with ``pandas.read_csv(..., comment='#')``)."""
    buf = io.StringIO()
    for k, v in _summary(res):
        buf.write(f"# {k}: {v}\n")
    rows = record_rows(res)
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


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
        runs = [(a, b, "⊥" if v < 0 else str(v)) for a, b, v in runs]
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
