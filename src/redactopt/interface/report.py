"""Text, CSV and Markdown renderings of design results and comparisons (no mathematics)."""

from __future__ import annotations

import csv
import io
from typing import Any

from redactopt.judge.certify import DesignResult
from redactopt.engine.compare import alternatives
from redactopt.model.influence import regions
from redactopt.paper.mechanisms import default_split

__all__ = ["record_rows", "design_table", "design_csv", "alternatives_for", "rows_csv", "rows_markdown"]


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


def _summary(res: DesignResult) -> list[tuple[str, str]]:
    c = res.certificate
    src = res.info.get("source")
    return [
        ("method", res.method + (f" (best candidate: {src})" if src else "")),
        ("utility", f"{res.utility:.10g}"),
        ("leakage", f"{res.leakage:.15g} (exact, re-verified after rounding; eps = {res.eps:g})"),
        ("upper bound", f"{c.upper_bound:.10g} ({c.solver}; valid for {c.scope} local redaction mechanisms)"),
        ("gap", f"{c.gap:.3g}"),
    ]


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
