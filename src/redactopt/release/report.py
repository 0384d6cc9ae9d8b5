"""The report of a release (format ``redactopt.release.apply-report/3``), built and written.

The report is one JSON summary: the chain (fitted or given), ε, the realised and expected
utility with a certified upper bound, the worst exact leakage, where the randomness came
from, how many designs were computed and reused (``designs``), and ``shapes``: every
distinct design once — its key (:class:`~redactopt.engine.cache.DesignKey`), its mechanism
on its sub-problem in the sparse mechanism file format (:mod:`redactopt.io`,
``redactopt.mechanism/3``), the exact leakage about each of its private records and its
region certificates.  Per sequence: its private records, their exact leakage (the placed
shape's, which placing does not change: :mod:`redactopt.engine.cache`), the rows that can
be redacted, the groups (a shape id, the first private record, the records always
redacted beyond the shape) and the certificate.  Up to :data:`INLINE_SEQUENCES` designed
sequences these rows are in the summary, each with its whole mechanism; beyond that they
go to a columnar file beside it (Parquet, or JSON lines), ``<report>.sequences.parquet``,
named by ``sequences_file``.  A report on one sequence also carries that sequence's
``mechanism``, ``blocks``, ``regions`` and ``design_info`` at the top level.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from redactopt import _progress
from redactopt.io import (
    REPORT_FORMAT,
    STDIO,
    atomic_open,
    atomic_path,
    design_to_dict,
    mechanism_to_dict,
    write_text_atomic,
)
from redactopt.release.bits import BitSource
from redactopt.release.plan import ReleasePlan

__all__ = ["REPORT_FORMAT", "NOT_FOR_RELEASE", "INLINE_SEQUENCES", "SEQUENCE_FORMATS", "ROWS_BATCH", "build_report",
           "write_report", "sequences_path", "rows_schema", "jsonable", "report_text", "shape_entry", "shape_entries"]

NOT_FOR_RELEASE = "NOT FOR REAL RELEASES: seeded pseudo-random draws (--seed) are reproducible by anyone who knows the seed"

#: Up to this many designed sequences, the report holds each sequence with its whole mechanism.
INLINE_SEQUENCES = 20

#: Where the per-sequence rows go: ``auto`` (inline up to INLINE_SEQUENCES designed sequences or
#: without a report file, else Parquet), ``inline``, ``parquet``, ``jsonl``, ``none``.
SEQUENCE_FORMATS = ("auto", "inline", "parquet", "jsonl", "none")


def _json_id(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return str(v)


def jsonable(obj: Any) -> Any:
    """``obj`` with numpy values as Python ones and non-finite floats as ``None`` (for JSON)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _certificate(plan: ReleasePlan, c: int) -> dict[str, Any]:
    n = int(plan.n[c])
    ub = float(plan.upper_bound[c]) / n
    u = 1.0 - float(plan.mass[c]) / n
    return {"upper_bound": ub, "gap": max(0.0, ub - u), "solver": "regions", "scope": "all", "stopped": False}


def _sequence_row(plan: ReleasePlan, c: int, redacted: int) -> dict[str, Any]:
    """The compact summary of sequence ``c`` (1-based positions), the same inline and in the columnar file."""
    n = int(plan.n[c])
    priv = plan.private_of(c)
    row: dict[str, Any] = {"id": _json_id(plan.state.ids[c]), "n": n, "private": [p + 1 for p in priv],
                           "redacted": int(redacted), "realised_utility": 1.0 - redacted / n,
                           "expected_utility": 1.0 - float(plan.mass[c]) / n}
    if not priv:
        row.update(leakage=[], leakage_max=None, blocks=[], groups=[], upper_bound=None, gap=None)
        return row
    cert = _certificate(plan, c)
    row.update(
        leakage=[{"private": p + 1, "leakage": v} for p, v in zip(priv, plan.per_private(c))],
        leakage_max=float(plan.leak_max[c]),
        blocks=[[a + 1, b + 1] for a, b in plan.block_ranges(c)],
        groups=[{"shape": int(plan.g_shape[g]), "first": int(plan.g_first[g]) + 1,
                 "wipe": [int(plan.g_wipe[g, 0]), int(plan.g_wipe[g, 1])]} for g in plan.groups_of(c)],
        upper_bound=cert["upper_bound"], gap=cert["gap"])
    return row


def _sequence_mechanism(plan: ReleasePlan, c: int) -> dict[str, Any]:
    """The whole mechanism of sequence ``c`` as a ``redactopt.mechanism/3`` object, with its certificate."""
    per = plan.per_private(c)
    n = int(plan.n[c])
    d = mechanism_to_dict(plan.chain, plan.sparse_rows(c), private=plan.private_of(c), eps=plan.eps,
                          method=plan.method, utility=1.0 - float(plan.mass[c]) / n, leakage=max(per))
    if plan.chain_class is not None:  # designed and verified for every chain of the class: audited for it
        d["chain_class"] = plan.chain_class.to_dict()
    d["certificate"] = _certificate(plan, c)
    return d


