"""Files of scan, owner and holder mechanisms: ``"format": "redactopt.class-mechanism/1"`` (issue 26).

Every file names the chain (``states``, ``chain`` {``labels``, ``transition``} as in
:mod:`redactopt.kio`), ``n``, ``private`` (a list of one 1-based position), ``eps``, the
mechanism, and what the design claims: ``utility``, ``leakage`` (exact), optional ``certificate``
{``upper_bound``, ``gap``, ``solver``, ``scope``, ``stopped``} and ``designed_for`` (the class the
design was asked for: a scan is also an owner mechanism).  Values are state indices (0-based, in
the order of ``states``).  The mechanism is one of:

* ``"class": "scan"`` with ``"holder": false|true`` and ``"sides": {"left": {"stop": S}, "right":
  {"stop": S}}`` (a side without records: ``null``).  ``S[d-1][c][x]`` is the probability of releasing
  at distance ``d`` -- that record and every farther record of the side -- given that nothing on that
  side was released before, that the side's first record (the neighbour of ``p``) has value ``c``
  (holder scan: that :math:`X_p=c`) and that the record at distance ``d`` has value ``x``.  ``S`` may
  be shorter than its side if its last row is all ones (the side releases by then for sure).
* ``"class": "scan"`` with ``"private"`` a run of two or more adjacent positions (``[5, 6, 7]``): the scan of a
  run (docs/mathematics.md §7d), every record of the run redacted; ``"holder": false``; the sides as above,
  distances counted from the run (the left side's first record is the one before the run, the right side's
  the one after it) and ``c`` that first record's value.  Two-state chains.
* ``"class": "owner"|"holder"`` with ``"table": rows`` -- row ``r`` holds, for every release mask ``i``
  (bit ``j`` of ``i`` set: the ``j``-th non-private record, in position order, is published), a
  non-negative weight; the row is divided by its exact sum.  Row ``r`` is read by the records whose
  base-``k`` digits (digit ``j`` = least significant first) are: the ``n - 1`` non-private records
  (``owner``) or all ``n`` records (``holder``).
* ``"class": "owner"|"holder"`` with ``"block": {"start": 1-based first record, "table": rows}`` -- the
  table of the block's own records (its private record is ``p``; its first/last record is published
  under every row wherever records lie beyond), every record outside the block published.

:func:`mechanism_to_dict` / :func:`mechanism_from_dict` convert; :func:`design_to_dict` writes a
:class:`~redactopt.engine.classes_design.ClassDesign`.  Readers re-judge what they read.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from redactopt.io import require_field
from redactopt.io import chain_from_dict
from redactopt.model.chain import Chain as KChain
from redactopt.model.mechanism_classes import BlockMechanism, OwnerMechanism, RunScanMechanism, ScanMechanism

__all__ = ["CLASS_FORMAT", "CLASS_REPORT_FORMAT", "is_class_report", "mechanism_to_dict", "mechanism_from_dict", "design_to_dict", "is_class_mechanism",
           "audit_dict"]

CLASS_FORMAT = "redactopt.class-mechanism/1"
#: The report of ``apply --class`` (:mod:`redactopt.release.class_apply` writes it).
CLASS_REPORT_FORMAT = "redactopt.class-release/1"


def is_class_report(d: object) -> bool:
    """Whether a parsed JSON object is the report of a class release."""
    return isinstance(d, dict) and d.get("format") == CLASS_REPORT_FORMAT


def is_class_mechanism(d: object) -> bool:
    """Whether a parsed JSON object is a class-mechanism file."""
    return isinstance(d, dict) and d.get("format") == CLASS_FORMAT


def _side(S: np.ndarray | None) -> dict | None:
    return None if S is None else {"stop": np.asarray(S, dtype=float).tolist()}


def mechanism_to_dict(mech: ScanMechanism | OwnerMechanism | BlockMechanism, *, eps: float) -> dict[str, Any]:
    """The file object of a mechanism (module docstring); ``private`` is written 1-based."""
    chain = mech.chain
    private = [t + 1 for t in mech.private] if isinstance(mech, RunScanMechanism) else [int(mech.p) + 1]
    d: dict[str, Any] = {"format": CLASS_FORMAT, "states": [str(s) for s in chain.labels], "chain": chain.to_dict(),
                         "n": int(mech.n), "private": private, "eps": float(eps)}
    if isinstance(mech, RunScanMechanism):
        d.update({"class": "scan", "holder": False,
                  "sides": {"left": _side(mech.left), "right": _side(mech.right)}})
    elif isinstance(mech, ScanMechanism):
        d.update({"class": "scan", "holder": bool(mech.holder),
                  "sides": {"left": _side(mech.left), "right": _side(mech.right)}})
    elif isinstance(mech, BlockMechanism):
        d.update({"class": "holder" if mech.holder else "owner",
                  "block": {"start": int(mech.start) + 1, "n": int(mech.inner.n), "table": mech.inner.table.tolist()}})
    elif isinstance(mech, OwnerMechanism):
        d.update({"class": "holder" if mech.holder else "owner", "table": mech.table.tolist()})
    else:
        raise TypeError(f"not a scan/owner/holder mechanism: {type(mech).__name__}")
    return d


def design_to_dict(res: Any) -> dict[str, Any]:
    """The file object of a :class:`~redactopt.engine.classes_design.ClassDesign` (mechanism and claims)."""
    d = mechanism_to_dict(res.mechanism, eps=res.eps)
    d.update({"designed_for": res.cls, "utility": float(res.utility), "leakage": float(res.leakage),
              "certificate": res.certificate.to_dict()})
    return d


def _numbers(raw: object, where: str, what: str, depth: int) -> np.ndarray:
    """Nested lists of ``depth`` levels whose leaves are JSON numbers (not booleans, not strings), finite, as
    doubles: each number read exactly as the double it denotes."""
    def walk(v: object, level: int) -> None:
        if level == depth:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"{where}: {what} must hold numbers, got {v!r}")
            if not math.isfinite(float(v)):
                raise ValueError(f"{where}: {what} must hold finite numbers, got {v!r}")
            return
        if not isinstance(v, list):
            raise ValueError(f"{where}: {what} must be {depth} levels of lists of numbers, got {v!r:.60}")
        for item in v:
            walk(item, level + 1)

    walk(raw, 0)
    try:
        return np.array(raw, dtype=float)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{where}: {what} must be rows of equal length ({exc})") from None


def _stop(raw: object, where: str) -> np.ndarray | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: a side must be null or an object with 'stop'")
    return _numbers(require_field(raw, "stop", where), where, "field 'stop'", 3)


def _table(raw: object, where: str) -> np.ndarray:
    T = _numbers(raw, where, "a table", 2)
    if T.ndim == 2 and T.size and (T >= 0).all():
        empty = np.flatnonzero(~np.any(T > 0, axis=1))
        if empty.size:
            raise ValueError(f"{where}: table row {int(empty[0]) + 1} has no positive entry (a row is divided by its "
                             "sum)")
    return T


def _integer(d: dict, key: str, where: str, lo: int, hi: int) -> int:
    """A field that must be an integer (a JSON integer, not ``3.0``, not ``true``) in ``lo..hi`` (1-based positions)."""
    v = require_field(d, key, where)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ValueError(f"{where}: field '{key}' must be an integer in {lo}..{hi}, got {v!r}")
    return v


def _flag(d: dict, key: str, where: str) -> bool:
    v = d.get(key, False)
    if not isinstance(v, bool):
        raise ValueError(f"{where}: field '{key}' must be true or false, got {v!r}")
    return v


def mechanism_from_dict(d: object, where: str = "mechanism") -> tuple[ScanMechanism | OwnerMechanism | BlockMechanism,
                                                                     dict[str, Any]]:
    """Parse and validate a class-mechanism object: the mechanism and the file's claims.

    Errors are one-line ``ValueError`` naming the field, positions counted from 1 as in the file.  Types
    are strict: numbers are JSON numbers, flags JSON booleans, positions and sizes JSON integers.  The
    claims (``eps``, ``utility``, ``leakage``, ``certificate``, ``designed_for``) are returned as stated,
    for an audit to re-judge.
    """
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(d).__name__}")
    if require_field(d, "format", where) != CLASS_FORMAT:
        raise ValueError(f"{where}: field 'format' must be {CLASS_FORMAT!r}, got {d.get('format')!r}")
    chain: KChain = chain_from_dict(require_field(d, "chain", where), where + ": field 'chain'")
    states = require_field(d, "states", where)
    if not isinstance(states, list) or [str(s) for s in states] != [str(s) for s in chain.labels]:
        raise ValueError(f"{where}: field 'states' must list the chain's labels in order")
    n = require_field(d, "n", where)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{where}: field 'n' must be an integer >= 1, got {n!r}")
    priv = require_field(d, "private", where)
    cls = require_field(d, "class", where)
    if (cls == "scan" and isinstance(priv, list) and len(priv) > 1
            and all(isinstance(v, int) and not isinstance(v, bool) for v in priv)):
        if priv != list(range(priv[0], priv[0] + len(priv))) or not (1 <= priv[0] and priv[-1] <= n):
            raise ValueError(f"{where}: field 'private' of a scan must be one position or one run of adjacent "
                             f"positions in 1..{n}, in order, got {priv!r}")
        try:
            mech = _run_scan(d, chain, n, priv[0] - 1, priv[-1] - 1, where)
        except (TypeError, ValueError) as exc:
            msg = str(exc)
            raise ValueError(msg if msg.startswith(where) else f"{where}: {msg}") from None
        return mech, {k: d.get(k) for k in ("eps", "utility", "leakage", "certificate", "designed_for")}
    if (not isinstance(priv, list) or len(priv) != 1 or isinstance(priv[0], bool) or not isinstance(priv[0], int)
            or not 1 <= priv[0] <= n):
        raise ValueError(f"{where}: field 'private' must be a list of one position in 1..{n}, got {priv!r}")
    p = priv[0] - 1
    try:
        mech = _mechanism(d, chain, n, p, cls, where)
    except (TypeError, ValueError) as exc:
        msg = str(exc)
        raise ValueError(msg if msg.startswith(where) else f"{where}: {msg}") from None
    claims = {k: d.get(k) for k in ("eps", "utility", "leakage", "certificate", "designed_for")}
    return mech, claims


def _run_scan(d: dict, chain: KChain, n: int, first: int, last: int, where: str) -> RunScanMechanism:
    """The scan of a run (module docstring): sides as a one-record scan's, never a holder scan."""
    sides = require_field(d, "sides", where)
    if not isinstance(sides, dict) or set(sides) - {"left", "right"}:
        raise ValueError(f"{where}: field 'sides' must be an object with 'left' and 'right'")
    if _flag(d, "holder", where):
        raise ValueError(f"{where}: a run's scan never reads the run: field 'holder' must be false")
    return RunScanMechanism(chain, n, first, last, _stop(sides.get("left"), where + ": sides.left"),
                            _stop(sides.get("right"), where + ": sides.right"))


