"""One self-contained HTML page for a release report (``apply --html``, ``redactopt report --html``).

The people who sign off a release need one page that says what was hidden, what it cost and
what is not covered.  :func:`report_html` turns the JSON report of a binary release
(``redactopt.release.apply-report/3``, and the older ``/1``/``/2``) or of a k-state release
(``redactopt.release.kapply-report/1``) into such a page:

1. the plain-language summary and the key figures (ε and the odds factor e^ε, the worst exact
   leakage, rows redacted, expected utility and its certified upper bound, the label of a seeded
   release);
2. the chain: the fit (estimates, confidence intervals, transition counts, the order test and
   its verdict, the warnings), which rows it was fitted on, and for a robust release the box of
   chains the guarantee covers and what it costs;
3. every distinct design: its figure (:func:`redactopt.interface.plots.design_figure`), its blocks,
   its certified bound and the region certificates;
4. the exact leakage of every private record (listed up to :data:`MAX_RECORDS_LISTED`, else
   summarised with a histogram);
5. for ``--by`` releases the sequences: summary figures and the :data:`MAX_SEQUENCES_SHOWN` worst
   first (highest leakage, then lowest utility), read from the report or from its Parquet or JSON
   lines side file (``sequences_file``) — usable at 10⁵ sequences;
6. the columns: protected, written, not covered (with the accuracy of the best single rule next to
   the majority rate, and a figure), not written.

The page has no script, fetches nothing (its Content-Security-Policy allows ``data:`` images and
its own inline style only), embeds its figures as SVG ``data:`` URLs and has a print style.
Numbers taken from the report carry ``data-key`` (their path in the report) and ``data-value``
attributes, so a test can check that the page shows the report's numbers.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from redactopt.version import __version__
from redactopt.io import REPORT_FORMATS, STDIO, check_input_path, check_output_path, write_text_atomic
from redactopt.judge.tolerances import LEAKAGE_RTOL

__all__ = ["report_html", "write_report_html", "load_report", "read_sequences", "SequenceTable", "check_html_path",
           "report_formats", "HTML_EXTENSIONS", "MAX_SEQUENCES_SHOWN", "MAX_DESIGNS_PLOTTED", "MAX_RECORDS_LISTED"]

KREPORT_FORMAT = "redactopt.release.kapply-report/1"
#: File name endings an HTML page may be written to.
HTML_EXTENSIONS = (".html", ".htm")
#: Sequences listed one by one (worst first); the others are summarised.
MAX_SEQUENCES_SHOWN = 100
#: Distinct designs drawn (the most used first); the others are listed without a figure.
MAX_DESIGNS_PLOTTED = 12
#: Private records whose exact leakage is listed one by one; beyond, a summary and a histogram.
MAX_RECORDS_LISTED = 2000
#: The order test's level (as the release's summary: a second-order chain fits better below it).
ORDER_LEVEL = 0.01

_CSS = """
:root { --ink: #1d2330; --muted: #5b6474; --line: #d8dce3; --bg: #f6f7f9; --ok: #1e7b45; --bad: #b3261e;
  --warn: #8a5a00; --accent: #1f4e9c; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  color: var(--ink); background: white; }
main { max-width: 1120px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; } h2 { font-size: 20px; margin: 36px 0 10px; padding-top: 8px;
  border-top: 2px solid var(--line); } h3 { font-size: 16px; margin: 22px 0 8px; }
p.sub { color: var(--muted); margin: 0 0 14px; } nav { font-size: 14px; color: var(--muted); margin: 8px 0 18px; }
nav a { color: var(--accent); margin-right: 12px; text-decoration: none; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(190px, 1fr)); gap: 10px; margin: 12px 0; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; background: var(--bg); }
.card .label { font-size: 13px; color: var(--muted); } .card .value { font-size: 20px; font-weight: 600; }
.card .note { font-size: 13px; color: var(--muted); }
.summary { font-size: 16px; background: var(--bg); border-left: 4px solid var(--accent); padding: 12px 16px;
  margin: 12px 0; }
.banner { border: 2px solid var(--bad); color: var(--bad); font-weight: 600; padding: 8px 12px; border-radius: 6px;
  margin: 10px 0; }
.confidential { background: var(--bad); color: #fff; font-weight: 700; padding: 8px 12px; border-radius: 6px;
  margin: 0 0 12px; }
