"""k-state mechanism files: ``"format": "redactopt.kmechanism/1"`` (issue 17).

The k-state variant of the sparse mechanism file (docs/commands.md, "Mechanism file"): ``states`` (the
labels, as text, column order of every row), ``chain`` {``labels``, ``transition`` (rows of
``k``)}, ``n``, ``private`` (1-based), ``eps``, ``blocks`` — a sorted list of
``{"start": first row (1-based), "redact_prob": rows of k numbers [Pr(⊥ | X_t = state 1), ...]}``
separated by at least one row; **every record outside a block is published with certainty** —
``method``, ``utility``, ``leakage`` (exact) and optional ``certificate``.  The format name is new,
so readers of the binary formats (which check ``format``) refuse it with a message naming it.

The report of a k-state ``apply`` (``"format": "redactopt.release.kapply-report/1"``) carries one
such object under ``mechanism`` (one sequence), or a list ``designs`` of them with ``sequences``
naming each sequence's design (``--by``); :func:`read_kmechanisms` reads all of these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from redactopt._validate import check_eps
from redactopt.io import StoredMechanism, load_json, private_positions, require_field
from redactopt.judge.leakage import check_mechanism
from redactopt.model.chain import Chain as KChain

__all__ = ["KFORMAT", "KREPORT_FORMAT", "KMechanismFile", "kmechanism_to_dict", "kmechanism_from_dict",
           "read_kmechanisms", "is_kstate", "chain_from_dict"]

KFORMAT = "redactopt.kmechanism/1"
KREPORT_FORMAT = "redactopt.release.kapply-report/1"


def is_kstate(d: object) -> bool:
    """Whether a parsed JSON object is a k-state mechanism file or k-state apply report."""
    return isinstance(d, dict) and d.get("format") in (KFORMAT, KREPORT_FORMAT)


@dataclass(frozen=True)
class KMechanismFile(StoredMechanism):
    """A parsed k-state mechanism file; ``private`` is 0-based, ``redact_prob`` dense ``(n, k)``.

    ``utility``, ``leakage`` and ``certificate`` are what the file *claims*; audits recompute them.
    """

    chain: KChain
    redact_prob: np.ndarray


def _blocks(q: np.ndarray) -> list[dict[str, Any]]:
    rows = np.flatnonzero(q.any(axis=1))
    out = []
    if rows.size:
        cuts = np.flatnonzero(np.diff(rows) > 1)
        starts = np.concatenate([[0], cuts + 1])
        ends = np.concatenate([cuts, [rows.size - 1]])
        for a, b in zip(starts, ends):
            lo, hi = int(rows[a]), int(rows[b])
            out.append({"start": lo + 1, "redact_prob": q[lo : hi + 1].tolist()})
    return out


def kmechanism_to_dict(chain: KChain, redact_prob: np.ndarray, *, private: object, eps: float, method: str,
                       utility: float | None = None, leakage: float | None = None,
                       certificate: dict | None = None) -> dict[str, Any]:
    """The mechanism-file object of a k-state mechanism (``private`` 0-based here, 1-based in the file)."""
    q = np.asarray(redact_prob, dtype=float)
    priv = [private] if isinstance(private, int) else list(private)  # type: ignore[arg-type]
    d: dict[str, Any] = {
        "format": KFORMAT, "states": [str(s) for s in chain.labels], "chain": chain.to_dict(), "n": int(q.shape[0]),
        "private": [int(p) + 1 for p in priv], "eps": float(eps), "blocks": _blocks(q), "method": method,
        "utility": utility, "leakage": leakage,
    }
    if certificate is not None:
        d["certificate"] = certificate
    return d


def kdesign_to_dict(res: Any) -> dict[str, Any]:
    """:func:`kmechanism_to_dict` of a :class:`~redactopt.judge.certify.DesignResult`, with its certificate."""
    return kmechanism_to_dict(res.chain, res.redact_prob, private=res.private, eps=res.eps, method=res.method,
                              utility=res.utility, leakage=res.leakage, certificate=res.certificate.to_dict())


def chain_from_dict(d: object, where: str = "chain") -> KChain:
    """A :class:`KChain` from ``{"labels": [...], "transition": rows}`` (a fit report works too)."""
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected an object with 'labels' and 'transition'")
    rows = require_field(d, "transition", where)
    labels = d.get("labels")
    try:
        return KChain(rows, labels=tuple(str(s) for s in labels) if labels is not None else ())
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def kmechanism_from_dict(d: object, where: str = "mechanism") -> KMechanismFile:
    """Validate and parse a ``redactopt.kmechanism/1`` object; errors name the field."""
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(d).__name__}")
    fmt = require_field(d, "format", where)
    if fmt != KFORMAT:
        raise ValueError(f"{where}: field 'format' must be {KFORMAT!r}, got {fmt!r}")
    chain = chain_from_dict(require_field(d, "chain", where), where + ": field 'chain'")
    states = require_field(d, "states", where)
    if not isinstance(states, list) or [str(s) for s in states] != [str(s) for s in chain.labels]:
        raise ValueError(f"{where}: field 'states' must list the chain's labels in order {list(map(str, chain.labels))}")
    n = require_field(d, "n", where)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{where}: field 'n' must be an integer >= 1, got {n!r}")
    k = chain.k
    q = np.zeros((n, k))
    blocks = require_field(d, "blocks", where)
    if not isinstance(blocks, list):
        raise ValueError(f"{where}: field 'blocks' must be a list")
    last = 0
    for i, b in enumerate(blocks):
        if not isinstance(b, dict):
            raise ValueError(f"{where}: blocks[{i}] must be an object with start and redact_prob")
        s = require_field(b, "start", f"{where}: blocks[{i}]")
        rows = require_field(b, "redact_prob", f"{where}: blocks[{i}]")
        if isinstance(s, bool) or not isinstance(s, int) or s < 1 or not isinstance(rows, list) or not rows:
            raise ValueError(f"{where}: blocks[{i}] needs a 1-based 'start' and a non-empty 'redact_prob'")
        if i and s <= last + 1:  # the binary reader's rule (io._sparse_rows): blocks are maximal runs
            raise ValueError(f"{where}: field 'blocks[{i}]' starts at row {s}, but blocks must be sorted and "
                             f"separated by at least one row published with certainty (the previous block ends "
                             f"at row {last})")
        if s - 1 + len(rows) > n:
            raise ValueError(f"{where}: blocks[{i}] runs past row n = {n}")
        try:
            arr = np.asarray(rows, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: blocks[{i}].redact_prob must hold rows of {k} numbers") from None
        if arr.ndim != 2 or arr.shape[1] != k:
            raise ValueError(f"{where}: blocks[{i}].redact_prob must hold rows of {k} numbers (one per state)")
        q[s - 1 : s - 1 + len(rows)] = arr
        last = s - 1 + len(rows)
    priv = private_positions(d, n, where)
    try:
        eps = check_eps(require_field(d, "eps", where))
        q, privt = check_mechanism(q, priv, k=chain.k)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None
    method = d.get("method", "unknown")
    cert = d.get("certificate")
    if cert is not None and not isinstance(cert, dict):
        raise ValueError(f"{where}: field 'certificate' must be an object")
    util, leak = d.get("utility"), d.get("leakage")
    for key, val in (("utility", util), ("leakage", leak)):
        if val is not None and (isinstance(val, bool) or not isinstance(val, (int, float))):
            raise ValueError(f"{where}: field '{key}' must be a number or null, got {val!r}")
    return KMechanismFile(chain, q, privt, eps, str(method), util, leak, cert)


def read_kmechanisms(path: str) -> list[tuple[Any, KMechanismFile]]:
    """The mechanisms of a k-state mechanism file or k-state apply report (``-``: standard input).

    Returns ``(tag, mechanism)`` pairs: the tag is ``None`` for a file or a one-sequence report, and
    the ids of the sequences that use the design for a report of several sequences.
    """
    d, where = load_json(path)
    return kmechanisms_of(d, where)


def _consistent(report: dict, mf: KMechanismFile, where: str, *, rows: object, private: object) -> None:
    """A report's claims about a sequence agree with the mechanism it names (else the audit of the
    mechanism would not be an audit of the release)."""
    if rows != mf.redact_prob.shape[0]:
        raise ValueError(f"{where}: the sequence has {rows!r} rows but its mechanism has n={mf.redact_prob.shape[0]}")
    if private != [p + 1 for p in mf.private]:
        raise ValueError(f"{where}: the sequence's private records {private!r} are not its mechanism's "
                         f"{[p + 1 for p in mf.private]}")
    eps = report.get("eps")
    if eps is not None and eps != mf.eps:
        raise ValueError(f"{where}: the report's eps {eps!r} is not its mechanism's {mf.eps!r}")
    chain = report.get("chain")
    if isinstance(chain, dict) and "transition" in chain:
        top = chain_from_dict(chain, where=f"{where}: chain")
        # the same chain up to the rounding of re-normalised rows (older reports list P normalised)
        if top.labels != mf.chain.labels or not np.allclose(top.transition, mf.chain.transition, rtol=1e-12,
                                                            atol=1e-15):
            raise ValueError(f"{where}: the report's chain is not its mechanism's chain")


def _sequences_add_up(d: dict, seqs: list, where: str) -> None:
    """A report of several sequences: its ``rows`` and ``private`` are its sequences' together, and
    every sequence appears once (a sequence dropped, emptied or repeated is refused)."""
    ok = all(isinstance(s, dict) and isinstance(s.get("rows"), int) and isinstance(s.get("private"), list)
             for s in seqs)
    if not ok:
        raise ValueError(f"{where}: every sequence needs integer 'rows' and a list 'private'")
    ids = [str(s.get("id")) for s in seqs]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{where}: sequence {next(i for i in ids if ids.count(i) > 1)!r} appears more than once")
    rows, private = sum(s["rows"] for s in seqs), sum(len(s["private"]) for s in seqs)
    top = d.get("private")
    if d.get("rows") != rows or not isinstance(top, list) or len(top) != private:
        raise ValueError(f"{where}: the sequences hold {rows} rows and {private} private records, the report says "
                         f"{d.get('rows')!r} rows and {len(top) if isinstance(top, list) else top!r} private records")


def kmechanisms_of(d: object, where: str) -> list[tuple[Any, KMechanismFile]]:
    """:func:`read_kmechanisms` on an already parsed object.

    A report is checked for consistency: every sequence's rows and private records are those of
    the mechanism it names, every sequence with a private record names one, the sequences appear
    once each and add up to the report's rows and private records, and the report's ``eps`` and
    chain are the mechanisms' own.
    """
    if isinstance(d, dict) and d.get("format") == KREPORT_FORMAT:
        if "designs" in d:  # a release of several sequences (--by): one mechanism per distinct design
            designs, seqs = d["designs"], d.get("sequences")
            if not isinstance(designs, list) or not designs or not isinstance(seqs, list):
                raise ValueError(f"{where}: fields 'designs' and 'sequences' must be lists (designs not empty)")
            mechs = [kmechanism_from_dict(m, where=f"{where}: designs[{j}]") for j, m in enumerate(designs)]
            _sequences_add_up(d, seqs, where)
            users: dict[int, list[str]] = {}
            for i, seq in enumerate(seqs):
                at = f"{where}: sequences[{i}]"
                if not isinstance(seq, dict):
                    raise ValueError(f"{at}: expected an object")
                j, private = seq.get("design"), seq.get("private")
                if j is None:
                    if private:
                        raise ValueError(f"{at}: has private records {private!r} but no design")
                    continue
                if isinstance(j, bool) or not isinstance(j, int) or not 0 <= j < len(designs):
                    raise ValueError(f"{at}: field 'design' must be null or an index into 'designs', got {j!r}")
                _consistent(d, mechs[j], at, rows=seq.get("rows"), private=private)
                users.setdefault(j, []).append(str(seq.get("id")))
            return [(users.get(j, []), mf) for j, mf in enumerate(mechs)]
        mf = kmechanism_from_dict(require_field(d, "mechanism", where), where=f"{where}: mechanism")
        _consistent(d, mf, where, rows=d.get("rows"), private=d.get("private"))
        return [(None, mf)]
    return [(None, kmechanism_from_dict(d, where=where))]
