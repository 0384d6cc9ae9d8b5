"""``redactopt bench``: regenerate the paper's figures and tables, the gap table and the audit.

Everything is written into one folder; grids are fixed and the random audit is seeded,
so two runs give the same files (up to solver timings).  ``quick=True`` shrinks the
grids so the whole run takes a few minutes on two cores.
"""

from __future__ import annotations

import datetime as _dt
import math
import platform
import time
from collections.abc import Callable, Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from redactopt._optional import require
from redactopt.engine.compare import compare_point
from redactopt.engine.tuning import frontier_split
from redactopt.engine.design import design
from redactopt.interface.progress import iterate
from redactopt.interface.report import rows_csv, rows_markdown
from redactopt.judge.leakage import leakage, utility
from redactopt.judge.tolerances import LEAKAGE_RTOL
from redactopt.model.chain import MarkovChain
from redactopt.model.influence import max_influence, pointwise_influence, regions
from redactopt.paper.mechanisms import markov_quilt, theorem2_bound, three_region

__all__ = ["run_bench", "bench_files", "FIG3_EPS", "GAP_CHAINS"]

#: Every file a run writes into its folder (nothing else is written, nothing outside it).
BENCH_FILES = ("table1.md", "example1.md", "fig2.png", "fig3.csv", "fig3.png", "fig4.png", "gap_table.csv",
               "gap_table.md", "paper_audit_points.csv", "paper_audit.csv", "paper_audit.md", "timings.md")

FIG3_CHAIN = (0.01, 0.8)
FIG3_EPS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)
FIG3_EPS_QUICK = (0.25, 0.5, 1.0, 2.0, 4.0)
#: weak to strong correlation, alpha > beta and alpha + beta > 1 included
GAP_CHAINS = ((0.3, 0.4), (0.1, 0.3), (0.01, 0.8), (0.05, 0.05), (0.4, 0.05), (0.7, 0.9))
GAP_EPS = (0.1, 0.5, 1.0, 2.0, 5.0)


def _pyplot() -> Any:
    """matplotlib's pyplot on the non-interactive Agg back-end (files only, no screen)."""
    matplotlib = require("matplotlib", purpose="redactopt bench's figures")
    matplotlib.use("Agg")
    return require("matplotlib.pyplot", purpose="redactopt bench's figures")


def _progress(items: list, desc: str, enabled: bool) -> Iterable:
    return iterate(items, desc, enabled, total=len(items))


def bench_files(out: Path) -> list[Path]:
    """The files a run writes into ``out``."""
    return [out / name for name in BENCH_FILES]


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text(rows_csv(rows))


def _md_table(rows: list[dict[str, Any]], keys: list[str] | None = None) -> str:
    return rows_markdown(rows, keys)


# ---------------------------------------------------------------------------
# the paper's figures and tables
# ---------------------------------------------------------------------------
#: Resolution of the saved figures (dots per inch); with fonts of at least 10 pt, text is at least 16 pixels tall.
FIG_DPI = 120


def fig2(out: Path) -> None:
    """Write ``fig2.png`` (:func:`fig2_figure`)."""
    fig2_figure().savefig(out / "fig2.png", dpi=FIG_DPI)