.warn { border-left: 4px solid var(--warn); background: #fff8e6; padding: 8px 12px; margin: 8px 0; }
.pass { color: var(--ok); font-weight: 600; } .fail { color: var(--bad); font-weight: 600; }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: 14px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--bg); font-weight: 600; } td.r, th.r { text-align: right; }
.num { font-variant-numeric: tabular-nums; white-space: nowrap; } .na { color: var(--muted); }
.wide { overflow-x: auto; } table.seq { font-size: 13px; } table.seq td { white-space: nowrap; }
.card.alert { border-color: var(--warn); background: #fff8e6; }
figure { margin: 10px 0 18px; } figure img { max-width: 100%; height: auto; display: block;
  border: 1px solid var(--line); border-radius: 6px; }
figcaption { font-size: 13px; color: var(--muted); margin-top: 4px; }
.design { border: 1px solid var(--line); border-radius: 8px; padding: 4px 16px 8px; margin: 14px 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0; font-size: 14px; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; }
code { font-size: 13px; background: var(--bg); padding: 0 3px; border-radius: 3px; }
footer { color: var(--muted); font-size: 13px; margin-top: 40px; }
@media print {
  body { font-size: 10.5pt; } main { max-width: none; padding: 0; } nav { display: none; }
  h2 { break-after: avoid; } .design, figure, table, .cards { break-inside: avoid; }
  .card, .summary, th { background: white; } .wide { overflow: visible; }
  table.seq td { white-space: normal; }
}
"""


# ---------------------------------------------------------------------------
# small pieces of HTML
# ---------------------------------------------------------------------------
def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and math.isfinite(float(v))


def _num(value: Any, key: str | None = None, digits: int = 6) -> str:
    """A number from the report: integers with thousands separators, others to ``digits`` significant
    digits; ``key`` (its path in the report) and the exact value go in ``data-`` attributes."""
    if not _finite(value):
        return '<span class="na">—</span>'
    if isinstance(value, (int, np.integer)):
        text, exact = f"{int(value):,}", str(int(value))
    else:
        text, exact = f"{float(value):.{digits}g}", repr(float(value))
    attrs = f' data-key="{_e(key)}" data-value="{_e(exact)}"' if key else ""
    return f'<span class="num"{attrs}>{text}</span>'


def _pct(part: Any, whole: Any) -> str:
    return f"{100.0 * float(part) / float(whole):.1f}%" if _finite(part) and _finite(whole) and whole else "—"


def _table(head: list[str], rows: list[list[str]], right: set[int] | None = None, cls: str = "") -> str:
    """A table of cells already in HTML; columns in ``right`` are right-aligned."""
    right = right or set()
    th = "".join(f'<th{" class=r" if i in right else ""}>{h}</th>' for i, h in enumerate(head))
    body = "".join("<tr>" + "".join(f'<td{" class=r" if i in right else ""}>{c}</td>' for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    table = f"<table{f' class={cls}' if cls else ''}><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"
    return f'<div class="wide">{table}</div>' if cls == "seq" else table


def _facts(items: list[tuple[str, str]]) -> str:
    return '<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items if v) + "</dl>"


def _figure(fig: Any, alt: str, caption: str = "") -> str:
    """A matplotlib figure as an inline SVG image (a ``data:`` URL: no id clashes between figures)."""
    from redactopt.interface.plots import figure_bytes

    data = base64.b64encode(figure_bytes(fig, "svg")).decode("ascii")
    w, h = (round(v * 96) for v in fig.get_size_inches())
    cap = f"<figcaption>{caption}</figcaption>" if caption else ""
    return (f'<figure><img src="data:image/svg+xml;base64,{data}" alt="{_e(alt)}" width="{w}" height="{h}">'
            f"{cap}</figure>")


def _ranges(values: list[int], limit: int = 8) -> str:
    """1-based positions as ranges: ``1120–1179``; long lists elided."""
    runs: list[list[int]] = []
    for v in sorted({int(x) for x in values}):
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    parts = [f"{a:,}–{b:,}" if b > a else f"{a:,}" for a, b in runs]
    return ", ".join(parts[:limit]) + (f" … (+{len(parts) - limit} more)" if len(parts) > limit else "")


def _get(d: Any, *path: Any, default: Any = None) -> Any:
    for p in path:
        if isinstance(d, dict) and p in d:
            d = d[p]
        elif isinstance(d, list) and isinstance(p, int) and -len(d) <= p < len(d):
            d = d[p]
        else:
            return default
    return d


# ---------------------------------------------------------------------------
# per-sequence rows: in the report, or in its side file
# ---------------------------------------------------------------------------
@dataclass
class SequenceTable:
    """The per-sequence figures of a ``--by`` release as arrays, one entry per sequence.

    ``record_leakage`` holds the exact leakage of every private record (empty when the report
    keeps only each sequence's worst, as a k-state report does), ``record_sequence`` the index of
    its sequence in this table, ``record_private`` its 1-based row and ``record_slot`` its place in
    its sequence's ``leakage`` list.  :meth:`rows` returns the complete rows of some sequences (by
    index), read only for those.
    """

    source: str
    ids: np.ndarray
    n: np.ndarray
    private: np.ndarray
    redacted: np.ndarray
    realised: np.ndarray
    expected: np.ndarray
    leakage_max: np.ndarray
    upper_bound: np.ndarray
    gap: np.ndarray
    record_leakage: np.ndarray
    record_sequence: np.ndarray
    record_private: np.ndarray
    record_slot: np.ndarray
    _rows: Callable[[np.ndarray], list[dict[str, Any]]]

    def __len__(self) -> int:
        return int(self.ids.size)

    def rows(self, idx: np.ndarray) -> list[dict[str, Any]]:
        """The complete rows of the sequences ``idx`` (positions in this table), in that order."""
        return self._rows(np.asarray(idx, dtype=np.int64))

    def worst_first(self) -> np.ndarray:
        """Indices of the designed sequences by exact leakage, highest first, then lowest realised utility."""
        designed = np.flatnonzero(self.private > 0)
        leak = np.nan_to_num(self.leakage_max[designed], nan=-np.inf)
        return designed[np.lexsort((self.realised[designed], -leak))]


def _float_col(rows: list[dict[str, Any]], key: str) -> np.ndarray:
    return np.array([float(r[key]) if _finite(r.get(key)) else np.nan for r in rows], dtype=float)


def _table_of_rows(rows: list[dict[str, Any]], source: str) -> SequenceTable:
    """A :class:`SequenceTable` of rows held in memory (inline, or read from JSON lines)."""
    n = np.array([int(r.get("n", r.get("rows", 0))) for r in rows], dtype=np.int64)
    redacted = np.array([int(r.get("redacted", 0)) for r in rows], dtype=np.int64)
    realised = _float_col(rows, "realised_utility")
    fill = np.isnan(realised) & (n > 0)
    realised[fill] = 1.0 - redacted[fill] / n[fill]
    leak_max = _float_col(rows, "leakage_max")
    if "leakage_max" not in (rows[0] if rows else {}):       # k-state rows: 'leakage' is the worst
        leak_max = _float_col(rows, "leakage")
    records = [(float(x["leakage"]), i, int(x["private"]), j) for i, r in enumerate(rows)
               if isinstance(r.get("leakage"), list) for j, x in enumerate(r["leakage"])]
    rec = np.array(records, dtype=float).reshape(-1, 4)
    return SequenceTable(source=source, ids=np.array([str(r.get("id")) for r in rows], dtype=object), n=n,
                         private=np.array([len(r.get("private") or []) for r in rows], dtype=np.int64),
                         redacted=redacted, realised=realised, expected=_float_col(rows, "expected_utility"),
                         leakage_max=leak_max, upper_bound=_float_col(rows, "upper_bound"),
                         gap=_float_col(rows, "gap"), record_leakage=rec[:, 0],
                         record_sequence=rec[:, 1].astype(np.int64), record_private=rec[:, 2].astype(np.int64),
                         record_slot=rec[:, 3].astype(np.int64),
                         _rows=lambda idx: [rows[int(i)] for i in idx])


def _table_of_parquet(path: Path) -> SequenceTable:
    """A :class:`SequenceTable` of a ``REPORT.sequences.parquet`` file (columns read as arrays)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(path)

    def floats(name: str) -> np.ndarray:
        if name not in t.column_names:
            return np.full(t.num_rows, np.nan)
        return pc.fill_null(t[name].cast(pa.float64()), np.nan).to_numpy()

    def ints(col: Any) -> np.ndarray:
        return pc.fill_null(col.cast(pa.int64()), 0).to_numpy()

    empty = np.zeros(0, dtype=np.int64)
    leak, seq, priv, slot = np.zeros(0), empty, empty, empty
    if "leakage" in t.column_names and t.num_rows:
        lists = t["leakage"].combine_chunks()
        flat = pc.list_flatten(lists)
        leak = np.asarray(pc.fill_null(pc.struct_field(flat, "leakage"), np.nan), dtype=float)
        priv = ints(pc.struct_field(flat, "private"))
        seq = np.asarray(pc.list_parent_indices(lists), dtype=np.int64)
        starts = np.asarray(lists.offsets, dtype=np.int64)[:-1]
        slot = np.arange(seq.size, dtype=np.int64) - (starts[seq] - starts[0])
    return SequenceTable(source=path.name, ids=t["id"].cast(pa.string()).to_numpy(zero_copy_only=False),
                         n=ints(t["n"]), private=ints(pc.list_value_length(t["private"])), redacted=ints(t["redacted"]),
                         realised=floats("realised_utility"), expected=floats("expected_utility"),
                         leakage_max=floats("leakage_max"), upper_bound=floats("upper_bound"), gap=floats("gap"),
                         record_leakage=leak, record_sequence=seq, record_private=priv, record_slot=slot,
                         _rows=lambda idx: t.take(pa.array(idx, type=pa.int64())).to_pylist())


def read_sequences(report: dict[str, Any], sequences_path: str | os.PathLike[str] | None = None
                   ) -> SequenceTable | None:
    """The per-sequence rows of a report: its ``sequences``, or its side file.

    Parameters
    ----------
    report : dict
        A release report.
    sequences_path : path, optional
        The side file (``.parquet`` or ``.jsonl``) named by the report's ``sequences_file``;
        needed when the report does not list its sequences itself.

    Returns
    -------
    SequenceTable or None
        ``None`` for a report on one sequence, or one whose rows were not kept
        (``--report-sequences none``) or whose side file was not given.
    """
    if isinstance(report.get("sequences"), list):
        return _table_of_rows(report["sequences"], "the report")
    if sequences_path is None:
        return None
    p = check_input_path(sequences_path)
    try:
        if p.name.endswith(".jsonl"):
            with open(p, encoding="utf-8") as fh:
                return _table_of_rows([json.loads(line) for line in fh if line.strip()], p.name)
        return _table_of_parquet(p)
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"{p}: cannot read the report's sequences: {exc}") from None


# ---------------------------------------------------------------------------
# the sections
# ---------------------------------------------------------------------------
def _is_k(rep: dict[str, Any]) -> bool:
    return rep.get("format") == KREPORT_FORMAT


def _private_count(rep: dict[str, Any]) -> int | None:
    count = _get(rep, "leakage", "private_records")
    if count is None and isinstance(rep.get("private"), list):
        count = len(rep["private"])
    return count


