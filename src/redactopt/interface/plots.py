"""Figures of a design and of a comparison, and saving them safely (``design --plot``, ``compare --plot``).

* :func:`design_figure` draws, per record, ``Pr(⊥ | X_t = x)`` for every value ``x`` around the
  private record(s): two step lines on the 3R regions for a binary chain, a heat map with the
  pointwise influence of the private record per distance for a k-state chain.  The title gives
  ε, the utility, the exact leakage and the certified upper bound.  A long sequence is drawn on
  windows around its blocks and private records (at most :data:`MAX_PANELS`), and the records
  left out are summarised under the plot: every record outside a block is published with
  certainty, so nothing is hidden by the summary.
* :func:`compare_figure` draws the rows of ``redactopt compare`` (or
  :func:`redactopt.engine.compare.compare_point`): utility against ε for every method, the band
  between the verified optimum and its certified upper bound, and the mechanisms whose exact
  leakage exceeds ε ringed in red — the paper's Fig. 3 for any chain, ``n`` and ``p``.
* :func:`classes_figure` draws the rows of ``redactopt compare --class`` (or
  :func:`redactopt.engine.classes_design.compare_classes`) over several ε: the verified utility of
  every mechanism class (local ⊆ scan ⊆ owner ⊆ holder) with the band up to its certified bound.
* :func:`save_figure` writes ``.png`` or ``.svg`` through a temporary file and a rename
  (:func:`redactopt.io.atomic_path`); :func:`check_figure_path` refuses a bad path before any
  work, with a one-line message.

Figures are built on :class:`matplotlib.figure.Figure` directly (no pyplot state), with every
font at least 9 pt on figures about 1000 pixels wide at :data:`DPI`: readable at the saved size.
"""

from __future__ import annotations

import io
import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from redactopt.io import STDIO, atomic_path, check_output_path, check_writable
from redactopt.judge.tolerances import LEAKAGE_RTOL
from redactopt.judge.certify import SparseRows
from redactopt.model.chain import MarkovChain, is_two_state
from redactopt.model.chain import Chain as KChain

__all__ = ["DesignView", "design_view", "design_figure", "compare_figure", "classes_figure", "save_figure", "check_figure_path",
           "figure_bytes", "check_writable", "plot_windows", "region_labels", "new_figure", "design_title",
           "FIGURE_FORMATS", "DPI", "MAX_PANELS"]

#: The file formats a figure can be saved in (by the file name's extension).
FIGURE_FORMATS = ("png", "svg")
#: Resolution of saved raster figures (dots per inch): a 10-inch figure is 1100 pixels wide.
DPI = 110
#: Most windows a design figure draws; further blocks are named in the note under the plot.
MAX_PANELS = 3
#: Sequences up to this long are drawn whole.
WHOLE_BELOW = 80

FONT = 11          # body text, axis labels
SMALL = 10         # ticks, legends, notes
REGION_COLORS = {"P": "#b4a7d6", "L": "#f4cccc", "M": "#fff2cc", "S": "#d9ead3"}
REGION_NAMES = {"P": "private record", "L": "$R_L$: always redacted", "M": "$R_M$: value {low} may be published",
                "S": "$R_S$: published"}
_SEVERITY = {"S": 0, "M": 1, "L": 2}


# ---------------------------------------------------------------------------
# what a design figure shows
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class DesignView:
    """A design reduced to what its figure shows, whatever object held it.

    ``starts`` are 0-based first rows of ``blocks`` (``(m, k)`` arrays of ``Pr(⊥ | X_t = state)``);
    every row outside a block is published with certainty.  ``private`` is 0-based.  ``split``
    is 3R's ``(eps_left, eps_right)`` when the design says which it used (one private record).
    ``region_certificates`` are the report's ``regions`` (1-based ``rows``, ``published``,
    ``upper_bound``, ``solver``).  ``robust``: designed for a class of chains, whose deciding
    chains (:meth:`~redactopt.model.classes.ChainClass.deciding`) are ``region_chains``; ``chain``
    is then the nominal chain (where the utility is measured).
    """

    n: int
    states: tuple[str, ...]
    starts: tuple[int, ...]
    blocks: tuple[np.ndarray, ...]
    private: tuple[int, ...]
    eps: float
    method: str = ""
    utility: float | None = None
    leakage: float | None = None
    upper_bound: float | None = None
    gap: float | None = None
    chain: MarkovChain | KChain | None = None
    split: tuple[float, float] | None = None
    region_certificates: tuple[dict, ...] = ()
    robust: bool = False
    region_chains: tuple[MarkovChain, ...] = ()

    @property
    def k(self) -> int:
        return len(self.states)

    def rows(self, a: int, b: int) -> np.ndarray:
        """Dense rows ``a..b-1`` (0-based), ``(b - a, k)``."""
        out = np.zeros((max(0, b - a), self.k))
        for s, blk in zip(self.starts, self.blocks):
            lo, hi = max(a, s), min(b, s + blk.shape[0])
            if lo < hi:
                out[lo - a: hi - a] = blk[lo - s: hi - s]
        return out