def fig2_figure() -> Any:
    """Pointwise influence vs distance with the three regions (Fig. 2: alpha=0.25, beta=0.5).

    The legend names only the regions drawn: at eps' = 0.5 this chain has no R_L (the smaller
    influence is at most eps' at every distance), which the legend's title says.
    """
    from matplotlib.patches import Patch

    from redactopt.interface.plots import FONT, REGION_COLORS, SMALL, new_figure

    _pyplot()  # matplotlib is there (a clear message if not)
    a, b, eps = 0.25, 0.5, 0.5
    ch = MarkovChain(a, b)
    d = np.arange(1, 13)
    i0, i1 = pointwise_influence(ch, d, 0), pointwise_influence(ch, d, 1)
    fig = new_figure(7.6, 5.0)
    ax = fig.add_subplot()
    ax.plot(d, i1, "o-", color="#1f4e9c", lw=2, label=r"$i(X_p \rightsquigarrow X_t=1)$ = max-influence")
    ax.plot(d, i0, "s--", color="#c0392b", lw=1.8, label=r"$i(X_p \rightsquigarrow X_t=0)$")
    ax.axhline(eps, color="k", ls=":", lw=1.2, label=rf"$\epsilon'={eps}$")
    reg = regions(ch, 13, 0, 0.0, eps).labels[1:]
    for t, lab in zip(d, reg):
        ax.axvspan(t - 0.5, t + 0.5, color=REGION_COLORS[lab], lw=0, zorder=0)
    handles, labels = ax.get_legend_handles_labels()
    names = {"L": "$R_L$ (always redact)", "M": "$R_M$ (release 0 sometimes)", "S": "$R_S$ (release)"}
    for lab in ("L", "M", "S"):
        if lab in set(reg):
            handles.append(Patch(color=REGION_COLORS[lab]))
            labels.append(names[lab])
    empty = [names[lab].split(" ")[0] for lab in ("L", "M", "S") if lab not in set(reg)]
    ax.set_xlabel(r"distance $\Delta = |t-p|$", fontsize=FONT)
    ax.set_ylabel("influence (nats)", fontsize=FONT)
    ax.set_yscale("log")
    ax.tick_params(labelsize=SMALL)
    ax.set_title(rf"Pointwise influence and regions ($\alpha={a}$, $\beta={b}$, $\epsilon'={eps}$)", fontsize=FONT + 1)
    fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=SMALL, frameon=False,
               title=(" and ".join(empty) + " empty here: the smaller influence is at most $\\epsilon'$ at every "
                      "distance") if empty else None, title_fontsize=SMALL)
    return fig


def fig3(out: Path, eps_grid: Iterable[float], time_limit: float, progress: bool) -> list[dict[str, Any]]:
    """Utility vs eps in the Fig. 3 setting (n=10, p=1, alpha=0.01, beta=0.8): CSV and PNG.

    Drawn by :func:`redactopt.interface.plots.compare_figure`, the figure of ``compare --plot``:
    Theorem 2's bound as rings over its own dotted line, on top, so it stays visible where it
    equals the DIM optimum; 3R ringed in red where its exact leakage exceeds eps.
    """
    _pyplot()
    ch = MarkovChain(*FIG3_CHAIN)
    rows = []
    for eps in _progress(list(eps_grid), "fig3", progress):
        r = compare_point(ch, 10, eps=eps, p=0, time_limit=time_limit)
        rows.append({"eps": eps, "optimal": r["optimal"], "optimal_upper_bound": r["optimal_upper_bound"],
                     "calibrated_3r": r["calibrated_3r"], "three_region": r["three_region"],
                     "three_region_leakage": r["three_region_leakage"], "mq": r["mq"],
                     "dim_optimal": r["dim_optimal"], "thm2_bound": r["thm2_bound"]})
    _write_csv(out / "fig3.csv", rows)
    fig3_figure(rows).savefig(out / "fig3.png", dpi=FIG_DPI)
    return rows


def fig3_figure(rows: list[dict[str, Any]]) -> Any:
    """The figure of :func:`fig3`'s rows (:func:`redactopt.interface.plots.compare_figure`)."""
    from redactopt.interface.plots import compare_figure

    table = [dict(r, n=10, p=1, alpha=FIG3_CHAIN[0], beta=FIG3_CHAIN[1]) for r in rows]
    fig = compare_figure(table)
    fig.axes[0].set_title(r"Utility vs $\epsilon$ ($n=10$, $p=1$, $\alpha=0.01$, $\beta=0.8$)", fontsize=12)
    return fig


def fig4(out: Path, time_limit: float) -> None:
    """Write ``fig4.png`` (:func:`fig4_figure`)."""
    fig4_figure(time_limit).savefig(out / "fig4.png", dpi=FIG_DPI)


def fig4_figure(time_limit: float = 60.0) -> Any:
    """Redaction probabilities of 3R and of the optimum (Fig. 4: p=1, eps=1, alpha/beta=10)."""
    from redactopt.interface.plots import FONT, SMALL, new_figure

    _pyplot()
    a, b, n, eps = 0.5, 0.05, 12, 1.0
    ch = MarkovChain(a, b)
    tr = three_region(ch, n, eps=eps, p=0)
    opt = design(ch, n, eps=eps, p=0, method="optimal", time_limit=time_limit)
    t = np.arange(1, n + 1)
    fig = new_figure(10.0, 4.4)
    axes = fig.subplots(1, 2, sharey=True)
    for ax, x in zip(axes, (0, 1)):
        ax.step(t, tr.redact_prob[:, x], where="mid", color="#27ae60", lw=2.6,
                label=f"3R as printed (leakage {tr.leakage().leakage:.3g})")
        ax.step(t, opt.redact_prob[:, x], where="mid", ls="--", color="#1f4e9c", lw=2,
                label=f"optimal (leakage {opt.leakage:.3g})")
        ax.set_xlabel("record t (p = 1)", fontsize=FONT)
        ax.set_xticks(t)
        ax.set_title(rf"$\Pr(Y_t=\perp \mid X_t={x})$", fontsize=FONT)
        ax.tick_params(labelsize=SMALL)
    axes[0].set_ylabel("redaction probability", fontsize=FONT)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=SMALL, frameon=False)
    fig.suptitle(rf"Redaction probabilities ($n={n}$, $\epsilon={eps}$, $\alpha={a}$, $\beta={b}$, "
                 rf"$\alpha/\beta=10$)", fontsize=FONT + 1)
    return fig