def _overview(rep: dict[str, Any]) -> str:
    """The key figures as cards, the seeded-release banner and the plain-language summary."""
    eps, leak = rep.get("eps"), _get(rep, "leakage", "max")
    ok = _finite(leak) and _finite(eps) and float(leak) <= float(eps) * (1.0 + LEAKAGE_RTOL)
    util = rep.get("utility") or {}
    rows, red = rep.get("rows"), util.get("redacted")
    cards = [
        ("privacy budget ε", _num(eps, "eps"), f"odds change at most ×{math.exp(float(eps)):.3g} (e^ε)"
         if _finite(eps) else ""),
        ("worst exact leakage", _num(leak, "leakage.max", 10),
         (f'<span class="{"pass" if ok else "fail"}">{"≤ ε: private" if ok else "EXCEEDS ε"}</span> over '
         f"{_private_count(rep) or 0:,} private record(s)")),
        ("rows redacted", _num(red, "utility.redacted"), f"of {_num(rows, 'rows')} rows ({_pct(red, rows)})"),
        ("expected utility", _num(util.get("expected"), "utility.expected"),
         f"realised {_num(util.get('realised'), 'utility.realised')}"),
    ]
    if _finite(util.get("upper_bound")):
        cards.append(("certified upper bound", _num(util["upper_bound"], "utility.upper_bound"),
                      f"no ε-private mechanism publishes more (gap {_num(util.get('gap'), 'utility.gap', 3)})"))
    not_covered = _get(rep, "columns", "not_covered") or []
    cards.append(("columns not covered", _num(len(not_covered)),
                  ", ".join(_e(c.get("column")) for c in not_covered) or "none written"))
    out = ['<section id="summary"><h2>Summary</h2>']
    label = rep.get("label")
    if label:
        out.append(f'<div class="banner">{_e(label)}</div>')
    alert = {"columns not covered"} if not_covered else set()
    if not ok:
        alert.add("worst exact leakage")
    out.append('<div class="cards">' + "".join(
        f'<div class="card{" alert" if a in alert else ""}"><div class="label">{a}</div><div class="value">{b}</div>'
        f'<div class="note">{c}</div></div>' for a, b, c in cards) + "</div>")
    if rep.get("summary"):
        out.append(f'<p class="summary" data-key="summary">{_e(rep["summary"])}</p>')
    return "".join(out) + "</section>"


def _fit_rows_text(source: dict[str, Any] | None) -> str:
    """Which rows the chain was fitted on, in words."""
    if not source:
        return ""
    kind = source.get("source")
    if kind == "fit-on":
        return f"the separate table {_e(source.get('table'))} ({_num(source.get('rows'))} rows)"
    if kind != "published rows":
        return _e(kind or "")
    where = ("the sequences without private records" if source.get("radius") is None else
             f"the rows more than {_num(source['radius'], 'chain.fit_rows.radius')} records from every private record")
    rows, of = _num(source.get("rows"), "chain.fit_rows.rows"), _num(source.get("of_rows"), "chain.fit_rows.of_rows")
    return f"{rows} of {of} rows, {where} (all published with certainty)"


def _order_test(fit: dict[str, Any]) -> str:
    t = fit.get("lr_test_second_order")
    if not isinstance(t, dict) or not _finite(t.get("p_value")):
        return "not run (too few records)"
    worse = float(t["p_value"]) < ORDER_LEVEL
    verdict = (f'<span class="fail">a second-order chain fits better (p &lt; {ORDER_LEVEL:g})</span>: the first-order '
               "model may understate the dependence, and the guarantee is exact for that model only"
               if worse else f'<span class="pass">first order not rejected</span> at level {ORDER_LEVEL:g}')
    key = "chain.fit.lr_test_second_order"
    return (f"G² = {_num(t.get('statistic'), key + '.statistic', 4)}, df = {_num(t.get('df'))}, "
            f"p = {_num(t['p_value'], key + '.p_value', 4)} over {_num(t.get('triples'))} triples — {verdict}")


def _warnings(items: list[str]) -> str:
    return "".join(f'<div class="warn">{_e(w)}</div>' for w in items or [])


def _chain_binary(rep: dict[str, Any]) -> str:
    ch = rep.get("chain") or {}
    fit = ch.get("fit")
    out = ['<section id="chain"><h2>The chain</h2>']
    src = "fitted to the data" if ch.get("source") == "fitted" else f"{_e(ch.get('source', 'given'))}"
    facts = [("α = P(0→1)", _num(ch.get("alpha"), "chain.alpha")), ("β = P(1→0)", _num(ch.get("beta"), "chain.beta")),
             ("source", src), ("fitted on", _fit_rows_text(ch.get("fit_rows")))]
    out.append(_facts(facts))
    if isinstance(fit, dict):
        conf = fit.get("confidence")
        lvl = f"{100 * float(conf):g}%" if _finite(conf) else ""
        rows = []
        for name in ("alpha", "beta"):
            ci = fit.get(f"{name}_ci") or [None, None]
            rows.append([("α" if name == "alpha" else "β"), _num(fit.get(name), f"chain.fit.{name}"),
                         _num(ci[0], f"chain.fit.{name}_ci.0"), _num(ci[1], f"chain.fit.{name}_ci.1")])
        out.append(f"<h3>Estimates ({lvl} {_e(fit.get('interval', ''))} intervals)</h3>")
        out.append(_table(["", "estimate", "lower", "upper"], rows, {1, 2, 3}))
        c = fit.get("counts") or {}
        counts = [[a] + [_num(c.get(a + b), f"chain.fit.counts.{a}{b}") for b in "01"] for a in "01"]
        out.append("<h3>Transition counts</h3>" + _table(["from \\ to", "0", "1"], counts, {1, 2}))
        st = fit.get("stationary") or [None, None]
        out.append(_facts([("records", (f"{_num(fit.get('records'))} in {_num(fit.get('sequences'))} sequence(s), "
                                        f"{_num(fit.get('transitions'))} transitions")),
                           ("stationary law", f"Pr(X=0) = {_num(st[0])}, Pr(X=1) = {_num(st[1])}"),
                           ("order test", _order_test(fit))]))
        out.append(_warnings(fit.get("warnings")))
    if isinstance(ch.get("class"), dict):
        out.append(_robust_box(ch))
    out.append(_model_check(rep))
    return "".join(out) + "</section>"


def _model_check(rep: dict[str, Any]) -> str:
    """The release's exact leakage under the chains the data support besides its own (release.model_check)."""
    mc = rep.get("model_check") or {}
    rows = [[_e(m.get("model", "")), _num(m.get("statistic"), digits=4), _num(m.get("df")),
             _num(m.get("p_value"), digits=3), _num(m.get("leakage"), digits=6)] for m in mc.get("alternatives", [])]
    if not rows:
        return ""
    return ("<h3>The model check: this release under the chains that vary with the time</h3>"
            "<p>Each fitted on the same rows as the release's chain; the exact leakage about the worst private "
            "record.</p>" + _table(["varies with", "G2", "df", "p", "leakage"], rows, {1, 2, 3, 4})
            + _warnings(mc.get("warnings")))


def _box_figure(ch: dict[str, Any]) -> Any:
    """The box of chains in the (α, β) plane, with the nominal chain and the deciding ones."""
    from redactopt.interface.plots import FONT, SMALL, new_figure

    box = ch["class"]
    (a0, a1), (b0, b1) = box["alpha"], box["beta"]
    fig = new_figure(6.0, 3.6)
    ax = fig.add_subplot()
    ax.fill([a0, a1, a1, a0], [b0, b0, b1, b1], color="#1f4e9c", alpha=0.15, lw=1.5, ec="#1f4e9c",
            label="the box: private for every chain in it")
    nom = box.get("nominal") or {}
    if nom:
        ax.plot([nom["alpha"]], [nom["beta"]], "o", color="black", ms=7, label="nominal (utility measured here)")
    dec = ch.get("deciding") or []
    if dec:
        ax.plot([d["alpha"] for d in dec], [d["beta"] for d in dec], "x", color="#b3261e", ms=10, mew=2,
                label="deciding chain(s)")
    pad_a, pad_b = 0.15 * (a1 - a0) or 0.1 * a1, 0.15 * (b1 - b0) or 0.1 * b1
    ax.set_xlim(a0 - pad_a, a1 + pad_a)
    ax.set_ylim(b0 - pad_b, b1 + pad_b)
    ax.set_xlabel("α = P(0→1)", fontsize=FONT)
    ax.set_ylabel("β = P(1→0)", fontsize=FONT)
    ax.tick_params(labelsize=SMALL)
    ax.legend(fontsize=SMALL, loc="best")
    return fig


