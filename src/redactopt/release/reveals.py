"""What a release reveals besides the values it covers — stated in its summary, report and page (issue 36).

* **The opt-out itself.**  The guarantee covers the *values* of the private records, not the fact
  or the time of the opt-out: every private record is redacted with certainty and its design
  redacts records around it, so without a cover the ⊥ pattern shows which sequences hold private
  records and where their blocks are (:func:`reveals_section`).  ``--cover K``
  (:mod:`redactopt.release.cover`) hides them among decoys; the section says which was chosen.
* **The companions of the file.**  The report and the page name the private rows: both begin
  with :data:`CONFIDENTIAL` (the report's first line: :func:`report_text`).  :func:`public_report`
  keeps what a recipient of the release may see — ε, the chain, the utility, every design's
  mechanism on its own sub-problem (no position in a sequence), the cover's copies — and says
  which audit it supports (``redactopt audit PUBLIC.json`` re-judges every design exactly; where
  they are placed needs the confidential report).
* **Warnings a person sees.**  :func:`collect_warnings` gathers every warning of a release into
  the report's ``warnings`` (printed before the summary in a block of their own, and at the top
  of the page).
"""

from __future__ import annotations

import os
from typing import Any

from redactopt.io import write_text_atomic
from redactopt.release.report import report_text

__all__ = ["CONFIDENTIAL", "PUBLIC_FORMAT", "PUBLIC_NOTICE", "notice", "reveals_section", "collect_warnings",
           "public_report", "write_public_report", "finish_report", "is_public_report"]

#: The first line of every report and page that names private rows.
CONFIDENTIAL = "CONFIDENTIAL: names the private rows — do not publish with the release"

#: The format of a public report (:func:`public_report`).
PUBLIC_FORMAT = "redactopt.release.public-report/1"

#: The first line of a public report.
PUBLIC_NOTICE = ("PUBLIC: holds no private position — what a recipient of the release may see; redactopt audit "
                 "re-judges every design in it exactly")


def notice(rep: dict[str, Any], *, public: bool = False) -> str:
    """A report's first line: :data:`CONFIDENTIAL` (or :data:`PUBLIC_NOTICE`), and every override accepted."""
    accepted = (rep.get("model") or {}).get("accepted") or []
    head = PUBLIC_NOTICE if public else CONFIDENTIAL
    return head + ("; MODEL ACCEPTED (--accept-model): " + "; ".join(accepted) if accepted else "")


def reveals_section(*, sequences: int, with_private: int, cover: dict[str, Any] | None) -> dict[str, Any]:
    """What the release's ⊥ pattern shows about the opt-out (``with_private``: sequences holding private
    records; ``cover``: the report's ``cover``, or ``None``)."""
    if cover is None:
        statement = (
            "The positions of the private records are not protected: the guarantee covers their values, not the "
            "fact or the time of the opt-out. Every private record is redacted with certainty and its design "
            "redacts records around it, so the pattern of redactions shows which sequences hold private records "
            f"({with_private} of {sequences}) and where their blocks are (the middle of a block lies near its "
            "private rows). --cover K hides them among K decoys per private run in every sequence.")
        short = (f"Nor the positions of the private records: the pattern of redactions shows which sequences hold them "
                 f"({with_private} of {sequences}) and where (--cover K hides them among decoys).")
        return {"positions_protected": False, "cover": None, "statement": statement, "short": short}
    copies = "; ".join(f"{c['per_sequence']} run(s) of length {c['length']}" for c in cover["copies"])
    bounds = ", ".join(f"{c['bound']:.3g} (length {c['length']})" for c in cover["copies"])
    cost = cover.get("expected_redacted") or {}
    statement = (
        f"The positions of the private records are hidden among decoys (--cover {cover['k']}): every sequence of "
        f"the release holds the same copies ({copies}), placed uniformly at random and redacted by the same "
        "designs, so the number and shape of the blocks do not tell a sequence with private records from one "
        "without. Under a uniform prior on the opt-out time, each copy is a real private run with probability at "
        f"most {bounds}. What it reveals: the lengths of the private runs and the largest number of them in one "
        "sequence. Cost: " + (f"{cost['without']:.6g} expected redacted rows without the cover, {cost['with']:.6g} "
                              "with it." if cost else "the decoys' redactions."))
    short = (f"The positions of the private records are hidden among decoys (--cover {cover['k']}): each copy is real "
             f"with probability at most {bounds}.")
    return {"positions_protected": True, "cover": {"k": cover["k"], "copies": cover["copies"]},
            "statement": statement, "short": short}


#: The warning of a release whose positions are not covered.
POSITIONS_WARNING = ("the positions of the private records are not protected: the pattern of redactions shows which "
                     "sequences hold private records and where (--cover K hides them among decoys)")


def fit_warnings(rep: dict[str, Any]) -> list[str]:
    """The warnings of a report's fitted chain."""
    fit = (rep.get("chain") or {}).get("fit") or {}
    return list(fit.get("warnings") or [])