def table1(out: Path) -> None:
    """Table I (likelihood ratios for alpha=1/4, beta=1/2) in exact fractions."""
    a, b = Fraction(1, 4), Fraction(1, 2)
    P = [[1 - a, a], [b, 1 - b]]
    lines = ["# Table I — likelihood ratios Pr(X2=x2|X1=x)/Pr(X2=x2|X1=x̄), alpha=1/4, beta=1/2", "",
             "| | x2=0 | x2=1 |", "|---|---|---|"]
    for x in (0, 1):
        lines.append(f"| x={x} | {P[x][0] / P[1 - x][0]} | {P[x][1] / P[1 - x][1]} |")
    ch = MarkovChain(0.25, 0.5)
    lines += ["", f"i(X1 ~> X2=0) = log(3/2) = {pointwise_influence(ch, 1, 0):.6f}; "
              f"i(X1 ~> X2=1) = I(X1 ~> X2) = log 2 = {max_influence(ch, 1):.6f} (matches the paper)."]
    (out / "table1.md").write_text("\n".join(lines) + "\n")


def example1(out: Path) -> None:
    """Example 1 with its erratum explained."""
    ch = MarkovChain(0.25, 0.5)
    e = math.exp(0.5)
    p2_opt = (0.5 - 0.25 * e) / (0.75 * e - 0.5)
    q = np.array([[1.0, 1.0], [0.12, 1.0]])
    q_opt = np.array([[1.0, 1.0], [p2_opt, 1.0]])
    lines = [
        "# Example 1 — n=2, alpha=0.25, beta=0.5, p=1, eps=0.5", "",
        "| p2 = Pr(Y2=⊥ | X2=0) | exact leakage | exact utility | paper's utility |", "|---|---|---|---|",
        f"| 0.12 (paper) | {leakage(ch, q, 0).leakage:.6f} | {utility(ch, q):.6f} | 0.15 |",
        f"| {p2_opt:.6f} (smallest private value) | {leakage(ch, q_opt, 0).leakage:.6f} | {utility(ch, q_opt):.6f} | — |",
        "",
        "Erratum: the paper computes nu = (1-p2) alpha / (2(alpha+beta)) = 0.1467, i.e. it uses "
        "Pr(X=0) = alpha/(alpha+beta). Its own stationary law gives Pr(X=0) = beta/(alpha+beta) = 2/3, "
        "so p2 = 0.12 yields nu = (1-p2)(2/3)/2 = 0.2933. The smallest private p2 solves "
        "(0.5 p2 + 0.5)/(0.25 + 0.75 p2) = e^0.5, i.e. p2 = 0.1192, utility 0.2936 — the optimum "
        "over all local redaction mechanisms here (X2=1 must always be redacted by Lemma 2, "
        "i(X1 ~> X2=1) = log 2 > 0.5).",
    ]
    (out / "example1.md").write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------------------