def _blocks_of_dense(q: np.ndarray) -> tuple[tuple[int, ...], tuple[np.ndarray, ...]]:
    """Maximal runs of rows with something redactable, as blocks."""
    live = np.any(q > 0, axis=1)
    edges = np.flatnonzero(np.diff(np.r_[0, live.astype(np.int8), 0]))
    runs = list(zip(edges[::2], edges[1::2]))
    return tuple(int(a) for a, _ in runs), tuple(np.array(q[a:b], dtype=float) for a, b in runs)


def _view_of_dict(d: dict, where: str = "mechanism") -> DesignView:
    """A mechanism file object of any format (:func:`redactopt.io.parse_mechanism` reads and checks it)."""
    from redactopt.io import parse_mechanism

    m = parse_mechanism(d, where)
    chain, n, private, eps = m.chain, int(d["n"]), m.private, m.eps
    states = tuple(str(s) for s in chain.labels)
    if isinstance(m.redact_prob, SparseRows):
        starts, blocks = tuple(m.redact_prob.starts), tuple(np.asarray(b, dtype=float) for b in m.redact_prob.blocks)
    else:
        starts, blocks = _blocks_of_dense(np.asarray(m.redact_prob, dtype=float))
    cert = d.get("certificate") or {}
    deciding = _deciding(d["chain_class"], where) if d.get("chain_class") is not None else ()
    return DesignView(n=n, states=states, starts=starts, blocks=blocks, private=private, eps=eps,
                      method=str(d.get("method", "")), utility=d.get("utility"), leakage=d.get("leakage"),
                      upper_bound=cert.get("upper_bound"), gap=cert.get("gap"), chain=chain,
                      robust=d.get("chain_class") is not None, region_chains=deciding)


