r"""The audit of a class release report (``redactopt.class-release/1``) as a whole (issue 38).

Each mechanism of the report is re-judged exactly (:func:`redactopt.classes_io.audit_dict`), and the
report is judged as one claim: a release is private only if every mechanism is private *for the
release it describes*.  So the report's own statements are checked against its designs, and any
disagreement fails the audit (exit 1), named in one line each:

* the report's ``eps``, ``class``, ``states`` and ``chain`` against every mechanism's (a report whose
  ``eps`` was lowered from 1 to 0.5, or whose chain was changed, still holds mechanisms judged at
  their own ``eps`` and chain: each passes, the release does not);
* every design's ``rows`` and ``private`` positions against its mechanisms (their ``n`` and private
  records; blocks of one sequence disjoint, each private record covered once);
* every sequence against the design it names: its length and the positions of its private records
  (a 30-row sequence pointing at an 8-row design), a design index that exists, no sequence with
  private records and no design, no design that no sequence uses;
* the totals: ``rows`` the sum of the sequences' rows, ``private`` and ``leakage.private_records`` the
  number of their private records, ``leakage.max`` the largest exact leakage found.

Fields of the wrong type (a string for a number, a number for a flag, ``3.0`` for a position) are bad
input: ``ValueError``, one line (exit 2).  Positions count from 1, as in the file.
"""

from __future__ import annotations

from typing import Any

from redactopt.classes_io import audit_dict, is_class_report, mechanism_from_dict
from redactopt.io import chain_from_dict, require_field
from redactopt.model.mechanism_classes import CLASSES, BlockMechanism, ScanMechanism
from redactopt.release.class_apply import RELEASE_CLASSES

__all__ = ["audit_report"]