# gap table
# ---------------------------------------------------------------------------
def gap_table(out: Path, *, quick: bool, time_limit: float, progress: bool) -> list[dict[str, Any]]:
    ns = (5, 10) if quick else (5, 10, 20, 50)
    chains = GAP_CHAINS[:4] if quick else GAP_CHAINS
    eps_grid = (0.1, 1.0, 5.0) if quick else GAP_EPS
    points = [(n, p, c, e) for n in ns for p in ("start", "middle") for c in chains for e in eps_grid]
    rows = []
    for n, pos, (a, b), eps in _progress(points, "gap table", progress):
        p = 0 if pos == "start" else (n - 1) // 2
        t0 = time.perf_counter()
        r = compare_point(MarkovChain(a, b), n, eps=eps, p=p, time_limit=time_limit)
        diagonal = frontier_split(MarkovChain(a, b), n, eps=eps, p=p, time_limit=time_limit).diagonal
        ub = r["optimal_upper_bound"]
        row = {"n": n, "p": p + 1, "alpha": a, "beta": b, "eps": eps,
               "upper_bound": ub, "bound_solver": r["optimal_bound_solver"],
               "optimal": r["optimal"], "optimal_leakage": r["optimal_leakage"],
               "optimal_source": r["optimal_source"],
               "best_diagonal": diagonal.utility,
               "diagonal_upper_bound": diagonal.class_certificate.upper_bound,
               "calibrated_3r": r["calibrated_3r"], "calibrated_3r_leakage": r["calibrated_3r_leakage"],
               "three_region": r["three_region"], "three_region_leakage": r["three_region_leakage"],
               "mq": r["mq"], "mq_leakage": r["mq_leakage"],
               "dim_optimal": r["dim_optimal"], "dim_optimal_leakage": r["dim_optimal_leakage"],
               "thm2_bound": r["thm2_bound"]}
        for k in ("optimal", "calibrated_3r", "three_region", "mq", "dim_optimal", "thm2_bound"):
            row[f"gap_{k}"] = ub - r[k]
        row["gap_best_diagonal"] = ub - diagonal.utility
        row["seconds"] = time.perf_counter() - t0
        rows.append(row)
    _write_csv(out / "gap_table.csv", rows)
    keys = ["n", "p", "alpha", "beta", "eps", "upper_bound", "optimal", "gap_optimal", "best_diagonal",
            "calibrated_3r", "three_region", "three_region_leakage", "mq", "dim_optimal", "thm2_bound",
            "bound_solver"]
    head = ("# Gap table\n\nUtilities (exact) and the gap of the optimum to the certified upper bound "
            "(valid for every eps-private local redaction mechanism; `bound_solver` says which: the side "
            "frontier's grid bound `frontier-dp`, SCIP's dual bound `scip`, or Lemma 2's closed form). "
            "`best_diagonal` is the best verified design whose two sides each get one symmetric budget "
            "(the paper's eps_l + eps_r = eps family); the optimum may split each side's budget "
            "asymmetrically. 3R and MQ as printed; 3R's exact leakage shown (above eps = violation). "
            "Full columns in gap_table.csv.\n\n")
    (out / "gap_table.md").write_text(head + _md_table(rows, keys))
    return rows


