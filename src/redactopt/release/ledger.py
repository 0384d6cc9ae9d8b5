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

__all__ = ["ReleasedSequence", "Release", "read_release", "compose_releases", "ComposeError", "audit_ledger"]


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
    factors: tuple = ()


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
    ledger: tuple[str, int] | None = None


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
    led = _ledger_of(d, where)
    if fmt in REPORT_FORMATS and ("sequences" in d or "sequences_file" in d):
        rows = d["sequences"] if "sequences" in d else _sequence_rows(path, d, where)
        by_id = {sid: mf for sid, mf in mechs}
        seqs = tuple(_with_factors(_sequence(s.get("id"), s.get("n"), s.get("private"), by_id.get(s.get("id")),
                                             where), s.get("mechanism"), led, where)
                     for s in rows if isinstance(s, dict))
    else:
        mf = mechs[0][1]
        seqs = (_with_factors(ReleasedSequence(None, mf.n, tuple(mf.private), mf.chain_class or mf.chain,
                                               mf.redact_prob), d.get("mechanism"), led, where),)
    eps = d.get("eps", mechs[0][1].eps) if isinstance(d, dict) else mechs[0][1].eps
    return Release(where, str(fmt), int(d.get("rows", sum(s.n for s in seqs))), seed, float(eps), d.get("column"),
                   seqs, led)


def _ledger_of(d: Any, where: str) -> tuple[str, int] | None:
    """A ledgered release's ``(ledger id, release number)`` (report field ``ledger``), else ``None``."""
    raw = d.get("ledger") if isinstance(d, dict) else None
    if raw is None:
        return None
    if not (isinstance(raw, dict) and isinstance(raw.get("id"), str) and isinstance(raw.get("release"), int)):
        raise ComposeError(f"{where}: field 'ledger' must name the ledger's 'id' and the 'release' number")
    return raw["id"], raw["release"]


def _with_factors(seq: ReleasedSequence, mech: Any, led: tuple[str, int] | None, where: str) -> ReleasedSequence:
    """A ``--consistent`` ledgered release's sequence with the factors its output composes (every earlier
    release's fresh draw and its own: ``mechanism.factors``); other sequences are returned as they are."""
    raw = mech.get("factors") if isinstance(mech, dict) else None
    if raw is None or seq.rows is None:
        return seq
    from redactopt.release.ledger_file import LedgerError, chain_of, rows_from_dict

    if led is None or not isinstance(raw, list):
        raise ComposeError(f"{where}: sequence {seq.id!r} lists 'factors' outside a ledgered release")
    try:
        factors = tuple(((led[0], int(f["release"])), chain_of(f.get("chain"), where),
                         rows_from_dict(f.get("blocks"), seq.n, f"{where}: sequence {seq.id!r} factor"))
                        for f in raw)
    except (LedgerError, KeyError, TypeError, ValueError) as exc:
        raise ComposeError(f"{where}: sequence {seq.id!r}: a factor cannot be read: {exc}") from None
    return ReleasedSequence(seq.id, seq.n, seq.private, seq.judge, seq.rows, factors)


def _factors(releases: list[Release], j: int) -> list[tuple[Any, Any]]:
    """The independent draws that releases' sequence ``j`` compose, each once: a ``--consistent`` ledgered
    release contributes every factor its output composes; any other release its own mechanism (keyed by
    its ledger's release number when it has one, so that a factor is never counted twice)."""
    seen: dict[Any, tuple[Any, Any]] = {}
    for i, r in enumerate(releases):
        s = r.sequences[j]
        if s.factors:
            for key, chain, rows in s.factors:
                seen.setdefault(key, (chain, rows))
        else:
            seen.setdefault(r.ledger if r.ledger is not None else ("report", i), (s.judge, s.rows))
    return list(seen.values())


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
        ca = compose_audit(_factors(releases, j), s0.private, eps=eps)
        alone = [compose_audit([(s.judge, s.rows)], s0.private).cumulative for s in seqs]
        chains = max(chains, len(ca.judges))
        passed = passed and bool(ca.passed)
        for p in ca.private:
            rec: dict[str, Any] = {"sequence": s0.id, "private": p + 1, "cumulative": ca.cumulative[p],
                                   "alone": [a[p] for a in alone], "rounding_allowance": ca.allowance[p]}
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


def audit_ledger(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Every release of a ledger (``redactopt.ledger/1``) re-judged from its factors, JSON-ready.

    For release ``j`` and each private record: its leakage alone (its own factor under its chain; a
    ``consistent`` release shows the composition of releases ``1..j``, so alone it leaks what they leak
    together) and the cumulative exact leakage of releases ``1..j`` (the product of their factors,
    judged under every chain among theirs: :func:`redactopt.judge.compose.compose_audit`).  ``passed``:
    proven at most the ledger's total budget after the last release; the stored figures are compared with
    the re-judged ones (``stored_matches``).
    """
    from redactopt.release.ledger_file import read_ledger

    led = read_ledger(path)
    if led.empty:
        raise ComposeError(f"{led.path}: the ledger holds no release yet")
    records: dict[tuple[Any, int], dict[str, Any]] = {}
    releases = []
    passed = True
    m = len(led.releases)
    for j, e in enumerate(led.releases, start=1):
        alone_w = cum_w = -math.inf
        sids = list(dict.fromkeys(s.id for x in led.releases[:j] for s in x.sequences if s.private))
        for sid in sids:
            priv = tuple(sorted({p for x in led.releases[:j] if (q := x.sequence(sid)) is not None
                                 for p in q.private}))
            n_j = max(cov[1] for x in led.releases[:j] if (cov := x.cover(sid)) is not None)
            factors = led.factors(sid, n_j)[:j]
            ca = compose_audit(factors, priv, eps=led.total_eps if j == m else None)
            if j == m:
                passed = passed and bool(ca.passed)
            own = e.sequence(sid)
            mine = own.private if own is not None else ()
            alone = (ca.cumulative if e.consistent else
                     compose_audit([factors[-1]], mine).cumulative if mine else {})
            for p in priv:
                rec = records.setdefault((sid, p), {"sequence": sid, "private": p + 1, "alone": [None] * m,
                                                    "cumulative": [None] * m})
                rec["cumulative"][j - 1] = ca.cumulative[p]
                cum_w = max(cum_w, ca.cumulative[p])
                if p in mine:
                    rec["alone"][j - 1] = alone[p]
                    alone_w = max(alone_w, alone[p])
        alone_w = max(alone_w, 0.0)  # an extension without private records of its own leaks nothing alone
        matches = math.isclose(alone_w, e.leakage_alone, rel_tol=1e-9, abs_tol=1e-12) and \
            math.isclose(cum_w, e.cumulative, rel_tol=1e-9, abs_tol=1e-12)
        releases.append(dict(e.summary(), leakage_alone=alone_w, cumulative=cum_w, stored_matches=matches,
                             stored={"leakage_alone": e.leakage_alone, "cumulative": e.cumulative}))
    return {"format": "redactopt.ledger-audit/1", "ledger": led.path, "id": led.id, "rows": led.rows,
            "column": led.column, "by": led.by, "total_eps": led.total_eps, "releases": releases,
            "cumulative": releases[-1]["cumulative"], "passed": bool(passed),
            "stored_matches": all(r["stored_matches"] for r in releases), "records": list(records.values())}