def _mechanism(d: dict, chain: KChain, n: int, p: int, cls: object, where: str) -> Any:
    """The mechanism of a class-mechanism object (its fields checked by :func:`mechanism_from_dict`)."""
    if cls == "scan":
        sides = require_field(d, "sides", where)
        if not isinstance(sides, dict) or set(sides) - {"left", "right"}:
            raise ValueError(f"{where}: field 'sides' must be an object with 'left' and 'right'")
        return ScanMechanism(chain, n, p, _stop(sides.get("left"), where + ": sides.left"),
                             _stop(sides.get("right"), where + ": sides.right"), holder=_flag(d, "holder", where))
    if cls not in ("owner", "holder"):
        raise ValueError(f"{where}: field 'class' must be 'scan', 'owner' or 'holder', got {cls!r}")
    holder = cls == "holder"
    if "holder" in d and _flag(d, "holder", where) != holder:
        raise ValueError(f"{where}: field 'holder' contradicts 'class' {cls!r}")
    if "block" not in d:
        return OwnerMechanism(chain, n, p, _table(require_field(d, "table", where), where), holder=holder)
    b = d["block"]
    if not isinstance(b, dict):
        raise ValueError(f"{where}: field 'block' must be an object")
    start = _integer(b, "start", where + ": block", 1, p + 1)
    nb = _integer(b, "n", where + ": block", p + 2 - start, n - start + 1)
    inner = OwnerMechanism(chain, nb, p - (start - 1), _table(require_field(b, "table", where), where), holder=holder)
    return BlockMechanism(n, p, start - 1, inner)


def audit_dict(d: object, where: str = "mechanism") -> dict[str, Any]:
    r"""Re-judge a class-mechanism file exactly: what ``redactopt audit FILE`` should print for it.

    Returns ``leakage`` (exact, nats), ``eps`` (the file's), ``verdict`` (``certified``/``violated``/
    ``undecided``: Definition 1 decided with outward rounding or in rationals), ``passed``,
    ``utility`` (recomputed), ``claimed`` (the file's own numbers) and ``witness`` (1-based record
    order, state labels, ``None`` for ⊥).
    """
    from redactopt.judge.scan import verify_mechanism

    mech, claims = mechanism_from_dict(d, where)
    eps = claims["eps"]
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"{where}: field 'eps' must be a finite number > 0, got {eps!r}")
    status, res = verify_mechanism(mech, eps)
    return {"class": d["class"], "leakage": res.leakage, "eps": float(eps), "verdict": status,  # type: ignore[index]
            "passed": status == "certified", "utility": mech.utility(),
            "claimed": {"utility": claims["utility"], "leakage": claims["leakage"]},
            "witness": res.witness_output(), "pair": [str(mech.chain.labels[i]) for i in res.pair]}