def _robust_box(ch: dict[str, Any]) -> str:
    box, rob = ch["class"], ch.get("robustness") or {}
    lvl = rob.get("level")
    out = ["<h3>Robust release: the box of chains</h3>",
           "<p>The guarantee holds for every chain of the box below"
           + (f", which holds the data's chain with probability at least {_num(lvl, 'chain.robustness.level')}" if lvl
              else "") + "; the leakage reported is the worst over the box.</p>"]
    rows = [["α", _num(box["alpha"][0], "chain.class.alpha.0"), _num(box["alpha"][1], "chain.class.alpha.1"),
             _num(_get(box, "nominal", "alpha"), "chain.class.nominal.alpha")],
            ["β", _num(box["beta"][0], "chain.class.beta.0"), _num(box["beta"][1], "chain.class.beta.1"),
             _num(_get(box, "nominal", "beta"), "chain.class.nominal.beta")]]
    out.append(_table(["", "lowest", "highest", "nominal"], rows, {1, 2, 3}))
    if rob:
        r, p = rob.get("expected_redacted_robust"), rob.get("expected_redacted_point")
        cost = (f"{_num(r, 'chain.robustness.expected_redacted_robust')} expected redacted records against "
                f"{_num(p, 'chain.robustness.expected_redacted_point')} for the design at the nominal chain alone "
                "(both measured at the nominal chain)")
        out.append(_facts([("cost of robustness", cost)]))
    out.append(_figure(_box_figure(ch), "the box of chains", "The box in the (α, β) plane; the deciding chains are "
                                                              "those whose constraints bind."))
    return "".join(out)


def _chain_varying(rep: dict[str, Any]) -> str:
    """A release for a chain that varies with a level: each level's matrix (estimates, intervals, counts)."""
    ch = rep.get("chain") or {}
    fit = ch.get("fit") or {}
    labels = [str(s) for s in fit.get("labels") or rep.get("states") or []]
    k = len(labels)
    pairs = [(i, j) for i in range(k) for j in range(k) if i != j]
    rows = []
    for lv in fit.get("levels") or []:
        P, C = fit["transition"][lv], fit["counts"][lv]
        iv = (fit.get("intervals") or {}).get(lv) or {}
        cells = [f"<b>{_e(lv)}</b>", _num(sum(map(sum, C)))]
        for i, j in pairs:
            seen = sum(C[i]) > 0
            extra = (f"<br><small>[{_num(iv['lower'][i][j], digits=3)}, {_num(iv['upper'][i][j], digits=3)}]</small>"
                     if seen and iv else "<br><small>(pooled: unseen)</small>" if not seen else "")
            cells.append(_num(P[i][j], f"chain.fit.transition.{lv}.{i}.{j}", 4) + extra)
        rows.append(cells)
    t = fit.get("homogeneity_test") or {}
    out = ['<section id="chain"><h2>The chain</h2>',
           _facts([("states", ", ".join(_e(s) for s in labels)),
                   ("varies with", _e(ch.get("varies_with", ""))), ("source", _e(ch.get("source", ""))),
                   ("fitted on", _fit_rows_text(ch.get("fit_rows"))),
                   ("homogeneity test", f"G2 = {_num(t.get('statistic'), digits=4)}, df = {_num(t.get('df'))}, "
                                        f"p = {_num(t.get('p_value'), digits=3)} (one chain against one per level)")])]
    right = set(range(1, len(pairs) + 2))
    out.append("<h3>One matrix per level: the step from a row to the next uses the row's level</h3>" +
               _table(["level", "transitions"] + [f"{_e(labels[i])} → {_e(labels[j])}" for i, j in pairs], rows, right))
    out.append(_warnings(rep.get("warnings") or fit.get("warnings") or []))
    return "".join(out) + "</section>"


def _chain_k(rep: dict[str, Any]) -> str:
    ch = rep.get("chain") or {}
    if "varies_with" in ch:
        return _chain_varying(rep)
    labels = [str(s) for s in ch.get("labels") or rep.get("states") or []]
    P = ch.get("transition") or []
    fit = ch.get("fit") if isinstance(ch.get("fit"), dict) else {}
    counts, iv = fit.get("counts"), fit.get("interval") or {}
    lo, hi = iv.get("lower"), iv.get("upper")
    rows = []
    for i, row in enumerate(P):
        cells = [f"<b>{_e(labels[i] if i < len(labels) else i)}</b>"]
        for j, v in enumerate(row):
            extra = ""
            if lo is not None and hi is not None:
                extra += f"<br><small>[{_num(lo[i][j], digits=3)}, {_num(hi[i][j], digits=3)}]</small>"
            if counts is not None:
                extra += f"<br><small>({_num(counts[i][j])})</small>"
            cells.append(_num(v, f"chain.transition.{i}.{j}", 4) + extra)
        rows.append(cells)
    out = ['<section id="chain"><h2>The chain</h2>',
           _facts([("states", ", ".join(_e(s) for s in labels)), ("source", _e(ch.get("source", ""))),
                   ("fitted on", _fit_rows_text(ch.get("fit_rows")))])]
    conf = iv.get("confidence")
    head = "Transition matrix P (row: from, column: to)"
    if _finite(conf):
        head += f"; {100 * float(conf):g}% {_e(iv.get('method', ''))} intervals and counts below each estimate"
    right = set(range(1, len(labels) + 1))
    out.append(f"<h3>{head}</h3>" + _table(["from \\ to"] + [_e(s) for s in labels], rows, right))
    if fit:
        st = fit.get("stationary") or []
        out.append(_facts([("records", (f"{_num(fit.get('records'))} in {_num(fit.get('sequences'))} sequence(s), "
                                        f"{_num(fit.get('transitions'))} transitions")),
                           ("smoothing", _e(fit.get("smoothing", ""))),
                           ("stationary law", ", ".join(f"{_e(s)}: {_num(v, digits=4)}" for s, v in zip(labels, st)))]))
    out.append(_warnings(rep.get("warnings") or fit.get("warnings") or []))
    return "".join(out) + "</section>"


def _blocks_text(mech: dict[str, Any]) -> str:
    parts = [(b["start"], b["start"] + len(b["redact_prob"]) - 1) for b in mech.get("blocks") or []]
    if not parts:
        return "none: every record is published"
    shown = ", ".join(f"{a:,}–{b:,}" for a, b in parts[:12])
    return shown + (f" … (+{len(parts) - 12} more)" if len(parts) > 12 else "")


def _regions_table(regions: list[dict[str, Any]] | None, key: str) -> str:
    if not regions:
        return ""
    rows = [[f"{r['rows'][0]:,}–{r['rows'][1]:,}", _num(r.get("published"), f"{key}.{i}.published"),
             _num(r.get("upper_bound"), f"{key}.{i}.upper_bound"), _num(r.get("gap"), digits=3),
             _e(r.get("solver", "")), _e(r.get("relaxation") or "its private records")] for i, r in enumerate(regions)]
    return ("<p>Region certificates: in each region, the expected number of records this design publishes and the "
            "most any ε-private mechanism can publish there; a bound computed for fewer of its private records "
            "(a relaxation: a run, or one record alone) holds for all of them.</p>"
            + _table(["rows", "published (expected)", "certified upper bound", "gap", "bound", "bound from"], rows,
                     {1, 2, 3}))