def _int(v: object, what: str, where: str, lo: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ValueError(f"{where}: {what} must be an integer >= {lo}, got {v!r}")
    return v


def _positions(v: object, what: str, where: str, n: int) -> list[int]:
    if not isinstance(v, list):
        raise ValueError(f"{where}: {what} must be a list of positions, got {v!r}")
    out = [_int(x, what, where, 1) for x in v]
    bad = [x for x in out if x > n]
    if bad:
        raise ValueError(f"{where}: {what} must be positions in 1..{n}, got {bad[0]}")
    return out


def _number(v: object, what: str, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{where}: {what} must be a number, got {v!r}")
    return float(v)


def _class_of(m: dict) -> str:
    """The smallest class a mechanism file's mechanism belongs to (a holder scan is a holder mechanism)."""
    cls = m.get("class")
    if cls == "scan" and m.get("holder") is True:
        return "holder"
    return str(cls)


def _same_chain(a: Any, b: Any) -> bool:
    return tuple(map(str, a.labels)) == tuple(map(str, b.labels)) and a.exact_transition() == b.exact_transition()


def _design_problems(j: int, des: object, cls: str, eps: float, chain: Any, where: str) -> tuple[list[dict],
                                                                                                 list[str]]:
    """The mechanisms of design ``j`` (files) and what disagrees with the report or the design."""
    tag = f"design {j + 1}"
    if not isinstance(des, dict):
        raise ValueError(f"{where}: designs[{j + 1}] must be an object")
    rows = _int(require_field(des, "rows", f"{where}: {tag}"), "'rows'", f"{where}: {tag}", 1)
    priv = _positions(require_field(des, "private", f"{where}: {tag}"), "'private'", f"{where}: {tag}", rows)
    mechs = require_field(des, "mechanisms", f"{where}: {tag}")
    if not isinstance(mechs, list) or not mechs or not all(isinstance(m, dict) for m in mechs):
        raise ValueError(f"{where}: {tag}: 'mechanisms' must be a non-empty list of mechanism objects")
    problems, spans, covered = [], [], []
    for i, m in enumerate(mechs):
        mw = f"{tag}, mechanism {i + 1}"
        mech, claims = mechanism_from_dict(m, f"{where}: {mw}")
        if claims["eps"] != eps:
            problems.append(f"{mw}: eps {claims['eps']!r} is not the report's eps {eps!r}")
        if not _same_chain(mech.chain, chain):
            problems.append(f"{mw}: its chain is not the report's chain")
        mine = _class_of(m)
        if mine not in CLASSES or CLASSES.index(mine) > CLASSES.index(cls):
            problems.append(f"{mw}: a {mine} mechanism is not of the report's class {cls!r}")
        if m.get("designed_for") not in (None, cls):
            problems.append(f"{mw}: designed for {m.get('designed_for')!r}, the report's class is {cls!r}")
        if mech.n != rows:
            problems.append(f"{mw}: it covers {mech.n} records, the design {rows}")
        covered.extend([t + 1 for t in mech.private] if hasattr(mech, "first") else [mech.p + 1])
        spans.append((mech.start, mech.start + mech.inner.n) if isinstance(mech, BlockMechanism) else (0, mech.n))
        if isinstance(mech, ScanMechanism) and len(mechs) > 1:
            problems.append(f"{mw}: a scan publishes everything beyond its first release and protects one "
                            "private record per sequence, not one of several")
    if sorted(covered) != sorted(priv):
        problems.append(f"{tag}: its mechanisms protect records {sorted(covered)}, the design lists {sorted(priv)}")
    order = sorted(spans)
    if any(b0 > a1 for (_, b0), (a1, _) in zip(order, order[1:])):
        problems.append(f"{tag}: its mechanisms' blocks overlap (each must be cut off by published boundaries)")
    return mechs, problems


def _sequence_problems(d: dict, designs: list, where: str) -> list[str]:
    """Every sequence against the design it names; the report's totals against the sequences."""
    seqs = require_field(d, "sequences", where)
    if not isinstance(seqs, list) or not all(isinstance(s, dict) for s in seqs):
        raise ValueError(f"{where}: field 'sequences' must be a list of objects")
    problems, used, total_rows, total_priv = [], set(), 0, 0
    for i, s in enumerate(seqs):
        sw = f"sequence {i + 1}" + ("" if s.get("id") is None else f" ({s.get('id')!r})")
        rows = _int(require_field(s, "rows", f"{where}: {sw}"), "'rows'", f"{where}: {sw}", 1)
        priv = _positions(require_field(s, "private", f"{where}: {sw}"), "'private'", f"{where}: {sw}", rows)
        total_rows, total_priv = total_rows + rows, total_priv + len(priv)
        j = require_field(s, "design", f"{where}: {sw}")
        if j is None:
            if priv:
                problems.append(f"{sw}: {len(priv)} private record(s) and no design")
            continue
        j = _int(j, "'design'", f"{where}: {sw}")
        if j >= len(designs):
            problems.append(f"{sw}: names design {j + 1}, the report has {len(designs)}")
            continue
        used.add(j)
        des = designs[j]
        if des.get("rows") != rows:
            problems.append(f"{sw}: {rows} rows, its design {j + 1} is for {des.get('rows')}")
        if sorted(des.get("private") or []) != sorted(priv):
            problems.append(f"{sw}: private records {sorted(priv)}, its design {j + 1} protects "
                            f"{sorted(des.get('private') or [])}")
    problems += [f"design {j + 1}: no sequence uses it" for j in range(len(designs)) if j not in used]
    if d.get("rows") != total_rows:
        problems.append(f"rows: the report states {d.get('rows')!r}, its sequences hold {total_rows}")
    stated = d.get("private")
    if not isinstance(stated, list) or len(stated) != total_priv:
        problems.append(f"private: the report lists {len(stated) if isinstance(stated, list) else stated!r} "
                        f"private rows, its sequences {total_priv}")
    return problems


def audit_report(d: object, where: str = "report", *, eps: float | None = None) -> dict[str, Any]:
    r"""Judge a class release report as a whole (module docstring).

    Returns ``mechanisms`` (each :func:`~redactopt.classes_io.audit_dict`'s report, with ``design``: where it
    sits and which sequences use it), ``problems`` (one line per disagreement), ``passed`` (every mechanism
    certified at the budget and no problem).  ``eps`` judges every mechanism at that budget instead of the
    report's (the report's own statements are checked all the same).
    """
    if not is_class_report(d):
        raise ValueError(f"{where}: not a class release report")
    assert isinstance(d, dict)
    cls = require_field(d, "class", where)
    if cls not in RELEASE_CLASSES:
        raise ValueError(f"{where}: field 'class' must be one of {', '.join(RELEASE_CLASSES)}, got {cls!r}")
    stated = _number(require_field(d, "eps", where), "field 'eps'", where)
    chain = chain_from_dict(require_field(d, "chain", where), f"{where}: field 'chain'")
    designs = require_field(d, "designs", where)
    if not isinstance(designs, list) or not designs:
        raise ValueError(f"{where}: field 'designs' must be a non-empty list")
    problems: list[str] = []
    if [str(s) for s in d.get("states") or []] != [str(s) for s in chain.labels]:
        problems.append("states: the report's states are not its chain's labels")
    files = []
    for j, des in enumerate(designs):
        mechs, found = _design_problems(j, des, str(cls), stated, chain, where)
        files.append(mechs)
        problems += found
    problems += _sequence_problems(d, designs, where)
    reports = []
    seqs = d["sequences"]
    for j, mechs in enumerate(files):
        ids = [str(s.get("id")) for s in seqs if s.get("design") == j]
        shown = ", ".join(ids[:5]) + (f", … ({len(ids)} in all)" if len(ids) > 5 else "")
        for i, m in enumerate(mechs):
            rep = audit_dict(m if eps is None else {**m, "eps": eps}, f"{where}: design {j + 1}, mechanism {i + 1}")
            rep["design"] = (f"design {j + 1} of {len(files)}, mechanism {i + 1} of {len(mechs)} (sequences: "
                             f"{shown or 'none'})")
            reports.append(rep)
    claimed = (d.get("leakage") or {}).get("max") if isinstance(d.get("leakage"), dict) else None
    worst = max(r["leakage"] for r in reports)
    if isinstance(claimed, bool) or not isinstance(claimed, (int, float)) or abs(claimed - worst) > 1e-9 * max(
            1.0, abs(worst)):
        problems.append(f"leakage.max: the report states {claimed!r}, the exact leakage is {worst!r}")
    leak = d.get("leakage") if isinstance(d.get("leakage"), dict) else {}
    if leak.get("private_records") != len(d.get("private") or []):
        problems.append(f"leakage.private_records: {leak.get('private_records')!r} is not the number of private "
                        "rows")
    passed = all(r["passed"] for r in reports) and not problems
    return {"mechanisms": reports, "problems": problems, "passed": passed, "eps": stated if eps is None else eps}