# ---------------------------------------------------------------------------
# audit of the paper's claims
# ---------------------------------------------------------------------------
def paper_audit(out: Path, *, points: int, seed: int, progress: bool) -> dict[str, Any]:
    """Random sample of parameter points: how often and how much the paper's claims fail."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in _progress(list(range(points)), "paper audit", progress):
        a, b = (float(v) for v in np.exp(rng.uniform(math.log(0.002), math.log(0.998), 2)))
        n = int(rng.integers(2, 41))
        p = int(rng.integers(0, n))
        eps = float(np.exp(rng.uniform(math.log(0.05), math.log(5.0))))
        ch = MarkovChain(a, b)
        row: dict[str, Any] = {"alpha": a, "beta": b, "n": n, "p": p + 1, "eps": eps}
        for reading in ("section4", "theorem1", "algorithm2"):
            m = three_region(ch, n, eps=eps, p=p, reading=reading)
            row[f"3r_{reading}_has_middle"] = "M" in m.info["regions"]
            row[f"3r_{reading}_leakage"] = m.leakage().leakage
        dim = design(ch, n, eps=eps, p=p, method="dim")
        row["dim_optimal"] = dim.utility
        row["thm2_bound"] = theorem2_bound(ch, n, eps=eps, p=p)
        mq = markov_quilt(ch, n, eps=eps, p=p)
        row["mq"] = mq.utility()
        row["mq_leakage"] = mq.leakage().leakage
        rows.append(row)
    _write_csv(out / "paper_audit_points.csv", rows)
    summary = []
    for reading, label in (("section4", "Section IV (Eqs. 1-2, eps/2 per side, whole eps at an end)"),
                           ("theorem1", "Theorem 1 (regions from eps, p_t with eps/2)"),
                           ("algorithm2", "Algorithm 2 (as Theorem 1)")):
        leak = np.array([r[f"3r_{reading}_leakage"] for r in rows])
        eps = np.array([r["eps"] for r in rows])
        mid = np.array([r[f"3r_{reading}_has_middle"] for r in rows])
        over = leak > eps * (1 + LEAKAGE_RTOL)
        excess = (leak - eps)[over]
        ratio = (leak / eps)[over]
        summary.append({
            "claim": f"3R is eps-private — {label}",
            "points": len(rows),
            "points_with_middle_region": int(mid.sum()),
            "share_violating": float(over.mean()),
            "share_violating_given_middle": float(over[mid].mean()) if mid.any() else float("nan"),
            "median_excess_nats": float(np.median(excess)) if excess.size else 0.0,
            "max_excess_nats": float(excess.max()) if excess.size else 0.0,
            "median_leakage_over_eps": float(np.median(ratio)) if ratio.size else 1.0,
            "max_leakage_over_eps": float(ratio.max()) if ratio.size else 1.0,
        })
    dim = np.array([r["dim_optimal"] for r in rows])
    thm2 = np.array([r["thm2_bound"] for r in rows])
    beat = dim > thm2 + 1e-12
    summary.append({
        "claim": "Theorem 2 bounds every data-independent mechanism",
        "points": len(rows), "points_with_middle_region": "", "share_violating": float(beat.mean()),
        "share_violating_given_middle": "", "median_excess_nats": "",
        "max_excess_nats": "", "median_leakage_over_eps": "",
        "max_leakage_over_eps": f"max utility above bound {float((dim - thm2)[beat].max()) if beat.any() else 0.0:.4g}",
    })
    mq = np.array([r["mq"] for r in rows])
    loss = dim - mq
    summary.append({
        "claim": "Algorithm 1 (MQ) is optimal among data-independent windows",
        "points": len(rows), "points_with_middle_region": "", "share_violating": float((loss > 1e-12).mean()),
        "share_violating_given_middle": "", "median_excess_nats": "",
        "max_excess_nats": "", "median_leakage_over_eps": f"mean utility lost {float(loss.mean()):.4g}",
        "max_leakage_over_eps": f"max utility lost {float(loss.max()):.4g}",
    })
    _write_csv(out / "paper_audit.csv", summary)
    head = (f"# Audit of the paper's claims\n\n{len(rows)} random parameter points (seed {seed}): "
            "alpha, beta log-uniform in [0.002, 0.998], n uniform in 2..40, p uniform, eps log-uniform in "
            "[0.05, 5]. Exact leakage of every mechanism; per-point values in paper_audit_points.csv. "
            "'share_violating' is the share of points where the claim fails.\n\n")
    (out / "paper_audit.md").write_text(head + _md_table(summary))
    return {"rows": rows, "summary": summary}


# ---------------------------------------------------------------------------
# entry
# ---------------------------------------------------------------------------
def run_bench(out: str | Path, *, quick: bool = False, progress: bool = True, time_limit: float = 60.0,
              audit_points: int | None = None, seed: int = 2026,
              log: Callable[[str], None] = print) -> dict[str, float]:
    """Write every figure and table (:data:`BENCH_FILES`) into ``out``; returns the seconds each part took.

    ``out`` is created if missing, but not its parent (a typo should not create folders).
    """
    out = Path(out)
    if not out.parent.is_dir():
        raise ValueError(f"{out}: directory {out.parent} does not exist (create it first)")
    out.mkdir(exist_ok=True)
    timings: dict[str, float] = {}

    def step(name: str, fn: Callable[[], Any]) -> None:
        t0 = time.perf_counter()
        fn()
        timings[name] = time.perf_counter() - t0
        log(f"{name:<12} {timings[name]:8.1f} s")

    step("table1", lambda: table1(out))
    step("example1", lambda: example1(out))
    step("fig2", lambda: fig2(out))
    step("fig3", lambda: fig3(out, FIG3_EPS_QUICK if quick else FIG3_EPS, time_limit, progress))
    step("fig4", lambda: fig4(out, time_limit))
    step("gap_table", lambda: gap_table(out, quick=quick, time_limit=time_limit, progress=progress))
    pts = audit_points if audit_points is not None else 5000
    step("paper_audit", lambda: paper_audit(out, points=pts, seed=seed, progress=progress))
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# redactopt bench{' --quick' if quick else ''}", "",
             f"{stamp} · Python {platform.python_version()} · {platform.platform()}", "",
             "| part | seconds |", "|---|---|"]
    lines += [f"| {k} | {v:.1f} |" for k, v in timings.items()]
    lines.append(f"| total | {sum(timings.values()):.1f} |")
    (out / "timings.md").write_text("\n".join(lines) + "\n")
    return timings