def _runs_table(runs: list[dict[str, Any]] | None, key: str) -> str:
    """Each run of adjacent private records: its window, what its design publishes there and its certified bound."""
    if not runs:
        return ""
    rows = []
    for i, r in enumerate(runs):
        (a, b), (lo, hi) = r["private"], r["window"]
        target = r.get("target_gap")
        stop = "time limit" if r.get("status") == "time_limit" else (
            f"target {target * (hi - lo + 1):.3g} records met" if isinstance(target, float) and _finite(target)
            else "one grid")
        rows.append([_num(b - a + 1), _num(hi - lo + 1), _num(r.get("published"), f"{key}.{i}.published"),
                     _num(r.get("upper_bound"), f"{key}.{i}.upper_bound"),
                     _num(r.get("upper_bound", 0.0) - r.get("published", 0.0), digits=3),
                     _e(r.get("solver", "")) + (f" ({_e(r['relaxation'])} alone)" if r.get("relaxation") else ""),
                     _e(stop)])
    return ("<p>Runs of adjacent private records, each designed on a window of rows around it by the run "
            "decomposition: what the run's design publishes in its window, and the most any mechanism private "
            "about the run can (the region certificates above carry these bounds to the sequence's rows).</p>"
            + _table(["private records in the run", "window (rows)", "published (expected)",
                      "certified upper bound", "gap", "bound", "refinement"], rows, {0, 1, 2, 3, 4}))


def _design_card(title: str, mech: dict[str, Any], *, key: str, plot: bool, facts: list[tuple[str, str]],
                 regions: list[dict[str, Any]] | None = None, regions_key: str = "regions",
                 blocks: str | None = None) -> str:
    """One distinct design: its figure, its blocks, its certified bound and its region certificates
    (``key`` and ``regions_key``: where the mechanism and the regions are in the report)."""
    from redactopt.interface.plots import design_figure

    cert = mech.get("certificate") or {}
    bound = "not recorded in the report"
    if _finite(cert.get("upper_bound")):
        bound = (f"{_num(cert['upper_bound'], key + '.certificate.upper_bound')} (gap "
                 f"{_num(cert.get('gap'), key + '.certificate.gap', 3)}; {_e(cert.get('solver', ''))}, valid for "
                 "every ε-private local redaction mechanism)")
    items = facts + [("utility", _num(mech.get("utility"), key + ".utility")),
                     ("exact leakage", _num(mech.get("leakage"), key + ".leakage", 10)),
                     ("certified upper bound", bound),
                     ("blocks (redactable rows)", blocks if blocks is not None else _blocks_text(mech))]
    out = [f'<div class="design"><h3>{title}</h3>', _facts(items)]
    if plot:
        out.append(_figure(design_figure(mech), f"design figure: {title}",
                           "Per record, Pr(⊥ | X_t = x) for every value x; every record outside the blocks is "
                           "published with certainty."))
    out.append(_regions_table(regions, regions_key))
    return "".join(out) + "</div>"


def _designs_binary(rep: dict[str, Any], max_designs: int) -> str:
    out = ['<section id="designs"><h2>Designs</h2>']
    shapes = rep.get("shapes") or []
    d = rep.get("designs") or {}
    if d:
        out.append(f"<p>{_num(d.get('shapes'), 'designs.shapes')} distinct design(s) for {_num(d.get('groups'))} "
                   f"group(s) of private records ({_num(d.get('computed'))} computed, {_num(d.get('reflected'))} "
                   f"mirror image(s); {_num(d.get('reused'))} group(s) reuse one). Each is verified exactly once and "
                   "placed unchanged, with the same leakage, wherever it is used.</p>")
    if isinstance(rep.get("mechanism"), dict):      # one sequence: its whole mechanism, in row numbers
        source = _get(rep, "design_info", "source")
        out.append(_design_card("The design", rep["mechanism"], key="mechanism", plot=True,
                                facts=[("how it was found", _e(source or rep.get("method", "")))],
                                regions=rep.get("regions")))
        out.append(_runs_table(_get(rep, "design_info", "runs"), "design_info.runs"))
        return "".join(out) + "</section>"
    if not shapes:                                   # older reports: each sequence carries its mechanism
        inline = [s for s in rep.get("sequences") or [] if isinstance(s.get("mechanism"), dict)]
        for j, s in enumerate(inline):
            out.append(_design_card(f"Sequence {_e(s.get('id'))}", s["mechanism"], key=f"sequences.{j}.mechanism",
                                    plot=j < max_designs, facts=[]))
        return "".join(out) + "</section>"
    order = sorted(range(len(shapes)), key=lambda i: -int(shapes[i].get("groups", 0)))
    for rank, i in enumerate(order):
        s = shapes[i]
        k = s.get("key") or {}
        mirror = _get(s, "design_info", "mirror_of")
        facts = [("used by", f"{_num(s.get('groups'))} group(s)"),
                 ("its sub-problem", (f"{_num(k.get('n'))} records: the private record(s) at offset(s) "
                                     f"{_e(', '.join(str(o) for o in (k.get('private_offsets') or [])[:8]))} with "
                                     f"{_num(k.get('left'))} record(s) before and {_num(k.get('right'))} after")),
                 ("expected redacted", _num(s.get("redacted_expected"), f"shapes.{i}.redacted_expected")),
                 ("origin", "mirror image of another design, verified again" if mirror else
                  _e(_get(s, "design_info", "source", default="")))]
        out.append(_design_card(f"Design {s.get('id', i)}", s.get("mechanism") or {}, key=f"shapes.{i}.mechanism",
                                plot=rank < max_designs, facts=facts, regions=s.get("regions"),
                                regions_key=f"shapes.{i}.regions"))
    if len(shapes) > max_designs:
        out.append(f"<p>{len(shapes) - max_designs} more design(s) listed without a figure (the "
                   f"{max_designs} most used are drawn).</p>")
    return "".join(out) + "</section>"


def _designs_k(rep: dict[str, Any], max_designs: int) -> str:
    out = ['<section id="designs"><h2>Designs</h2>']
    if isinstance(rep.get("mechanism"), dict):
        out.append(_design_card("The design", rep["mechanism"], key="mechanism", plot=True,
                                facts=[("method", _e(rep.get("method", "")))],
                                blocks=", ".join(f"{a:,}–{b:,}" for a, b in rep.get("blocks") or []) or None))
        return "".join(out) + "</section>"
    designs = rep.get("designs") or []
    uses = [0] * len(designs)
    for s in rep.get("sequences") or []:
        if isinstance(s.get("design"), int) and 0 <= s["design"] < len(designs):
            uses[s["design"]] += 1
    out.append(f"<p>{len(designs)} distinct design(s); sequences with the same length and private positions share "
               "one, computed and verified once.</p>")
    order = sorted(range(len(designs)), key=lambda i: -uses[i])
    for rank, i in enumerate(order):
        m = designs[i]
        out.append(_design_card(f"Design {i}", m, key=f"designs.{i}", plot=rank < max_designs,
                                facts=[("used by", f"{_num(uses[i])} sequence(s)"),
                                       ("records", _num(m.get("n"))),
                                       ("private records", _ranges(m.get("private") or []))]))
    if len(designs) > max_designs:
        out.append(f"<p>{len(designs) - max_designs} more design(s) listed without a figure.</p>")
    return "".join(out) + "</section>"


def _leakage_hist(ax: Any, values: np.ndarray, eps: float, what: str) -> None:
    """A histogram of leakages as percentages of ε, from at most 99% (or the least) to at least 100%:
    values equal to many digits fall in one bar, never on an unreadable offset axis."""
    from redactopt.interface.plots import FONT

    pct = 100.0 * values[np.isfinite(values)] / eps
    lo = math.floor(min(float(pct.min()), 99.0)) if pct.size else 99.0
    hi = max(100.0, float(pct.max())) if pct.size else 100.0
    ax.hist(pct, bins=40, range=(lo, hi + 1e-9), color="#1f4e9c")
    ax.axvline(100.0, color="#b3261e", ls="--", lw=1.4, label=f"ε = {eps:g}")
    ax.ticklabel_format(axis="x", useOffset=False, style="plain")
    ax.set_xlabel(f"{what} (% of ε)", fontsize=FONT)