def _design_info(plan: ReleasePlan, c: int) -> dict[str, Any]:
    groups = list(plan.groups_of(c))
    if len(groups) == 1:
        return jsonable(plan.choices[groups[0]].shape.design.info)
    return {"groups": [dict(jsonable(plan.choices[g].shape.design.info), shape=int(plan.g_shape[g]))
                       for g in groups]}


def _full_row(plan: ReleasePlan, c: int, redacted: int) -> dict[str, Any]:
    """:func:`_sequence_row` with the sequence's mechanism, regions and design information (inline reports)."""
    row = _sequence_row(plan, c, redacted)
    if not row["private"]:
        row["mechanism"] = None
        return row
    lo, hi = row["blocks"][0][0], row["blocks"][-1][1]
    row["window"] = [lo, hi]
    row["regions"] = [r.to_dict() for r in plan.regions_of(c)]
    row["design_info"] = _design_info(plan, c)
    row["mechanism"] = _sequence_mechanism(plan, c)
    return row


def shape_entry(plan: ReleasePlan, i: int, uses: int) -> dict[str, Any]:
    """Distinct design ``i`` of a plan: its key, how many groups use it, its exact leakage per private
    offset, its regions (none on more than two states) and its mechanism on its own sub-problem."""
    shape = plan.shapes[i]
    d = shape.design
    return {"id": i, "key": shape.key.to_dict(), "groups": uses, "redacted_expected": shape.mass,
            "leakage": [{"private": p + 1, "leakage": v} for p, v in zip(d.private, d.per_private)],
            "regions": [r.to_dict() for r in d.regions or []], "design_info": jsonable(d.info),
            "mechanism": design_to_dict(d)}


def shape_entries(plan: ReleasePlan) -> list[dict[str, Any]]:
    """:func:`shape_entry` of every distinct design of a plan."""
    uses = np.bincount(plan.g_shape, minlength=len(plan.shapes))
    return [shape_entry(plan, i, int(uses[i])) for i in range(len(plan.shapes))]


@_progress.timed("report")
def build_report(plan: ReleasePlan, *, redacted: np.ndarray, source: BitSource, seed: int | None,
                 extra: dict[str, Any], sequences: str = "auto", to_file: bool = False,
                 ) -> tuple[dict[str, Any], Iterator[dict[str, Any]] | None]:
    """The JSON summary of a release (format ``redactopt.release.apply-report/3``) and, when they
    go to a file of their own, the per-sequence rows (else ``None``): an iterator, built as
    :func:`write_report` writes them, so that they are never all in memory.

    ``sequences`` is one of :data:`SEQUENCE_FORMATS`; ``to_file``: a report file will be
    written (``auto`` puts many sequences in a Parquet file beside it only then).
    """
    if sequences not in SEQUENCE_FORMATS:
        raise ValueError(f"report sequences must be one of {', '.join(SEQUENCE_FORMATS)}, got {sequences!r}")
    chain_d: dict[str, Any] = {"alpha": plan.chain.alpha, "beta": plan.chain.beta,
                               "source": "fitted" if plan.fit is not None else "given"}
    if plan.fit is not None:
        chain_d["fit"] = plan.fit.to_dict()
    if plan.chain_class is not None:
        # the designs are private for every chain of the box (leakage below: the worst over it);
        # robustness: expected redacted records of this release and of the point design, both
        # at the nominal chain
        chain_d["class"] = plan.chain_class.to_dict()
        chain_d["deciding"] = [{"alpha": c.alpha, "beta": c.beta} for c in plan.chain_class.deciding()]
        chain_d["robustness"] = dict(plan.info.get("robustness", {}))
    total = int(plan.n.sum())
    red = int(redacted.sum())
    designed = plan.designed()
    ub = float(plan.upper_bound.sum()) / total
    expected = plan.expected_utility()
    worst = int(designed[np.argmax(plan.leak_max[designed])])
    rep: dict[str, Any] = {"format": REPORT_FORMAT}
    rep.update(extra)
    rep.update({
        "rows": total,
        "eps": plan.eps,
        "method": plan.method,
        "chain": chain_d,
        "seed": seed,
        "randomness": {"source": source.description, "secure": bool(source.secure)},
        "utility": {"expected": expected, "realised": 1.0 - red / total if total else 1.0, "redacted": red,
                    "upper_bound": ub, "gap": max(0.0, ub - expected)},
        "design_seconds": plan.design_seconds,
        "designs": dict(plan.info.get("designs", {})),
        "sequences_count": len(plan.state.ids),
        "designed_sequences": int(designed.size),
    })
    if seed is not None:
        rep["label"] = NOT_FOR_RELEASE
        rep["randomness"]["label"] = NOT_FOR_RELEASE
    rep["leakage"] = {"max": float(plan.leak_max[worst]), "sequence": _json_id(plan.state.ids[worst]),
                      "private_records": int(sum(len(g) for g in plan.g_private))}
    rep["shapes"] = shape_entries(plan)
    if sequences == "auto":
        sequences = "inline" if designed.size <= INLINE_SEQUENCES or not to_file else "parquet"
    if len(plan.state.ids) == 1:
        row = _full_row(plan, 0, red)
        rep["leakage"]["per_private"] = [dict(x, sequence=row["id"]) for x in row["leakage"]]
        for k in ("mechanism", "window", "blocks", "regions", "design_info"):
            rep[k] = row.get(k)
        return rep, None
    if sequences == "none":
        return rep, None
    if sequences == "inline":
        full = designed.size <= INLINE_SEQUENCES
        rows = [(_full_row if full else _sequence_row)(plan, c, int(redacted[c])) for c in range(len(plan.state.ids))]
        if full:
            rep["leakage"]["per_private"] = [dict(x, sequence=r["id"]) for r in rows for x in r["leakage"]]
        rep["sequences"] = rows
        return rep, None
    rep["sequences_format"] = sequences
    return rep, (_sequence_row(plan, c, int(redacted[c])) for c in range(len(plan.state.ids)))