def _deciding(raw: Any, where: str) -> tuple[MarkovChain, ...]:
    """The deciding chains of a mechanism file's ``chain_class`` (a box or a list of chains)."""
    from redactopt.model.classes import ChainClass

    try:
        if "chains" in raw:
            box = ChainClass.of([MarkovChain(float(c["alpha"]), float(c["beta"])) for c in raw["chains"]])
        else:
            box = ChainClass.box(tuple(raw["alpha"]), tuple(raw["beta"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: chain_class: {exc}") from None
    return box.deciding()


def design_view(design: Any) -> DesignView:
    """The :class:`DesignView` of a design result, a parsed mechanism file or a mechanism file object.

    Parameters
    ----------
    design : DesignResult, SparseDesign, KDesignResult, MechanismFile, KMechanismFile, DesignView or dict
        A result of :func:`redactopt.design`, :func:`~redactopt.engine.joint.design_joint_sparse` or
        :func:`~redactopt.engine.kdesign.kdesign`; a mechanism read by :mod:`redactopt.io` or
        :mod:`redactopt.kio`; or the JSON object of a mechanism file (as in a release report).
    """
    if isinstance(design, DesignView):
        return design
    if isinstance(design, dict):
        return _view_of_dict(design)
    chain = getattr(design, "chain", None)
    q = getattr(design, "redact_prob", None)
    if chain is None or q is None or not hasattr(design, "private"):
        raise TypeError(f"expected a design or a mechanism, got {type(design).__name__}")
    if isinstance(chain, KChain):
        states = tuple(str(s) for s in chain.labels)
    else:
        states = ("0", "1")
    if hasattr(q, "starts") and hasattr(q, "blocks"):
        starts, blocks = tuple(int(s) for s in q.starts), tuple(np.asarray(b, dtype=float) for b in q.blocks)
    else:
        starts, blocks = _blocks_of_dense(np.asarray(q, dtype=float))
    cert = getattr(design, "certificate", None)
    if isinstance(cert, dict):
        ub, gap = cert.get("upper_bound"), cert.get("gap")
    else:
        ub, gap = (cert.upper_bound, cert.gap) if cert is not None else (None, None)
    info = getattr(design, "info", None) or {}
    split = (float(info["eps_left"]), float(info["eps_right"])) if "eps_left" in info and "eps_right" in info else None
    regions = tuple(r.to_dict() for r in getattr(design, "regions", ()) or ())
    box = getattr(design, "chain_class", None)
    return DesignView(n=int(q.shape[0]), states=states, starts=starts, blocks=blocks,
                      private=tuple(int(p) for p in design.private), eps=float(design.eps),
                      method=str(getattr(design, "method", "")), utility=design.utility, leakage=design.leakage,
                      upper_bound=ub, gap=gap, chain=chain, split=split, region_certificates=regions,
                      robust=box is not None, region_chains=box.deciding() if box is not None else ())


# ---------------------------------------------------------------------------
# windows and regions
# ---------------------------------------------------------------------------
def _merge(intervals: list[list[int]], gap: int) -> list[list[int]]:
    out: list[list[int]] = []
    for a, b in sorted(intervals):
        if out and a - out[-1][1] - 1 <= gap:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def plot_windows(view: DesignView, *, max_panels: int = MAX_PANELS,
                 whole_below: int = WHOLE_BELOW) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The 0-based inclusive record ranges a design figure draws, and the blocks it leaves out.

    A sequence of at most ``whole_below`` records is drawn whole.  Otherwise each block and
    private record is a stretch; stretches closer than half the wider of them are joined, each
    is widened by a tenth of its width (at least 5 records) on both sides, and the first
    ``max_panels`` are drawn.  Every record outside the windows and outside the blocks left out
    is published with certainty.
    """
    if view.n <= whole_below:
        return [(0, view.n - 1)], []
    parts = [[s, s + b.shape[0] - 1] for s, b in zip(view.starts, view.blocks)] + [[p, p] for p in view.private]
    if not parts:
        return [(0, min(view.n, whole_below) - 1)], []
    merged: list[list[int]] = []
    for a, b in sorted(parts):
        width = b - a + 1
        if merged and a - merged[-1][1] - 1 <= max(10, (max(width, merged[-1][1] - merged[-1][0] + 1)) // 2):
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    widened = [[max(0, a - max(5, (b - a + 1) // 10)), min(view.n - 1, b + max(5, (b - a + 1) // 10))]
               for a, b in merged]
    windows = [(a, b) for a, b in _merge(widened, 0)]
    shown, hidden = windows[:max_panels], windows[max_panels:]
    left_out = [(s, s + blk.shape[0] - 1) for s, blk in zip(view.starts, view.blocks)
                if any(a <= s <= b for a, b in hidden)]
    return shown, left_out


def _split_for(view: DesignView, p: int) -> tuple[float, float]:
    from redactopt.paper.mechanisms import default_split

    if view.split is not None and len(view.private) == 1:
        return view.split
    return default_split(view.n, p, view.eps)


def region_labels(view: DesignView, t: np.ndarray) -> np.ndarray:
    """3R's region letters (``P``, ``L``, ``M``, ``S``; Section II) of the 0-based records ``t``.

    One private record: its regions for the design's split (else the default, ε/2 a side).
    Several: each record takes the most severe region any private record gives it — the regions
    of the paper's footnote (the elementwise maximum of per-record designs) — which is that of the
    nearest private record on each side.  A robust design (a class of chains): the most severe
    over the class's deciding chains.  Binary chains only.
    """
    from redactopt.model.influence import region_letters

    if not is_two_state(view.chain):
        raise ValueError("regions are defined for a binary chain only")
    t = np.asarray(t, dtype=np.int64)
    priv = np.asarray(sorted(view.private), dtype=np.int64)
    out = np.full(t.shape, "S", dtype="<U1")
    worst = np.zeros(t.shape, dtype=np.int64)
    right = np.searchsorted(priv, t, side="left")   # the first private record at or after t
    for chain in view.region_chains or (view.chain,):
        for left_of, idx in ((True, right), (False, right - 1)):
            ok = (idx >= 0) & (idx < priv.size)
            p = priv[np.clip(idx, 0, max(0, priv.size - 1))] if priv.size else idx
            dist = np.abs(p - t)
            ok &= dist > 0
            for pv in np.unique(p[ok]):
                sel = ok & (p == pv)
                el, er = _split_for(view, int(pv))
                letters = region_letters(chain, dist[sel], el if left_of else er)
                sev = np.array([_SEVERITY[str(c)] for c in letters], dtype=np.int64)
                cur, better = out[sel], sev > worst[sel]
                cur[better] = letters[better]
                out[sel] = cur
                worst[sel] = np.maximum(worst[sel], sev)
    out[np.isin(t, priv)] = "P"
    return out


def _runs(values: np.ndarray) -> list[tuple[int, int, Any]]:
    """Maximal runs ``(first index, last index, value)``."""
    if values.size == 0:
        return []
    cut = np.flatnonzero(values[1:] != values[:-1]) + 1
    return [(int(a), int(b) - 1, values[a]) for a, b in zip(np.r_[0, cut], np.r_[cut, values.size])]


def _ranges_text(positions: Iterable[int], limit: int = 4) -> str:
    """1-based ranges of 0-based positions: ``1120–1179`` or ``3, 7, 12–15 (+2 more)``."""
    pos = sorted({int(p) + 1 for p in positions})
    runs: list[list[int]] = []
    for v in pos:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    parts = [f"{a:,}–{b:,}" if b > a else f"{a:,}" for a, b in runs]
    more = f" (+{len(parts) - limit} more)" if len(parts) > limit else ""
    return ", ".join(parts[:limit]) + more


# ---------------------------------------------------------------------------
# the design figure
# ---------------------------------------------------------------------------
def new_figure(width: float, height: float) -> Any:
    """A :class:`matplotlib.figure.Figure` of ``width`` x ``height`` inches with constrained layout (no pyplot)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _fmt(x: float | None, digits: int = 6) -> str:
    return "—" if x is None or not math.isfinite(float(x)) else f"{float(x):.{digits}g}"


def design_title(view: DesignView) -> str:
    """The two title lines of a design figure: the problem, then utility, leakage and certified bound."""
    count = len(view.private)
    who = f"private record {_ranges_text(view.private)}" if count == 1 else \
        f"{count:,} private records ({_ranges_text(view.private)})"
    method = re.split(r"[:(]", view.method, maxsplit=1)[0].strip()
    head = f"{method + ': ' if method else ''}n = {view.n:,}, {who}, ε = {view.eps:g}"
    if view.robust:
        head += " (every chain of the box)"
    bound = (f"certified upper bound {_fmt(view.upper_bound)} (gap {_fmt(view.gap, 2)})"
             if view.upper_bound is not None else "no certified bound recorded")
    return f"{head}\nutility {_fmt(view.utility)} · exact leakage {_fmt(view.leakage, 10)} · {bound}"


def _draw_regions(ax: Any, view: DesignView, t: np.ndarray) -> set[str]:
    """Region bands behind a binary panel (runs merged); returns the letters drawn."""
    if is_two_state(view.chain):
        letters = region_labels(view, t)
    else:
        letters = np.where(np.isin(t, view.private), "P", "")
    for a, b, lab in _runs(letters):
        if lab:
            ax.axvspan(t[a] + 0.5, t[b] + 1.5, color=REGION_COLORS[str(lab)], lw=0, zorder=0).set_gid(f"region-{lab}")
    return {str(x) for x in np.unique(letters) if x}


def _draw_binary(ax: Any, view: DesignView, a: int, b: int) -> set[str]:
    t = np.arange(a, b + 1)
    q = view.rows(a, b + 1)
    drawn = _draw_regions(ax, view, t)
    few = t.size <= 40
    styles = ({"color": "#1f4e9c", "lw": 2.6, "marker": "o" if few else None, "ms": 6},
              {"color": "#c0392b", "lw": 1.8, "ls": (0, (4, 2)), "marker": "s" if few else None, "ms": 4.5,
               "mfc": "white"})
    for x, style in enumerate(styles):
        line, = ax.step(t + 1, q[:, x], where="mid", label=f"Pr(⊥ | X_t = {view.states[x]})", zorder=3, **style)
        line.set_gid(f"redact-prob-{x}")
    ax.set_ylim(-0.05, 1.08)
    ax.set_xlim(a + 0.5, b + 1.5)
    return drawn


def _draw_kstate(ax: Any, view: DesignView, a: int, b: int) -> Any:
    t = np.arange(a, b + 1)
    q = view.rows(a, b + 1)
    im = ax.imshow(q.T, aspect="auto", interpolation="nearest", cmap="Blues", vmin=0.0, vmax=1.0,
                   extent=(a + 0.5, b + 1.5, view.k - 0.5, -0.5))
    im.set_gid("redact-prob-heatmap")
    ax.set_yticks(range(view.k), [str(s) for s in view.states])
    if t.size <= 24 and view.k <= 8:
        for i, tt in enumerate(t):
            for x in range(view.k):
                v = q[i, x]
                ax.text(tt + 1, x, f"{v:.2g}", ha="center", va="center", fontsize=9,
                        color="white" if v > 0.55 else "black")
    private = np.isin(t, view.private)
    for i, j, on in _runs(private):
        if on:
            ax.plot([t[i] + 0.5, t[j] + 1.5], [-0.62, -0.62], lw=5, color=REGION_COLORS["P"], clip_on=False,
                    solid_capstyle="butt", zorder=4, label="private record(s)" if i == np.argmax(private) else None)
    ax.set_ylim(view.k - 0.5, -0.5)
    if private.any():
        ax.set_title("bar above: the private record(s)", fontsize=SMALL, color="#555555", loc="left")
    ax.set_ylabel("state", fontsize=FONT)
    return im


def _influence(view: DesignView, reach: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Distances 1..reach and curves of the pointwise influence of the private record.

    Binary, and k-state up to 3 states: one curve per value of X_t (per side when the chain is
    not reversible: the left side sees the time-reversed chain).  More states: per side, the
    largest and the smallest influence over the values (the max-influence and the least one).
    """
    d = np.arange(1, reach + 1)
    chain = view.chain
    if is_two_state(chain):
        from redactopt.model.influence import pointwise_influence

        return d, {f"X_t = {view.states[x]}": np.asarray(pointwise_influence(chain, d, x)) for x in (0, 1)}
    from redactopt.model.influence import pair_log_ratios

    assert isinstance(chain, KChain)
    sides = ("right",) if chain.is_reversible else ("right", "left")
    out = {}
    off = ~np.eye(chain.k, dtype=bool)
    for side in sides:
        r = pair_log_ratios(chain, reach, side)                  # [Δ-1, v, x, x']
        r = np.where(np.isnan(r) | ~off, -np.inf, r).max(axis=(2, 3))
        tag = "" if len(sides) == 1 else f" ({side} side)"
        if chain.k <= 3:
            for v in range(chain.k):
                out[f"X_t = {view.states[v]}{tag}"] = r[:, v]
        else:
            out[f"max over values{tag}"] = r.max(axis=1)
            out[f"min over values{tag}"] = r.min(axis=1)
    return d, out


def _draw_influence(ax: Any, view: DesignView, windows: list[tuple[int, int]]) -> None:
    far = max(max(abs(p - a), abs(b - p)) for a, b in windows for p in view.private) if view.private else 10
    reach = int(min(max(far, 5), 1000))
    d, curves = _influence(view, reach)
    ruled_out = False
    for i, (name, y) in enumerate(curves.items()):
        y = np.asarray(y, dtype=float)
        ruled_out |= bool(np.isinf(y).any())
        line, = ax.plot(d, np.where(np.isfinite(y) & (y > 0), y, np.nan), lw=1.8, color=f"C{i % 10}", label=name,
                        ls="--" if "left" in name or "min" in name else "-")
        line.set_gid(f"influence-{i}")
    ax.axhline(view.eps, color="k", ls=":", lw=1.2, label=f"ε = {view.eps:g}")
    ax.set_yscale("log")
    ax.set_xlabel("distance from the private record", fontsize=FONT)
    ax.set_ylabel("influence (nats)", fontsize=FONT)
    note = " (∞, a value ruled out, not drawn)" if ruled_out else ""
    ax.set_title("Pointwise influence of the private record on X_t" + note, fontsize=FONT)
    ax.tick_params(labelsize=SMALL)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.legend(fontsize=SMALL, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def _note(view: DesignView, windows: list[tuple[int, int]], left_out: list[tuple[int, int]]) -> str:
    """What the panels leave out, in words (every record outside a block is published)."""
    drawn = sum(b - a + 1 for a, b in windows)
    if drawn >= view.n:
        return ""
    parts = []
    if left_out:
        ends = _ranges_text(i for a, b in left_out for i in (a, b))
        parts.append(f"{len(left_out)} more block(s) not drawn (records {ends})")
    parts.append(f"the other {view.n - drawn - sum(b - a + 1 for a, b in left_out):,} records are published with "
                 "certainty (Pr(⊥) = 0)")
    return "Not drawn: " + "; ".join(parts)


def design_figure(design: Any, *, title: str | None = None, influence: bool | None = None,
                  max_panels: int = MAX_PANELS, width: float = 10.0) -> Any:
    """A figure of a design: per record, ``Pr(⊥ | X_t = x)`` for every value ``x``.

    Parameters
    ----------
    design : design result, mechanism or mechanism file object
        Anything :func:`design_view` reads.
    title : str, optional
        Replaces :func:`design_title`'s two lines.
    influence : bool, optional
        Add a panel with the pointwise influence of the private record per distance (default:
        for k-state chains, whose heat map has no 3R regions).
    max_panels : int
        Most windows drawn side by side (:func:`plot_windows`).
    width : float
        Figure width in inches (at :data:`DPI`).

    Returns
    -------
    matplotlib.figure.Figure
        Binary chains: two step lines (gids ``redact-prob-0`` and ``redact-prob-1``; x the 1-based
        record, y the probability) on bands of 3R's regions.  k-state: a heat map (gid
        ``redact-prob-heatmap``, rows the states).
    """
    view = design_view(design)
    windows, left_out = plot_windows(view, max_panels=max_panels)
    binary = view.k == 2
    influence = (not binary) if influence is None else influence
    fig = new_figure(width, 4.6 + (2.8 if influence else 0.0))
    grid = fig.add_gridspec(2 if influence else 1, len(windows), height_ratios=[1.5, 1] if influence else None,
                            width_ratios=[max(1.0, math.sqrt(b - a + 1)) for a, b in windows])
    axes = [fig.add_subplot(grid[0, i]) for i in range(len(windows))]
    drawn: set[str] = set()
    image = None
    for i, (ax, (a, b)) in enumerate(zip(axes, windows)):
        if binary:
            drawn |= _draw_binary(ax, view, a, b)
        else:
            image = _draw_kstate(ax, view, a, b)
        ax.tick_params(labelsize=SMALL)
        if b - a < 20:
            ax.set_xticks(range(a + 1, b + 2))
        else:
            ax.xaxis.get_major_locator().set_params(integer=True, nbins=max(3, 8 // len(windows)))
        ax.set_xlabel("record (1-based)" if len(windows) == 1 else f"records {a + 1:,}–{b + 1:,}", fontsize=FONT)
        if i and binary:
            ax.tick_params(labelleft=False)
    note = _note(view, windows, left_out)
    if binary:
        axes[0].set_ylabel("Pr(⊥ | X_t = x)", fontsize=FONT)
        _design_legend(fig, axes[0], view, drawn, note)
    else:
        if image is not None:
            fig.colorbar(image, ax=axes, shrink=0.9, pad=0.01).set_label("Pr(⊥ | X_t = state)", fontsize=SMALL)
        if note:
            fig.supxlabel(note, fontsize=SMALL, color="#444444")
    if influence and view.private and view.chain is not None:
        _draw_influence(fig.add_subplot(grid[1, :]), view, windows)
    fig.suptitle(title if title is not None else design_title(view), fontsize=FONT + 1)
    return fig


def _design_legend(fig: Any, ax: Any, view: DesignView, drawn: set[str], note: str) -> None:
    """The lines, then only the regions actually drawn (a legend never lists what the plot lacks);
    its title says what the regions are and what the panels leave out."""
    from matplotlib.patches import Patch

    handles, labels = ax.get_legend_handles_labels()
    low = getattr(view.chain, "alpha", 0) > getattr(view.chain, "beta", 1)
    for letter in ("P", "L", "M", "S"):
        if letter in drawn:
            handles.append(Patch(color=REGION_COLORS[letter]))
            labels.append(REGION_NAMES[letter].format(low=view.states[1 if low else 0]))
    lines = []
    if drawn - {"P"} and len(view.private) > 1:
        lines.append("3R regions of the nearest private record (the paper's footnote: the most severe)")
    if drawn - {"P"} and view.region_chains:
        lines.append("regions at the box's deciding chain(s): " + ", ".join(
            f"α = {c.alpha:.3g}, β = {c.beta:.3g}" for c in view.region_chains))
    if note:
        lines.append(note)
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(handles), 3), fontsize=SMALL,
               frameon=False, title="\n".join(lines) or None, title_fontsize=SMALL)


# ---------------------------------------------------------------------------
# the comparison figure
# ---------------------------------------------------------------------------
#: (column, legend label, line style); drawn in this order, Theorem 2 last so its rings stay visible on DIM.
COMPARE_SERIES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("optimal", "optimum (verified)", {"color": "#1f4e9c", "marker": "o", "lw": 2.6, "ms": 6}),
    ("calibrated_3r", "calibrated 3R (verified)", {"color": "#e67e22", "marker": "s", "lw": 1.8, "ms": 5.5}),
    ("three_region", "3R as printed", {"color": "#27ae60", "marker": "^", "lw": 1.6, "ls": "--", "ms": 6.5}),
    ("mq", "MQ as printed (Alg. 1)", {"color": "#8e44ad", "marker": "v", "lw": 1.6, "ls": "--", "ms": 6.5}),
    ("dim_optimal", "DIM optimum (exact window)", {"color": "#c0392b", "marker": "D", "lw": 2.0, "ms": 5}),
    ("thm2_bound", "Theorem 2 bound as printed (rings)",
     {"color": "black", "marker": "o", "mfc": "none", "mew": 1.4, "ms": 12, "lw": 1.2, "ls": (0, (1.5, 2.5))}),
)
_LEAKAGE_OF = {"optimal": "optimal_leakage", "calibrated_3r": "calibrated_3r_leakage",
               "three_region": "three_region_leakage", "mq": "mq_leakage", "dim_optimal": "dim_optimal_leakage"}


def _records(table: Any) -> list[dict[str, Any]]:
    if hasattr(table, "to_dict"):
        table = table.to_dict("records")
    rows = [dict(r) for r in table]
    if not rows:
        raise ValueError("compare_figure: the table has no rows")
    for i, r in enumerate(rows):
        for key in ("n", "p", "eps", "optimal"):
            if key not in r:
                raise ValueError(f"compare_figure: row {i + 1} has no column {key!r} (expected compare's columns)")
    return rows


def _groups(rows: list[dict[str, Any]]) -> list[tuple[tuple, list[dict[str, Any]]]]:
    """Rows by (n, p, alpha, beta) in first-seen order, each sorted by eps."""
    out: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault((r["n"], r["p"], str(r.get("alpha")), str(r.get("beta"))), []).append(r)
    return [(k, sorted(v, key=lambda r: float(r["eps"]))) for k, v in out.items()]


def _violates(r: dict[str, Any], key: str) -> bool:
    leak = r.get(_LEAKAGE_OF.get(key, ""))
    if leak is None or not isinstance(leak, (int, float)) or not math.isfinite(leak):
        return False
    return leak > float(r["eps"]) * (1.0 + LEAKAGE_RTOL)


def _compare_axes(ax: Any, key: tuple, rows: list[dict[str, Any]]) -> None:
    e = np.array([float(r["eps"]) for r in rows])
    opt = np.array([float(r["optimal"]) for r in rows])
    if all("optimal_upper_bound" in r for r in rows):
        ub = np.array([float(r["optimal_upper_bound"]) for r in rows])
        band = ax.fill_between(e, opt, ub, color="#1f4e9c", alpha=0.18, lw=0, zorder=1,
                               label="certified band (no ε-private mechanism above)")
        band.set_gid("certified-band")
        ax.plot(e, ub, color="#1f4e9c", lw=1.0, ls=":", zorder=2)
    vx, vy, tx, ty = [], [], [], []
    for col, label, style in COMPARE_SERIES:
        if not all(col in r and r[col] is not None for r in rows):
            continue
        y = np.array([float(r[col]) for r in rows])
        line, = ax.plot(e, y, label=label, zorder=4 if col == "thm2_bound" else 3, **style)
        line.set_gid(f"series-{col}")
        for x_, y_, r in zip(e, y, rows):
            if _violates(r, col):
                vx.append(x_)
                vy.append(y_)
            if col == "thm2_bound" and r.get("thm2_violated"):
                tx.append(x_)
                ty.append(y_)
    if vx:
        ax.scatter(vx, vy, s=260, facecolors="none", edgecolors="red", linewidths=2.0, zorder=5,
                   label="leaks more than ε (exact)").set_gid("violations")
    if tx:
        ax.scatter(tx, ty, s=90, marker="x", color="red", linewidths=2.0, zorder=5,
                   label="Theorem 2 exceeded by the exact DIM optimum").set_gid("thm2-violations")
    n, p, a, b = key
    ax.set_title(f"n = {n:,}, p = {p}, α = {a}, β = {b}", fontsize=FONT)
    if e.size > 1 and e.max() / e.min() >= 4:
        ax.set_xscale("log")
        ax.minorticks_off()
    if len(set(e.tolist())) <= 10:
        ax.set_xticks(e, [f"{v:g}" for v in e])
    ax.tick_params(labelsize=SMALL)
    ax.grid(True, color="#dddddd", lw=0.6, zorder=0)
    ax.set_xlabel("privacy budget ε (nats)", fontsize=FONT)


def compare_figure(table: Any, *, title: str | None = None, columns: int = 3) -> Any:
    """Utility against ε for every method of a comparison table (the paper's Fig. 3, any chain and n).

    Parameters
    ----------
    table : list of dict or pandas.DataFrame
        Rows of ``redactopt compare`` (:data:`redactopt.engine.compare.COMPARE_COLUMNS`), from
        ``--format json``/``csv`` or :func:`~redactopt.engine.compare.compare_point`.  One panel per
        (n, p, alpha, beta), ε along x.
    title : str, optional
        The figure's title (default: none for one panel, else "Utility against ε").
    columns : int
        Panels per row.

    Returns
    -------
    matplotlib.figure.Figure
        Lines with gids ``series-<column>`` (x ε, y the column), the band ``certified-band``
        between the optimum and its certified upper bound, red rings (``violations``) on every
        mechanism whose exact leakage exceeds ε and red crosses (``thm2-violations``) where the
        exact DIM optimum exceeds Theorem 2's bound.  Theorem 2 is drawn as rings over its own
        dotted line, so it stays visible where it coincides with the DIM optimum.
    """
    groups = _groups(_records(table))
    cols = max(1, min(columns, math.ceil(math.sqrt(len(groups)))))
    nrows = math.ceil(len(groups) / cols)
    fig = new_figure(max(9.0, 5.4 * cols), 4.3 * nrows + 1.3)
    axes = [fig.add_subplot(nrows, cols, i + 1) for i in range(len(groups))]
    for ax, (key, rows) in zip(axes, groups):
        _compare_axes(ax, key, rows)
    for ax in axes[::cols]:
        ax.set_ylabel("utility (expected fraction published)", fontsize=FONT)
    seen: dict[str, Any] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    fig.legend(list(seen.values()), list(seen.keys()), loc="outside lower center", ncols=2 if cols == 1 else 3,
               fontsize=SMALL, frameon=False)
    if title is not None or len(groups) > 1:
        fig.suptitle(title or "Utility against ε", fontsize=FONT + 1)
    return fig


#: Colours and markers of the mechanism classes, smallest class first.
CLASS_STYLE = {"local": ("#1f4e9c", "o"), "scan": ("#d97a00", "s"), "owner": ("#2e8b57", "^"),
               "holder": ("#8e44ad", "D")}


def classes_figure(rows: Any, *, title: str | None = None) -> Any:
    r"""Utility against ε for every mechanism class, each with the band up to its certified bound.

    Parameters
    ----------
    rows : list of dict or pandas.DataFrame
        One row per (ε, class) with ``eps``, ``class`` (``local``, ``scan``, ``owner``, ``holder``),
        ``utility`` (verified, Definition 2) and ``upper_bound`` (certified over the class); with
        ``leakage`` a mechanism whose exact leakage exceeds ε is ringed in red.  The rows of
        ``redactopt compare --class ... --format json`` have this shape.
    title : str, optional
        The figure's title (default: "Utility of each mechanism class against ε").

    Returns
    -------
    matplotlib.figure.Figure
        Per class a line with gid ``class-<name>`` (x ε, y the verified utility) and a band
        ``class-band-<name>`` between it and the certified bound (no mechanism of the class is
        above the band); ``violations`` rings any mechanism whose leakage exceeds ε.
    """
    recs = [dict(r) for r in (rows.to_dict("records") if hasattr(rows, "to_dict") else rows)]
    if not recs:
        raise ValueError("classes_figure: no rows")
    for r in recs:
        missing = [k for k in ("eps", "class", "utility", "upper_bound") if k not in r]
        if missing:
            raise ValueError(f"classes_figure: a row lacks {', '.join(missing)} (columns: {', '.join(r)})")
    unknown = sorted({str(r["class"]) for r in recs} - set(CLASS_STYLE))
    if unknown:
        raise ValueError(f"classes_figure: unknown class {unknown[0]!r} (classes: {', '.join(CLASS_STYLE)})")
    fig = new_figure(8.0, 5.2)
    ax = fig.add_subplot(1, 1, 1)
    vx, vy = [], []
    for cls, (color, mark) in CLASS_STYLE.items():
        mine = sorted((r for r in recs if r["class"] == cls), key=lambda r: float(r["eps"]))
        if not mine:
            continue
        e = np.array([float(r["eps"]) for r in mine])
        u = np.array([float(r["utility"]) for r in mine])
        ub = np.array([float(r["upper_bound"]) for r in mine])
        line, = ax.plot(e, u, color=color, marker=mark, lw=1.8, label=f"{cls} (verified)", zorder=3)
        line.set_gid(f"class-{cls}")
        band = ax.fill_between(e, u, ub, color=color, alpha=0.18, lw=0, zorder=1)
        band.set_gid(f"class-band-{cls}")
        for x_, y_, r in zip(e, u, mine):
            if r.get("leakage") is not None and float(r["leakage"]) > float(r["eps"]) * (1 + LEAKAGE_RTOL):
                vx.append(x_)
                vy.append(y_)
    if vx:
        ax.scatter(vx, vy, s=260, facecolors="none", edgecolors="red", linewidths=2.0, zorder=5,
                   label="leaks more than ε (exact)").set_gid("violations")
    e_all = np.array(sorted({float(r["eps"]) for r in recs}))
    if e_all.size > 1 and e_all.max() / e_all.min() >= 4:
        ax.set_xscale("log")
        ax.minorticks_off()
    if e_all.size <= 10:
        ax.set_xticks(e_all, [f"{v:g}" for v in e_all])
    ax.tick_params(labelsize=SMALL)
    ax.grid(True, color="#dddddd", lw=0.6, zorder=0)
    ax.set_xlabel("privacy budget ε (nats)", fontsize=FONT)
    ax.set_ylabel("utility (expected fraction published)", fontsize=FONT)
    ax.set_title(title or "Utility of each mechanism class against ε", fontsize=FONT + 1)
    handles, labels = ax.get_legend_handles_labels()
    handles.append(_band_patch("#777777"))
    labels.append("certified band (no mechanism of the class above)")
    ax.legend(handles, labels, fontsize=SMALL, frameon=False, loc="lower right")
    return fig


def _band_patch(color: str) -> Any:
    """A legend patch for a band of ``color``."""
    from matplotlib.patches import Patch

    return Patch(facecolor=color, alpha=0.3, lw=0)


# ---------------------------------------------------------------------------
# saving
# ---------------------------------------------------------------------------
def check_figure_path(path: str | os.PathLike[str], *, force: bool = False, option: str = "figure") -> Path:
    """Refuse a figure path before any work: ``ValueError`` (one line) for standard output, an
    extension other than ``.png``/``.svg``, a missing or unwritable directory (:func:`check_writable`)
    or a directory; ``FileExistsError`` for an existing file without ``force``.  Returns the path."""
    if str(path) == STDIO:
        raise ValueError(f"{option} '-': a figure needs a file name ending in .png or .svg, not standard output")
    p = Path(path)
    shown = f"{option} {os.fspath(path)}" if option.startswith("--") else os.fspath(path)
    ext = p.suffix.lower().lstrip(".")
    if ext not in FIGURE_FORMATS:
        what = f"extension '{p.suffix}'" if p.suffix else "no extension"
        raise ValueError(f"{shown}: unknown figure format ({what}); use .png or .svg")
    return check_output_path(path, force=force, option=option if option.startswith("--") else None)


def figure_bytes(fig: Any, fmt: str = "svg", *, dpi: int = DPI) -> bytes:
    """The figure as ``png`` or ``svg`` bytes, reproducibly (no date, fixed SVG ids)."""
    import matplotlib

    if fmt not in FIGURE_FORMATS:
        raise ValueError(f"unknown figure format {fmt!r}; use one of {', '.join(FIGURE_FORMATS)}")
    buf = io.BytesIO()
    meta = {"Date": None} if fmt == "svg" else {"Software": None}
    with matplotlib.rc_context({"svg.hashsalt": "redactopt", "svg.fonttype": "path"}):
        fig.savefig(buf, format=fmt, dpi=dpi, metadata=meta)
    return buf.getvalue()


def save_figure(fig: Any, path: str | os.PathLike[str], *, force: bool = False, dpi: int = DPI) -> Path:
    """Write ``fig`` to ``path`` (``.png`` or ``.svg``) through a temporary file and a rename.

    Checks as :func:`check_figure_path`; the figure is rendered in memory first, so a failure
    leaves nothing behind, and the file gets the permissions the umask gives new files.
    """
    p = check_figure_path(path, force=force)
    data = figure_bytes(fig, p.suffix.lower().lstrip("."), dpi=dpi)
    try:
        with atomic_path(p, force=force) as tmp:
            tmp.write_bytes(data)
    except FileExistsError:
        raise
    except OSError as exc:
        raise ValueError(f"{p}: cannot write: {exc.strerror or exc}") from None
    return p