def _leakage_figure(values: np.ndarray, eps: float, x: np.ndarray | None, xlabel: str) -> Any:
    """The exact leakage of each private record against ε (a histogram when there are many)."""
    from redactopt.interface.plots import FONT, SMALL, new_figure

    fig = new_figure(9.0, 3.4)
    ax = fig.add_subplot()
    if x is not None and values.size <= MAX_RECORDS_LISTED:
        ax.plot(x, values, "o", ms=4, color="#1f4e9c", label="exact leakage")
        ax.set_xlabel(xlabel, fontsize=FONT)
        ax.axhline(eps, color="#b3261e", ls="--", lw=1.4, label=f"ε = {eps:g}")
        ax.set_ylabel("leakage (nats)", fontsize=FONT)
    else:
        _leakage_hist(ax, values, eps, "exact leakage of a private record")
        ax.set_ylabel("private records", fontsize=FONT)
    ax.tick_params(labelsize=SMALL)
    scatter = x is not None and values.size <= MAX_RECORDS_LISTED
    ax.legend(fontsize=SMALL, loc="lower right" if scatter else "upper left")
    return fig


def _record_table(per: list[dict[str, Any]], eps: float, several: bool) -> str:
    """Every private record's exact leakage, four records to a row (``key``: its place in the report,
    default ``leakage.per_private.<i>.leakage``)."""
    cells = []
    for i, r in enumerate(per):
        seq = f"{_e(r.get('sequence'))} · " if several and r.get("sequence") is not None else ""
        who = f"{seq}{int(r['private']):,}"
        cells.append([who, _num(r.get("leakage"), r.get("key", f"leakage.per_private.{i}.leakage"), 10)])
    rows = [[c for pair in cells[j:j + 4] for c in pair] for j in range(0, len(cells), 4)]
    width = min(4, len(cells))
    for r in rows:
        r += [""] * (2 * width - len(r))
    head = (["sequence · record" if several else "record", "exact leakage"]) * width
    return _table(head, rows, {j for j in range(1, 2 * width, 2)})


def _leakage_section(rep: dict[str, Any], seqs: SequenceTable | None) -> str:
    eps = float(rep.get("eps", float("nan")))
    per = _get(rep, "leakage", "per_private")
    out = ['<section id="leakage"><h2>Exact leakage of every private record</h2>',
           (f"<p>Definition 1, computed exactly for the whole sequence: the most the release can move an observer's "
           f"log-odds about the private value, whatever they knew; each is at most ε = {_num(rep.get('eps'))}.</p>")]
    if isinstance(per, list) and per:
        several = len({r.get("sequence") for r in per}) > 1
        values = np.array([float(r["leakage"]) for r in per])
        x = None if several else np.array([int(r["private"]) for r in per])
        if not several or len(per) > 200:   # a few records of several sequences: the table says it all
            out.append(_figure(_leakage_figure(values, eps, x, "private record (row)"),
                               "exact leakage per private record"))
        if len(per) <= MAX_RECORDS_LISTED:
            out.append(_record_table(per, eps, several))
        else:
            out.append(f"<p>{len(per):,} private records: the histogram above shows them all.</p>")
    elif seqs is not None and seqs.record_leakage.size:
        v = seqs.record_leakage
        out.append(_facts([("private records", _num(int(v.size))),
                           ("worst", _num(float(np.nanmax(v)), digits=10)),
                           ("median", _num(float(np.nanmedian(v)), digits=10)),
                           ("least", _num(float(np.nanmin(v)), digits=10)),
                           ("within 10⁻⁶ of ε", _num(int(np.sum(v >= eps * (1 - 1e-6)))))]))
        out.append(_figure(_leakage_figure(v, eps, None, ""), "histogram of the exact leakage of every private record"))
        if v.size <= MAX_RECORDS_LISTED:
            order = np.lexsort((seqs.record_private, -np.nan_to_num(v, nan=-np.inf)))   # worst first
            per = [{"sequence": seqs.ids[seqs.record_sequence[i]], "private": int(seqs.record_private[i]),
                    "leakage": float(v[i]),
                    "key": f"seq[{seqs.ids[seqs.record_sequence[i]]}].leakage.{int(seqs.record_slot[i])}.leakage"}
                   for i in order]
            out.append("<p>Every private record, the highest leakage first:</p>" + _record_table(per, eps, True))
        else:
            out.append(f"<p>Per record, the values are in <code>{_e(seqs.source)}</code>; the worst sequences are "
                       "listed below with each of their private records.</p>")
    elif seqs is not None:
        out.append("<p>This report keeps each sequence's worst exact leakage (over its private records): see the "
                   "sequences below.</p>")
    else:
        out.append("<p>The report does not list the records' leakage one by one.</p>")
    return "".join(out) + "</section>"


def _ledger_section(rep: dict[str, Any]) -> str:
    """A ledgered release (``apply --ledger``, issue 39): every release of the ledger up to this one, its
    leakage alone and the cumulative leakage after it (empty for a release without a ledger)."""
    led = rep.get("ledger")
    if not isinstance(led, dict) or not isinstance(led.get("releases"), list):
        return ""
    total = led.get("total_eps")
    rows = [[_e(r.get("release")), _e(r.get("time") or ""), "yes" if r.get("consistent") else "no",
             _num(r.get("eps"), f"ledger.releases.{i}.eps"),
             _num(r.get("leakage_alone"), f"ledger.releases.{i}.leakage_alone", digits=10),
             _num(r.get("cumulative"), f"ledger.releases.{i}.cumulative", digits=10)]
            for i, r in enumerate(led["releases"])]
    u = led.get("utility") or {}
    out = ['<section id="ledger"><h2>Ledger: this release and the earlier ones</h2>',
           f"<p>Release {_e(led.get('release'))} of the ledger <code>{_e(led.get('file'))}</code>. The cumulative "
           "leakage is the exact leakage of every ledgered release together — independent local redactions "
           "compose into the product of their redaction probabilities (docs/mathematics.md §14), judged under "
           f"every chain of the ledger — and it is at most the total budget {_num(total)}; not a sum of the "
           "releases' leakages."
           + (" This release published again every value an earlier release published: it reveals what the "
              "composition reveals, alone or with them." if led.get("consistent") else "") + "</p>",
           _table(["release", "time", "consistent", "ε", "leakage alone", "cumulative"], rows, right={0, 3, 4, 5}),
           _facts([("total budget", _num(total, "ledger.total_eps")),
                   ("cumulative now", _num(led.get("cumulative"), "ledger.cumulative", digits=10)),
                   ("this release alone", _num(led.get("leakage_alone"), "ledger.leakage_alone", digits=10)),
                   ("expected utility", _num(u.get("expected"), "ledger.utility.expected")),
                   ("certified upper bound", _num(u.get("upper_bound"), "ledger.utility.upper_bound")),
                   ("gap", _num(u.get("gap"), "ledger.utility.gap"))]),
           "</section>"]
    return "".join(out)


def _sequence_figure(seqs: SequenceTable, eps: float) -> Any:
    from redactopt.interface.plots import FONT, SMALL, new_figure

    designed = seqs.private > 0
    fig = new_figure(9.0, 3.2)
    a1, a2 = fig.subplots(1, 2)
    _leakage_hist(a1, seqs.leakage_max[designed], eps, "worst exact leakage")
    a1.legend(fontsize=SMALL, loc="upper left")
    a2.hist(seqs.realised[designed], bins=40, color="#e67e22")
    a2.set_xlabel("realised utility of the sequence", fontsize=FONT)
    for ax in (a1, a2):
        ax.set_ylabel("sequences", fontsize=FONT)
        ax.tick_params(labelsize=SMALL)
    return fig


