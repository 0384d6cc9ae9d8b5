"""Several releases of the same rows: what they reveal together (issue 39; docs/mathematics.md, §14).

:func:`read_release` reads one release report of a local mechanism — ``redactopt.release.apply-report/1``
to ``/3`` (``apply --report``, one sequence or several with ``--by``, with or without a ``sequences_file``)
or ``redactopt.release.kapply-report/1`` (categorical, several columns, ``--varies-with``) — into its
sequences: id, length, private records, chain (or class of chains) and redaction table.
:func:`compose_releases` checks that several releases describe the same rows and returns, per private
record, the exact cumulative leakage of their composition (:func:`redactopt.judge.compose.compose_audit`:
independent local redactions compose exactly into the product mechanism) and each release's leakage alone.

Reports of scan, owner or holder releases and public reports are refused: the product rule is exact for
local redactions only, and for other mechanisms on correlated data the sum of the leakages is *not* a
valid bound (§14 gives a counterexample), so nothing sound is stated.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from redactopt.io import REPORT_FORMATS, load_json, read_mechanisms
from redactopt.io import sequence_rows as _sequence_rows
from redactopt.judge.compose import compose_audit

__all__ = ["ReleasedSequence", "Release", "read_release", "compose_releases", "ComposeError"]


class ComposeError(ValueError):
    """Releases that cannot be composed (different rows, shared seed, a mechanism class without a sound rule)."""


@dataclass(frozen=True)
class ReleasedSequence:
    """One sequence of a release: ``n`` records, 0-based ``private`` ones, the chain (or class) it was
    designed and judged under and its redaction table (``None`` when it has no private record: all published)."""

    id: Any
    n: int
    private: tuple[int, ...]
    judge: Any
    rows: Any


@dataclass(frozen=True)
class Release:
    """A release report read for composition: its file, format, total rows, seed (``None``: secure source),
    budget, protected column(s) and sequences in report order."""

    path: str
    format: str
    rows: int
    seed: Any
    eps: float
    column: Any
    sequences: tuple[ReleasedSequence, ...]


_REFUSED = {
    "redactopt.class-release/1": "a scan/owner/holder release: the product rule is exact for local redactions only, "
                                 "and for other mechanisms on correlated data no sound composition bound is known "
                                 "here (the sum of leakages is not one: docs/mathematics.md §14)",
    "redactopt.class-mechanism/1": "a scan/owner/holder mechanism: the product rule is exact for local redactions "
                                   "only (docs/mathematics.md §14)",
    "redactopt.release.public-report/1": "a public report: it does not say where the private records are; compose "
                                         "the confidential reports",
}


def read_release(path: str | os.PathLike[str]) -> Release:
    """One release report of a local mechanism, sequence by sequence (module docstring)."""
    d, where = load_json(path)
    fmt = d.get("format") if isinstance(d, dict) else None
    if fmt in _REFUSED:
        raise ComposeError(f"{where}: {_REFUSED[fmt]}")
    from redactopt.kio import KREPORT_FORMAT, kmechanisms_of

    seed = None
    if isinstance(d, dict):
        seed = d.get("seed", (d.get("randomness") or {}).get("seed") if isinstance(d.get("randomness"), dict) else None)
    if fmt == KREPORT_FORMAT:
        mechs = kmechanisms_of(d, where)
        if "designs" in d:
            by_id = {sid: mf for ids, mf in mechs for sid in ids}
            seqs = tuple(_sequence(s.get("id"), s.get("rows"), s.get("private"), by_id.get(str(s.get("id"))), where)
                         for s in d["sequences"])
        else:
            mf = mechs[0][1]
            seqs = (ReleasedSequence(None, mf.n, tuple(mf.private), mf.chain, mf.redact_prob),)
        return Release(where, fmt, int(d.get("rows", sum(s.n for s in seqs))), seed, float(d["eps"]),
                       d.get("column"), seqs)
    mechs = read_mechanisms(path)  # validates the mechanisms (and rebuilds /3 sequences from their shapes)
    if fmt in REPORT_FORMATS and ("sequences" in d or "sequences_file" in d):
        rows = d["sequences"] if "sequences" in d else _sequence_rows(path, d, where)
        by_id = {sid: mf for sid, mf in mechs}
        seqs = tuple(_sequence(s.get("id"), s.get("n"), s.get("private"), by_id.get(s.get("id")), where)
                     for s in rows if isinstance(s, dict))
    else:
        mf = mechs[0][1]
        seqs = (ReleasedSequence(None, mf.n, tuple(mf.private), mf.chain_class or mf.chain, mf.redact_prob),)
    eps = d.get("eps", mechs[0][1].eps) if isinstance(d, dict) else mechs[0][1].eps
    return Release(where, str(fmt), int(d.get("rows", sum(s.n for s in seqs))), seed, float(eps), d.get("column"),
                   seqs)


def _sequence(sid: Any, n: Any, private: Any, mf: Any, where: str) -> ReleasedSequence:
    if mf is not None:
        return ReleasedSequence(sid, mf.n, tuple(mf.private), getattr(mf, "chain_class", None) or mf.chain,
                                mf.redact_prob)
    if private:
        raise ComposeError(f"{where}: sequence {sid!r} has private records {private!r} but no mechanism")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ComposeError(f"{where}: sequence {sid!r} has no length (field 'n' or 'rows')")
    return ReleasedSequence(sid, n, (), None, None)


def _same_rows(releases: list[Release]) -> None:
    """Refuse, in one line, releases that do not describe the same rows, or whose draws are not independent."""
    first = releases[0]
    for r in releases[1:]:
        if r.rows != first.rows:
            raise ComposeError(f"{r.path} has {r.rows} rows but {first.path} has {first.rows}: not the same rows")
        if r.column != first.column:
            raise ComposeError(f"{r.path} protects {r.column!r} but {first.path} protects {first.column!r}")
        ids, ids0 = [s.id for s in r.sequences], [s.id for s in first.sequences]
        if ids != ids0:
            diff = next((a, b) for a, b in zip(ids + [None] * len(ids0), ids0 + [None] * len(ids)) if a != b)
            raise ComposeError(f"{r.path} and {first.path} hold different sequences (first difference: "
                               f"{diff[0]!r} against {diff[1]!r})")
        for s, s0 in zip(r.sequences, first.sequences):
            if s.n != s0.n:
                raise ComposeError(f"sequence {s.id!r}: {s.n} rows in {r.path} but {s0.n} in {first.path}")
            if s.private != s0.private:
                raise ComposeError(f"sequence {s.id!r}: private records {_pos(s.private)} in {r.path} but "
                                   f"{_pos(s0.private)} in {first.path}")
            if s.judge is not None and s0.judge is not None and _k(s.judge) != _k(s0.judge):
                raise ComposeError(f"sequence {s.id!r}: a {_k(s.judge)}-state chain in {r.path} but a "
                                   f"{_k(s0.judge)}-state one in {first.path}")
    seen: dict[Any, str] = {}
    for r in releases:
        if r.seed is not None:
            if r.seed in seen:
                raise ComposeError(f"{r.path} and {seen[r.seed]} were drawn from the same seed ({r.seed!r}): their "
                                   "draws are not independent, so their composition is not the product mechanism")
            seen[r.seed] = r.path


def _k(judge: Any) -> int:
    return judge.nominal.k if hasattr(judge, "nominal") else judge.k


def _pos(private: tuple[int, ...]) -> str:
    shown = ",".join(str(p + 1) for p in private[:8])
    return f"[{shown}{',...' if len(private) > 8 else ''}]"


def compose_releases(paths: list[str], *, eps: float | None = None) -> dict[str, Any]:
    """The composed audit of several release reports of the same rows, JSON-ready (1-based positions).

    ``records`` lists every private record: its sequence, position, the cumulative exact leakage
    (the product mechanism's, worst over the chains judged), the leakage under each chain when the
    releases' chains differ, and each release's leakage alone.  ``worst`` and ``worst_alone`` summarise;
    with ``eps``, ``passed`` is a proof that every cumulative leakage is at most ``eps`` under every chain
    judged (after the product's rounding allowance), else ``None``.
    """
    if len(paths) < 2:
        raise ComposeError("--compose needs at least two release reports")
    releases = [read_release(p) for p in paths]
    _same_rows(releases)
    records, passed, chains = [], True, 1
    for j, s0 in enumerate(releases[0].sequences):
        if not s0.private:
            continue
        seqs = [r.sequences[j] for r in releases]
        ca = compose_audit([(s.judge, s.rows) for s in seqs], s0.private, eps=eps)
        chains = max(chains, len(ca.judges))
        passed = passed and bool(ca.passed)
        for p in ca.private:
            rec: dict[str, Any] = {"sequence": s0.id, "private": p + 1, "cumulative": ca.cumulative[p],
                                   "alone": [a[p] for a in ca.alone], "rounding_allowance": ca.allowance[p]}
            if len(ca.judges) > 1:
                rec["under_each_chain"] = [u[p] for u in ca.under]
            records.append(rec)
    if not records:
        raise ComposeError(f"{releases[0].path}: no sequence holds a private record")
    worst = max(records, key=lambda r: r["cumulative"])
    alone = [max(r["alone"][i] for r in records) for i in range(len(releases))]
    return {
        "format": "redactopt.compose-audit/1",
        "releases": [{"report": r.path, "eps": r.eps, "leakage_alone": a, "seed": r.seed}
                     for r, a in zip(releases, alone)],
        "rows": releases[0].rows,
        "private_records": len(records),
        "chains": ("one chain: every release was judged under the same one" if chains == 1 else
                   "the releases' chains differ: the product is judged exactly under each release's chain (or its "
                   "class's deciding chains); 'cumulative' is the largest, exact if the data follow any one of them"),
        "worst": {"sequence": worst["sequence"], "private": worst["private"], "cumulative": worst["cumulative"]},
        "worst_alone": max(alone),
        "sum_alone": math.fsum(alone),
        "eps": eps,
        "passed": None if eps is None else bool(passed),
        "records": records,
    }