def collect_warnings(rep: dict[str, Any], extra: list[str] | None = None) -> list[str]:
    """Every warning of a release, once each: the model's overrides, the fit's warnings, the alternatives'
    verdicts, the positions when they are not covered, and ``extra``."""
    out: list[str] = []
    model = rep.get("model") or {}
    out += [f"released although (--accept-model): {w}" for w in model.get("accepted") or []]
    out += fit_warnings(rep)
    out += list(rep.get("warnings") or [])
    out += list((rep.get("model_check") or {}).get("warnings") or [])  # the varying chains' (issue 33)
    for alt in model.get("alternatives") or []:
        if str(alt.get("note", "")).startswith("model_check"):
            continue  # (its warning is model_check's, above)
        if alt.get("leakage") is not None and alt.get("exceeds_eps"):
            out.append(f"under the {alt['name']} (p = {alt['p_value']:.3g}) the release would leak {alt['leakage']} "
                       f"> eps = {rep.get('eps'):g}")
    rev = rep.get("reveals") or {}
    if rev and not rev.get("positions_protected"):
        out.append(POSITIONS_WARNING)
    out += list(extra or [])
    return list(dict.fromkeys(out))


def finish_report(rep: dict[str, Any], *, sequences: int, with_private: int, cover: dict[str, Any] | None,
                  model: dict[str, Any] | None) -> dict[str, Any]:
    """The report with what it reveals (``reveals``), its ``model`` checks, every ``warnings`` and its first
    line ``notice`` first."""
    if model is not None:
        rep["model"] = model
    if cover is not None:
        rep["cover"] = cover
    rep["reveals"] = reveals_section(sequences=sequences, with_private=with_private, cover=cover)
    rep["warnings"] = collect_warnings(rep)
    return {"notice": notice(rep), **{k: v for k, v in rep.items() if k != "notice"}}


def is_public_report(d: Any) -> bool:
    return isinstance(d, dict) and d.get("format") == PUBLIC_FORMAT


#: Top-level fields a public report keeps as they are (none names a position in a sequence).
_PUBLIC_FIELDS = ("output", "column", "by", "rows", "eps", "method", "seed", "label", "randomness", "states")


def _public_chain(chain: dict[str, Any]) -> dict[str, Any]:
    keep = {k: chain[k] for k in ("alpha", "beta", "labels", "transition", "source", "class") if k in chain}
    fit = chain.get("fit")
    if isinstance(fit, dict):
        keep["fit"] = {k: fit[k] for k in ("records", "sequences", "transitions", "lr_test_second_order", "warnings",
                                           "alpha_ci", "beta_ci") if k in fit}
    rows = chain.get("fit_rows")
    if isinstance(rows, dict):
        keep["fit_rows"] = {k: rows[k] for k in ("source", "rows", "of_rows", "transitions") if k in rows}
    return keep


def public_report(rep: dict[str, Any]) -> dict[str, Any]:
    """The report a recipient of the release may see (module docstring): no private position, no sequence
    id, no count of the sequences holding private records; every design on its own sub-problem."""
    out: dict[str, Any] = {"format": PUBLIC_FORMAT}
    out.update({k: rep[k] for k in _PUBLIC_FIELDS if k in rep})
    out["chain"] = _public_chain(rep.get("chain") or {})
    util = rep.get("utility") or {}
    out["utility"] = {k: util[k] for k in ("expected", "realised", "redacted", "upper_bound", "gap") if k in util}
    out["leakage"] = {"max": (rep.get("leakage") or {}).get("max")}
    cols = rep.get("columns") or {}
    out["columns"] = {k: cols[k] for k in ("protected", "written", "not_covered", "bins") if k in cols}
    out["designs"] = public_designs(rep)
    cover = rep.get("cover")
    if isinstance(cover, dict):
        # (not its cost without the decoys: that is the plan of the real runs alone, which would tell them)
        out["cover"] = {k: cover[k] for k in ("k", "copies", "source") if k in cover}
    rev = rep.get("reveals") or {}
    out["reveals"] = {k: rev[k] for k in ("positions_protected", "cover") if k in rev}
    model = rep.get("model") or {}
    out["model"] = {"alternatives": [{k: a.get(k) for k in ("name", "test", "p_value", "leakage", "exceeds_eps")}
                                     for a in model.get("alternatives") or []],
                    "accepted": bool(model.get("accepted"))}
    out["warnings"] = list(fit_warnings(rep)) + (
        ["released although a test rejects its model (--accept-model): the guarantee holds for the first-order "
         "chain, which the data contradict"] if model.get("accepted") else []) + (
        [POSITIONS_WARNING] if rev and not rev.get("positions_protected") else [])
    out["audit"] = ("redactopt audit on this file re-judges every design exactly on its own sub-problem (its private "
                    "offsets); it cannot check where the designs are placed in the release — that needs the private "
                    "positions, in the confidential report")
    return {"notice": notice(rep, public=True), **out}


def public_designs(rep: dict[str, Any]) -> list[dict[str, Any]]:
    """Every distinct design of a report on its own sub-problem: a binary report's ``shapes`` (their keys and
    mechanisms hold offsets from the group's first private record and clipped distances to the ends) or a
    categorical report's ``shapes`` likewise."""
    out = []
    for s in rep.get("shapes") or []:
        key = s.get("key") or {}
        out.append({"id": s.get("id"), "groups": s.get("groups"), "redacted_expected": s.get("redacted_expected"),
                    "key": {k: key[k] for k in ("private_offsets", "left", "right", "n", "eps", "method") if k in key},
                    "leakage": s.get("leakage"), "mechanism": s.get("mechanism")})
    return out


def write_public_report(path: str | os.PathLike[str], rep: dict[str, Any], *, force: bool = False) -> dict[str, Any]:
    """Write :func:`public_report` of ``rep`` to ``path`` (its notice on the first line); returns it."""
    pub = public_report(rep)
    write_text_atomic(path, report_text(pub), force=force)
    return pub