def _sequence_rows(seqs: SequenceTable, idx: np.ndarray) -> list[list[str]]:
    out = []
    for rank, (i, r) in enumerate(zip(idx, seqs.rows(idx)), 1):
        sid = str(r.get("id"))
        k = f"seq[{sid}]"
        per = r.get("leakage") if isinstance(r.get("leakage"), list) else []
        records = "; ".join(f"{int(x['private']):,}: {_num(x['leakage'], digits=10)}" for x in per[:4]) + \
            (f" … (+{len(per) - 4})" if len(per) > 4 else "")
        design = (", ".join(str(g.get("shape")) for g in r.get("groups") or []) if "groups" in r else
                  _e(r.get("design", "")))
        out.append([str(rank), _e(sid), _num(int(seqs.n[i])), _e(_ranges(r.get("private") or [], 3)),
                    _num(float(seqs.leakage_max[i]), f"{k}.leakage_max", 10), records,
                    _num(int(seqs.redacted[i]), f"{k}.redacted"),
                    _num(float(seqs.realised[i]), f"{k}.realised_utility"),
                    _num(float(seqs.expected[i]), f"{k}.expected_utility"),
                    _num(float(seqs.upper_bound[i]), f"{k}.upper_bound"),
                    _e(_ranges([v for b in r.get("blocks") or [] for v in range(b[0], b[1] + 1)], 3)) if r.get("blocks")
                    else "", design])
    return out


_SEQ_HEAD = ["#", "id", "records", "private", "worst leakage", "per private record", "redacted", "realised utility",
             "expected utility", "certified bound", "blocks", "design(s)"]


def _sequences_section(rep: dict[str, Any], seqs: SequenceTable | None, max_rows: int) -> str:
    count = rep.get("sequences_count") or (len(seqs) if seqs is not None else None)
    if seqs is None:
        if rep.get("sequences_file"):
            return (f'<section id="sequences"><h2>Sequences</h2><p>The per-sequence rows are in '
                    f"<code>{_e(rep['sequences_file'])}</code> beside the report, which was not found "
                    "(redactopt report --sequences FILE names it).</p></section>")
        if (count or 1) > 1:
            return ('<section id="sequences"><h2>Sequences</h2><p>The report does not keep per-sequence rows '
                    "(--report-sequences none).</p></section>")
        return ""
    designed = int(np.sum(seqs.private > 0))
    order = seqs.worst_first()
    shown = order[:max_rows]
    eps = float(rep.get("eps", float("nan")))
    real = seqs.realised[seqs.private > 0]
    counts = (f"{_num(len(seqs))} ({_num(designed)} with private records, "
              f"{_num(len(seqs) - designed)} released unchanged)")
    out = ['<section id="sequences"><h2>Sequences</h2>',
           _facts([("sequences", counts),
                   ("worst exact leakage", _num(float(np.nanmax(seqs.leakage_max)) if designed else None, digits=10)),
                   ("realised utility", (f"least {_num(float(real.min()) if designed else None)}, "
                                        f"median {_num(float(np.median(real)) if designed else None)}")),
                   ("rows redacted", f"{_num(int(seqs.redacted.sum()))} of {_num(int(seqs.n.sum()))}"),
                   ("read from", _e(seqs.source))])]
    if designed > 20:                    # fewer are all in the table below
        out.append(_figure(_sequence_figure(seqs, eps), "histograms over the sequences"))
    what = (f"all {designed:,} sequences with private records" if shown.size == designed else
            f"the {shown.size:,} worst of {designed:,} sequences with private records (all are in "
            f"<code>{_e(seqs.source)}</code>)")
    out.append(f"<h3>Worst first: {what}</h3><p>Ordered by exact leakage, highest first, then by realised "
               "utility, lowest first.</p>")
    out.append(_table(_SEQ_HEAD, _sequence_rows(seqs, shown), {2, 4, 6, 7, 8, 9}, "seq"))
    if designed > shown.size:
        low = np.flatnonzero(seqs.private > 0)
        low = low[np.argsort(seqs.realised[low], kind="stable")][: min(20, max_rows)]
        out.append(f"<h3>Lowest realised utility ({low.size} sequences)</h3>")
        out.append(_table(_SEQ_HEAD, _sequence_rows(seqs, low), {2, 4, 6, 7, 8, 9}, "seq"))
    return "".join(out) + "</section>"


def _columns_figure(figs: list[dict[str, Any]]) -> Any:
    """Per column not covered: the accuracy of its best single rule next to the majority rate."""
    from redactopt.interface.plots import FONT, SMALL, new_figure

    figs = [f for f in figs if _finite(f.get("accuracy"))]
    fig = new_figure(8.0, 1.2 + 0.55 * len(figs))
    ax = fig.add_subplot()
    y = np.arange(len(figs))
    ax.barh(y - 0.18, [100 * f["accuracy"] for f in figs], height=0.36, color="#b3261e",
            label="accuracy of its best single rule")
    ax.barh(y + 0.18, [100 * f["majority"] for f in figs], height=0.36, color="#9aa3b2", label="majority rate")
    ax.set_yticks(y, [f"{f['column']} ({f.get('role', '')})" for f in figs])
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("predicts the protected value (% of published rows)", fontsize=FONT)
    ax.tick_params(labelsize=SMALL)
    fig.legend(fontsize=SMALL, loc="outside lower center", ncols=2, frameon=False)
    return fig


def _columns_section(rep: dict[str, Any]) -> str:
    cols = rep.get("columns") or {}
    written = cols.get("written")
    out = ['<section id="columns"><h2>Columns: what is covered and what is not</h2>',
           _facts([("protected (the guarantee)",
                    ", ".join(_e(c) for c in cols.get("protected") or [rep.get("column")])),
                   ("written", "every column" if written == "all" else ", ".join(_e(c) for c in written or [])),
                   ("not written", ", ".join(_e(c) for c in cols.get("dropped") or []) or "none")])]
    for b in cols.get("bins") or []:
        out.append(f"<p>Column <b>{_e(b.get('column'))}</b> is released as its bin: "
                   + ", ".join(_e(x) for x in b.get("labels") or []) + " (edges "
                   + ", ".join(_num(x) for x in b.get("edges") or []) + ").</p>")
    figs = cols.get("not_covered") or []
    if not figs:
        out.append("<p>No other column is written: nothing in the file lies outside the guarantee "
                   "(beyond how well the model fits the data).</p>")
        return "".join(out) + "</section>"
    out.append("<p><b>Not covered by the guarantee</b>: these columns are written as they are. A column far above "
               "its majority rate gives the protected value away where it is redacted too.</p>")
    rows = []
    for i, f in enumerate(figs):
        k = f"columns.not_covered.{i}"
        lift = f["accuracy"] - f["majority"] if _finite(f.get("accuracy")) and _finite(f.get("majority")) else None
        rows.append([f"<b>{_e(f.get('column'))}</b>", _e(f.get("role", "")), _e(f.get("rule") or "no published rows"),
                     _num(f.get("accuracy"), f"{k}.accuracy", 4) + f" ({_pct(f.get('accuracy'), 1)})",
                     _num(f.get("majority"), f"{k}.majority", 4) + f" ({_pct(f.get('majority'), 1)})",
                     _num(lift, digits=3), _num(f.get("rows")) + (" (sampled)" if f.get("sampled") else "")])
    out.append(_table(["column", "role", "best single rule", "accuracy", "majority rate", "above majority",
                       "rows measured"], rows, {3, 4, 5, 6}))
    if any(_finite(f.get("accuracy")) for f in figs):
        out.append(_figure(_columns_figure(figs), "what the columns not covered reveal"))
    return "".join(out) + "</section>"