def sequences_path(report: str | os.PathLike[str], fmt: str) -> Path:
    """Where the per-sequence rows of a report go: ``rep.json`` -> ``rep.sequences.parquet`` (or ``.jsonl``)."""
    p = Path(report)
    stem = p.name[: -len(p.suffix)] if p.suffix else p.name
    return p.with_name(f"{stem}.sequences.{fmt}")


#: Per-sequence rows are written this many at a time (memory holds one batch, whatever the sequences).
ROWS_BATCH = 10_000


def rows_schema(id_type: Any) -> Any:
    """The Arrow schema of the per-sequence rows (:func:`_sequence_row`), ids of type ``id_type``."""
    import pyarrow as pa

    i64, f64 = pa.int64(), pa.float64()
    return pa.schema([
        ("id", id_type), ("n", i64), ("private", pa.list_(i64)), ("redacted", i64), ("realised_utility", f64),
        ("expected_utility", f64), ("leakage", pa.list_(pa.struct([("private", i64), ("leakage", f64)]))),
        ("leakage_max", f64), ("blocks", pa.list_(pa.list_(i64))),
        ("groups", pa.list_(pa.struct([("shape", i64), ("first", i64), ("wipe", pa.list_(i64))]))),
        ("upper_bound", f64), ("gap", f64)])


def _batches(rows: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for r in rows:
        batch.append(r)
        if len(batch) == ROWS_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _write_rows(path: Path, rows: Iterable[dict[str, Any]], fmt: str, force: bool) -> None:
    if fmt == "jsonl":
        with atomic_open(path, force=force) as fh:
            for r in rows:
                fh.write(json.dumps(jsonable(r)) + "\n")
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    with atomic_path(path, force=force) as tmp:
        writer = None
        try:
            for batch in _batches(rows):
                if writer is None:  # the ids' type from the first batch (one column of the input: one type)
                    writer = pq.ParquetWriter(tmp, rows_schema(pa.array([r["id"] for r in batch]).type))
                writer.write_table(pa.Table.from_pylist(batch, schema=writer.schema))
            if writer is None:
                writer = pq.ParquetWriter(tmp, rows_schema(pa.string()))
        finally:
            if writer is not None:
                writer.close()


@_progress.timed("report")
def write_report(path: str | os.PathLike[str], report: dict[str, Any], *, force: bool = False,
                 rows: Iterable[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Write a report as JSON through a temporary file and a rename (``-``: standard output).

    ``rows`` (from :func:`build_report`) go first to :func:`sequences_path` in the report's
    ``sequences_format``; the summary then names that file in ``sequences_file``.  Returns
    the summary as written.
    """
    if rows is not None:
        if str(path) == STDIO:
            raise ValueError("per-sequence rows in a file of their own need a report file, not standard output")
        fmt = report["sequences_format"]
        side = sequences_path(path, fmt)
        _write_rows(side, rows, fmt, force)
        report = dict(report, sequences_file=side.name)
    write_text_atomic(path, report_text(report), force=force)
    return report


def report_text(rep: dict[str, Any]) -> str:
    """A report as JSON with its ``notice`` (if it has one) on the file's first line: still one JSON object."""
    if "notice" not in rep:
        return json.dumps(jsonable(rep), indent=2) + "\n"
    rest = {k: v for k, v in rep.items() if k != "notice"}
    body = json.dumps(jsonable(rest), indent=2)
    head = '{"notice": ' + json.dumps(rep["notice"], ensure_ascii=False)
    return head + ("}\n" if body == "{}" else ",\n" + body[2:] + "\n")


def fit_rows_text(source: dict[str, Any]) -> str | None:
    """Which rows a chain was fitted on, in words (``None`` for a given chain)."""
    kind = source.get("source")
    if kind == "fit-on":
        return f"the separate table {source.get('table')} ({source['rows']} rows)"
    if kind != "published rows":
        return None
    where = ("the sequences without private records" if source["radius"] is None else
             f"the rows more than {source['radius']} records from every private record")
    return f"{source['rows']} of {source['of_rows']} rows, {where} (all published with certainty)"
