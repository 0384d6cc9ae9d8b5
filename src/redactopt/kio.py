"""Mechanism files of chains given as a matrix (the categorical path of ``apply``/``audit``).

There is one mechanism format for every chain, ``redactopt.mechanism/3`` (:mod:`redactopt.io`, which
parses it); a file whose ``chain`` is a matrix (``{"labels", "transition"}``) — and the older
``redactopt.kmechanism/1`` — is read here as a :class:`KMechanismFile` with dense ``(n, k)`` rows.

The report of a categorical ``apply`` (``"format": "redactopt.release.kapply-report/1"``) carries one
mechanism object under ``mechanism`` (one sequence), or a list ``designs`` of them with ``sequences``
naming each sequence's design (``--by``); :func:`read_kmechanisms` reads all of these.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from redactopt.io import (FORMAT, KMechanismFile, chain_from_dict, is_matrix_file, kmechanism_from_dict, load_json,
                          mechanism_to_dict, require_field)
from redactopt.judge.certify import SparseRows
from redactopt.model.chain import Chain as KChain

__all__ = ["KFORMAT", "KREPORT_FORMAT", "kmechanism_to_dict", "read_kmechanisms", "is_kstate"]

#: The format categorical mechanisms are written in (the one format of every chain).
KFORMAT = FORMAT
KREPORT_FORMAT = "redactopt.release.kapply-report/1"


def is_kstate(d: object) -> bool:
    """Whether a parsed JSON object is a mechanism of a chain given as a matrix, or a categorical apply report."""
    return is_matrix_file(d) or (isinstance(d, dict) and d.get("format") == KREPORT_FORMAT)


def kmechanism_to_dict(chain: KChain, redact_prob: np.ndarray, *, private: object, eps: float, method: str,
                       utility: float | None = None, leakage: float | None = None,
                       certificate: dict | None = None) -> dict[str, Any]:
    """The ``redactopt.mechanism/3`` object of a mechanism on a chain given as a matrix (``private`` 0-based)."""
    rows = redact_prob if isinstance(redact_prob, SparseRows) else np.asarray(redact_prob, dtype=float)
    d = mechanism_to_dict(chain, rows, private=private, eps=eps, method=method,
                          utility=utility, leakage=leakage, certificate=certificate)
    d["chain"] = chain.to_dict()  # every chain written as its matrix, a MarkovChain (however given) too
    return d


def kdesign_to_dict(res: Any) -> dict[str, Any]:
    """:func:`kmechanism_to_dict` of a :class:`~redactopt.judge.certify.DesignResult`, with its certificate."""
    return kmechanism_to_dict(res.chain, res.redact_prob, private=res.private, eps=res.eps, method=res.method,
                              utility=res.utility, leakage=res.leakage, certificate=res.certificate.to_dict())


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
    # a cover's decoys (issue 36) are judged like private records: the sequences list them too
    decoys = (d.get("leakage") or {}).get("decoy_records", 0) if isinstance(d.get("leakage"), dict) else 0
    judged = len(top) + (decoys if isinstance(decoys, int) and not isinstance(decoys, bool) else 0) \
        if isinstance(top, list) else None
    if d.get("rows") != rows or not isinstance(top, list) or judged != private:
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