def _provenance(rep: dict[str, Any]) -> str:
    rnd = rep.get("randomness") or {}
    items = [("report format", f"<code>{_e(rep.get('format'))}</code>"), ("input", _e(rep.get("input", ""))),
             ("output", _e(rep.get("output", ""))), ("column(s)", _e(rep.get("column", ""))),
             ("sequences by", _e(rep.get("by") or "")), ("private rows from", _e(rep.get("private_column") or "")),
             ("method", _e(rep.get("method", ""))), ("randomness", _e(rnd.get("source", ""))),
             ("design seconds", _num(rep.get("design_seconds"), digits=3)),
             ("write seconds", _num(rep.get("apply_seconds"), digits=3))]
    return ('<section id="provenance"><h2>Provenance</h2>' + _facts(items)
            + "<p>Check the release independently: <code>redactopt audit REPORT.json</code> re-verifies every "
              "design exactly.</p></section>")


def _top(rep: dict[str, Any]) -> tuple[str, str]:
    """The page's first line (the report's ``notice``: it names the private rows) and, under the title,
    every warning of the release and what its pattern of redactions reveals (issue 36)."""
    first = rep.get("notice") or ("CONFIDENTIAL: names the private rows — do not publish with the release"
                                  if rep.get("format") != "redactopt.release.public-report/1" else "")
    banner = f'<p class="confidential" id="notice">{_e(first)}</p>' if first else ""
    items = rep.get("warnings") or []
    out = []
    if items:
        out.append(f'<section id="warnings"><h2>Warnings ({len(items)})</h2>{_warnings(items)}</section>')
    rev = rep.get("reveals") or {}
    if rev.get("statement"):
        cls = "pass" if rev.get("positions_protected") else "fail"
        head = "hidden among decoys" if rev.get("positions_protected") else "not protected"
        out.append(f'<section id="reveals"><h2>What the release reveals about the opt-out</h2><p>Positions of the '
                   f'private records: <span class="{cls}">{head}</span>.</p><p>{_e(rev["statement"])}</p></section>')
    return banner, "\n".join(out)


def report_html(report: dict[str, Any], *, sequences_path: str | os.PathLike[str] | None = None,
                max_sequences: int = MAX_SEQUENCES_SHOWN, max_designs: int = MAX_DESIGNS_PLOTTED,
                title: str | None = None) -> str:
    """One self-contained HTML page for a release report (module docstring).

    Parameters
    ----------
    report : dict
        A release report as :func:`redactopt.apply_table`, :func:`redactopt.apply_frame`,
        ``kapply_table`` or ``kapply_frame`` return it (or as read back from its JSON file).
    sequences_path : path, optional
        The report's side file of per-sequence rows (``REPORT.sequences.parquet`` or ``.jsonl``),
        read when the report does not list its sequences itself (:func:`load_report` finds it).
    max_sequences : int
        Sequences listed one by one, worst first.
    max_designs : int
        Distinct designs drawn, the most used first.
    title : str, optional
        The page's title (default: the protected column and the input's name).

    Returns
    -------
    str
        The page: no script, nothing fetched, figures as SVG ``data:`` URLs.
    """
    if not isinstance(report, dict) or report.get("format") not in report_formats():
        fmt = report.get("format") if isinstance(report, dict) else type(report).__name__
        raise ValueError(f"not a release report (format {fmt!r}; expected an apply report)")
    if max_sequences < 1 or max_designs < 0:
        raise ValueError(f"max_sequences must be >= 1 and max_designs >= 0, got {max_sequences}, {max_designs}")
    seqs = read_sequences(report, sequences_path)
    k = _is_k(report)
    name = title or f"Release report: {report.get('column', '')} of {Path(str(report.get('input', ''))).name}"
    sections = [_overview(report), (_chain_k if k else _chain_binary)(report),
                (_designs_k if k else _designs_binary)(report, max_designs), _leakage_section(report, seqs),
                _sequences_section(report, seqs, max_sequences), _columns_section(report), _provenance(report)]
    sections.insert(4, _ledger_section(report))
    nav = " ".join(f'<a href="#{a}">{b}</a>' for a, b in (
        ("summary", "Summary"), ("chain", "Chain"), ("designs", "Designs"), ("leakage", "Leakage"),
        ("ledger", "Ledger"), ("sequences", "Sequences"), ("columns", "Columns"), ("provenance", "Provenance"))
        if (a != "sequences" or sections[5]) and (a != "ledger" or sections[4]))
    sub = (f"{_num(report.get('rows'))} rows · ε = {_num(report.get('eps'))} · "
           f"{'k-state' if k else 'binary'} release · redactopt {_e(__version__)}")
    banner, top = _top(report)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
            "style-src 'unsafe-inline'\">"
            f"<title>{_e(name)}</title><style>{_CSS}</style></head>\n<body><main>{banner}"
            f"<h1>{_e(name)}</h1><p class=\"sub\">{sub}</p><nav>{nav}</nav>\n"
            + "\n".join(s for s in [top] + sections if s)
            + f"\n<footer>Generated by redactopt {_e(__version__)} from the release's JSON report. Self-contained: "
              "no script, nothing fetched; prints as it shows.</footer></main></body></html>\n")


def check_html_path(path: str | os.PathLike[str], *, force: bool = False, option: str = "--html") -> Path | None:
    """Refuse an HTML output path before any work (``None`` for ``-``, standard output).

    ``ValueError`` (one line) for a name not ending in ``.html``/``.htm`` or a missing, unwritable
    or directory path; ``FileExistsError`` for an existing file without ``force``.
    """
    if str(path) == STDIO:
        return None
    p = Path(path)
    if p.suffix.lower() not in HTML_EXTENSIONS:
        what = f"extension '{p.suffix}'" if p.suffix else "no extension"
        raise ValueError(f"{option} {os.fspath(path)}: needs a file name ending in .html or .htm ({what})")
    return check_output_path(path, force=force, option=option)


def write_report_html(report: dict[str, Any], path: str | os.PathLike[str], *,
                      sequences_path: str | os.PathLike[str] | None = None, force: bool = False,
                      **options: Any) -> Path | None:
    """Write :func:`report_html` to ``path`` (``-``: standard output) through a temporary file and a rename.

    Checks as :func:`check_html_path` before anything is built; ``options`` go to
    :func:`report_html`.  Returns the path written (``None`` for standard output).
    """
    p = check_html_path(path, force=force)
    text = report_html(report, sequences_path=sequences_path, **options)
    try:
        write_text_atomic(STDIO if p is None else p, text, force=force)
    except FileExistsError:
        raise
    except OSError as exc:
        if p is None:
            raise
        raise ValueError(f"{p}: cannot write: {exc.strerror or exc}") from None
    return p


def report_formats() -> tuple[str, ...]:
    """The ``format`` values of the release reports :func:`report_html` reads."""
    return REPORT_FORMATS + (KREPORT_FORMAT,)


def load_report(path: str | os.PathLike[str]) -> tuple[dict[str, Any], Path | None]:
    """A release report read from its JSON file, and the path of its side file of sequences.

    The side file is the one the report names (``sequences_file``) beside it, ``None`` when it
    names none or the file is not there (the page then says where the rows were).  ``ValueError``
    (one line) for a file that is not JSON or not a release report.
    """
    p = check_input_path(path)
    if p.is_dir():
        raise ValueError(f"{p}: is a directory, expected a release report (JSON)")
    try:
        report = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{p}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{p}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(report, dict) or report.get("format") not in report_formats():
        fmt = report.get("format") if isinstance(report, dict) else None
        raise ValueError(f"{p}: not a release report (format {fmt!r}); give the --report file of redactopt apply")
    side = report.get("sequences_file")
    if side is None:
        return report, None
    if not isinstance(side, str) or Path(side).name != side:
        raise ValueError(f"{p}: field 'sequences_file' must be a file name beside the report, got {side!r}")
    return report, (p.parent / side) if (p.parent / side).is_file() else None
