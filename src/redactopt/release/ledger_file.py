"""The ledger of a dataset's releases: format ``redactopt.ledger/1`` (issue 39; docs/releases.md, "Releasing again").

A ledger is one JSON file the data owner keeps per dataset (``apply --ledger FILE``).  Every ledgered
release appends one entry: its number, whether it republished the earlier releases' values
(``consistent``), its ε and the total budget, the chain it was designed and judged under, and per sequence
with private records its *factor* — the local redaction ``Pr(⊥ | x)`` it drew fresh (0-based rows in the
API, 1-based in the file) — the private records and the records its output left redacted (public: the
release shows them).  No seed material is ever stored: a seeded release says only ``"seeded"``.

The composed view of the ledger is the product of every release's factor, sequence by sequence
(docs/mathematics.md §14: independent local redactions compose exactly into the product mechanism; a
``consistent`` release republishes what the earlier ones published and redraws only the rest, so its
output is the composition of the earlier factors and its own, and adds nothing beyond its factor).
:meth:`Ledger.factors` gives them with their chains for :func:`redactopt.judge.compose.compose_audit`.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from redactopt.judge.certify import SparseRows
from redactopt.model.chain import MarkovChain

__all__ = ["LEDGER_FORMAT", "LedgerError", "LedgerSequence", "LedgerEntry", "Ledger", "read_ledger", "ranges",
           "from_ranges", "padded", "json_id", "chain_of", "rows_from_dict"]

#: The ledger's format name (versioned: a reader refuses a version it does not know).
LEDGER_FORMAT = "redactopt.ledger/1"

#: Why a ledger refuses a mechanism that is not local (also said by ``apply --class ... --ledger``).
NOT_LOCAL = ("the ledger composes local redactions exactly (the product rule); for scan, owner and holder "
             "mechanisms on correlated data no sound composition is known here and the sum of leakages is not "
             "a bound (docs/mathematics.md §14)")


class LedgerError(ValueError):
    """A ledger file that cannot be read or used (one line, exit status 2)."""


def ranges(positions: np.ndarray) -> list[list[int]]:
    """Sorted 0-based positions as 1-based inclusive ranges ``[[a, b], ...]``."""
    p = np.unique(np.asarray(positions, dtype=np.int64))
    if not p.size:
        return []
    cut = np.flatnonzero(np.diff(p) != 1)
    starts = np.r_[p[0], p[cut + 1]]
    ends = np.r_[p[cut], p[-1]]
    return [[int(a) + 1, int(b) + 1] for a, b in zip(starts, ends)]


def from_ranges(raw: Any, n: int, where: str) -> np.ndarray:
    """1-based inclusive ranges (as :func:`ranges` writes them) as sorted 0-based positions, checked."""
    if not isinstance(raw, list):
        raise LedgerError(f"{where} must be a list of [first, last] ranges")
    parts, last = [], 0
    for r in raw:
        if not (isinstance(r, list) and len(r) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in r)
                and last < r[0] <= r[1] <= n):
            raise LedgerError(f"{where}: range {r!r} is not [first, last] in 1..{n}, sorted and disjoint")
        parts.append(np.arange(r[0] - 1, r[1], dtype=np.int64))
        last = r[1]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _rows_to_dict(rows: SparseRows) -> list[dict[str, Any]]:
    return [{"start": s + 1, "redact_prob": np.asarray(b, dtype=float).tolist()} for s, b in zip(rows.starts, rows.blocks)]


def rows_from_dict(raw: Any, n: int, where: str) -> SparseRows:
    if not isinstance(raw, list):
        raise LedgerError(f"{where} must be a list of blocks")
    starts, blocks, end = [], [], 0
    for i, b in enumerate(raw):
        name = f"{where}[{i}]"
        if not isinstance(b, dict) or not isinstance(b.get("start"), int) or isinstance(b.get("start"), bool):
            raise LedgerError(f"{name} must be an object with an integer 'start' and 'redact_prob' rows")
        try:
            arr = np.asarray(b.get("redact_prob"), dtype=float)
        except (TypeError, ValueError):
            raise LedgerError(f"{name}: 'redact_prob' must be rows of two probabilities") from None
        if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 1:
            raise LedgerError(f"{name}: 'redact_prob' must be rows of two probabilities")
        if not (np.isfinite(arr).all() and (arr >= 0).all() and (arr <= 1).all()):
            raise LedgerError(f"{name}: a redaction probability outside [0, 1]")
        s = b["start"] - 1
        if s < end or s + arr.shape[0] > n:
            raise LedgerError(f"{name}: rows {s + 1}-{s + arr.shape[0]} overlap an earlier block or leave 1..{n}")
        arr.setflags(write=False)
        starts.append(s)
        blocks.append(arr)
        end = s + arr.shape[0]
    return SparseRows(n, tuple(starts), tuple(blocks))


def chain_of(raw: Any, where: str) -> MarkovChain:
    try:
        return MarkovChain(float(raw["alpha"]), float(raw["beta"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise LedgerError(f"{where}: the chain must be {{'alpha': a, 'beta': b}} in (0, 1) ({exc})") from None


def _int(raw: Any, name: str, where: str, lo: int = 0) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < lo:
        raise LedgerError(f"{where}: field '{name}' must be an integer >= {lo}, got {raw!r}")
    return raw


def _eps(raw: Any, name: str, where: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not (math.isfinite(raw) and raw > 0):
        raise LedgerError(f"{where}: field '{name}' must be a positive number, got {raw!r}")
    return float(raw)


@dataclass
class LedgerSequence:
    """One sequence of one release: its 0-based ``private`` records, the ``factor`` it drew (rows of the
    whole sequence, ``n`` of them: the sequence's length when the release was made), the records its output
    left redacted, and the exact leakages stored with it (per private record).  An extension (``first`` > 0)
    showed only rows ``first..n-1``: before them its factor is 1 (not shown); ``also`` holds the cumulative
    leakage, after it, of earlier private records whose rows it continued (``[(record, leakage)]``)."""

    id: Any
    n: int
    private: tuple[int, ...]
    factor: SparseRows
    redacted: np.ndarray
    alone: list[float]
    cumulative: list[float]
    first: int = 0
    also: list[tuple[int, float]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = {"id": self.id, "n": self.n, "private": [p + 1 for p in self.private],
             "factor": _rows_to_dict(self.factor), "redacted": ranges(self.redacted),
             "leakage_alone": list(self.alone), "cumulative": list(self.cumulative)}
        if self.first:
            d["first"] = self.first + 1
        if self.also:
            d["also"] = [[p + 1, v] for p, v in self.also]
        return d


@dataclass
class LedgerEntry:
    """One release of the ledger (1-based ``number``)."""

    number: int
    consistent: bool
    eps: float
    total_eps: float
    chain: MarkovChain
    method: str
    randomness: str
    time: str
    report: str | None
    output: str | None
    leakage_alone: float
    cumulative: float
    expected_utility: float
    upper_bound: float
    sequences: list[LedgerSequence] = field(default_factory=list)
    covers: dict[Any, tuple[int, int]] = field(default_factory=dict)
    extends: bool = False

    def sequence(self, sid: Any) -> LedgerSequence | None:
        return next((s for s in self.sequences if s.id == sid), None)

    def summary(self) -> dict[str, Any]:
        """What reports and pages show of this release: its leakage alone and the cumulative leakage (worst)."""
        return {"release": self.number, "time": self.time, "consistent": self.consistent, "extends": self.extends,
                "eps": self.eps,
                "total_eps": self.total_eps, "leakage_alone": self.leakage_alone, "cumulative": self.cumulative,
                "expected_utility": self.expected_utility, "upper_bound": self.upper_bound,
                "report": self.report, "output": self.output}

    def to_dict(self) -> dict[str, Any]:
        d = self.summary()
        d.update({"mechanism_class": "local", "extends": self.extends,
                  "chain": {"alpha": self.chain.alpha, "beta": self.chain.beta},
                  "method": self.method, "randomness": self.randomness,
                  "covers": [[sid, a + 1, b] for sid, (a, b) in self.covers.items()],
                  "sequences": [s.to_dict() for s in self.sequences]})
        return d

    def cover(self, sid: Any) -> tuple[int, int] | None:
        """The rows ``[a, b)`` of sequence ``sid`` this release showed (``None``: none)."""
        return self.covers.get(sid)


@dataclass
class Ledger:
    """A dataset's ledger: its rows (``column``, ``by``, the sequences' ids and lengths) and releases."""

    path: str
    id: str
    column: str | None
    by: str | None
    rows: int
    lengths: list[tuple[Any, int]]
    total_eps: float | None
    releases: list[LedgerEntry] = field(default_factory=list)

    @classmethod
    def new(cls, path: str | os.PathLike[str]) -> "Ledger":
        return cls(str(path), uuid.uuid4().hex, None, None, 0, [], None, [])

    @property
    def empty(self) -> bool:
        return not self.releases

    def factors(self, sid: Any, n: int) -> list[tuple[MarkovChain, SparseRows]]:
        """Every release's factor of the first ``n`` rows of sequence ``sid``, with its chain: on the rows a
        release showed, what it drew (0 where it did not design the sequence: published whole); on rows it
        did not show (not there yet, or before an extension), 1 — not shown is redacted with certainty."""
        return [(e.chain, padded(e, sid, n)) for e in self.releases]

    def published_by_any(self, sid: Any, positions: np.ndarray) -> np.ndarray:
        """Which of the 0-based ``positions`` of ``sid`` some release's output showed."""
        pos = np.asarray(positions, dtype=np.int64)
        out = np.zeros(pos.shape[0], dtype=bool)
        for e in self.releases:
            cov = e.cover(sid)
            if cov is None:
                continue
            shown = (pos >= cov[0]) & (pos < cov[1])
            s = e.sequence(sid)
            if s is not None:
                shown &= ~np.isin(pos, s.redacted)
            out |= shown
        return out

    def length(self, sid: Any) -> int:
        return dict(self.lengths).get(sid, 0)

    def private_of(self, sid: Any) -> tuple[int, ...]:
        """Every record any release treated as private in sequence ``sid`` (0-based, sorted)."""
        return tuple(sorted({p for e in self.releases if (s := e.sequence(sid)) is not None for p in s.private}))

    def chains(self) -> list[MarkovChain]:
        out: list[MarkovChain] = []
        for e in self.releases:
            if all(e.chain != c for c in out):
                out.append(e.chain)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"format": LEDGER_FORMAT,
                "note": "CONFIDENTIAL: names the private rows. The redactopt ledger of one dataset's releases; "
                        "no seed material is stored",
                "id": self.id, "dataset": {"column": self.column, "by": self.by, "rows": self.rows,
                                           "sequences": [[sid, n] for sid, n in self.lengths]},
                "total_eps": self.total_eps, "releases": [e.to_dict() for e in self.releases]}

    def write(self) -> None:
        """Write the ledger through a temporary file and a rename (the old one stays until then)."""
        from redactopt.io import write_text_atomic
        from redactopt.release.report import jsonable

        write_text_atomic(self.path, json.dumps(jsonable(self.to_dict()), indent=1) + "\n", force=True)


def padded(e: LedgerEntry, sid: Any, n: int) -> SparseRows:
    """Release ``e``'s factor of the first ``n`` rows of ``sid`` (:meth:`Ledger.factors`), blocks merged."""
    cov = e.cover(sid)
    if cov is None:
        return SparseRows(n, (0,), (_ones(n),)) if n else SparseRows(0, (), ())
    a, b = cov[0], min(cov[1], n)
    s = e.sequence(sid)
    parts: list[tuple[int, np.ndarray]] = []
    if a > 0:
        parts.append((0, _ones(min(a, n))))
    if s is not None:
        parts += [(st, blk[: max(0, b - st)]) for st, blk in zip(s.factor.starts, s.factor.blocks) if st < b]
    if b < n:
        parts.append((b, _ones(n - b)))
    starts: list[int] = []
    blocks: list[np.ndarray] = []
    for st, blk in parts:
        if not blk.shape[0]:
            continue
        if starts and st == starts[-1] + blocks[-1].shape[0]:
            blocks[-1] = np.vstack([blocks[-1], blk])
        else:
            starts.append(st)
            blocks.append(np.asarray(blk, dtype=float))
    return SparseRows(n, tuple(starts), tuple(blocks))


def _ones(m: int) -> np.ndarray:
    return np.ones((m, 2))


def json_id(v: Any) -> Any:
    """A sequence id as JSON holds it (numpy scalars as Python ones; anything else but str, int, float, bool and
    None as its text), as the release reports write ids."""
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return str(v)


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def read_ledger(path: str | os.PathLike[str], *, create: bool = False) -> Ledger:
    """The ledger at ``path`` (checked field by field; one-line :class:`LedgerError` otherwise).

    ``create``: a missing file is a new, empty ledger (written by the first release)."""
    p = Path(path)
    if not p.exists():
        if create:
            if not p.parent.is_dir():
                raise LedgerError(f"{p}: the ledger's directory does not exist")
            return Ledger.new(p)
        raise LedgerError(f"{p}: no such ledger file")
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise LedgerError(f"{p}: cannot read the ledger: {exc}") from None
    except json.JSONDecodeError as exc:
        raise LedgerError(f"{p}: not a ledger: malformed JSON at line {exc.lineno} column {exc.colno}") from None
    where = str(p)
    fmt = d.get("format") if isinstance(d, dict) else None
    if fmt != LEDGER_FORMAT:
        if isinstance(fmt, str) and fmt.startswith("redactopt.ledger/"):
            raise LedgerError(f"{where}: ledger format {fmt!r} is not known to this redactopt (it reads "
                              f"{LEDGER_FORMAT})")
        raise LedgerError(f"{where}: not a redactopt ledger (format {fmt!r}; expected {LEDGER_FORMAT})")
    try:
        return _parse(d, where)
    except LedgerError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise LedgerError(f"{where}: a corrupt ledger ({type(exc).__name__}: {exc})") from None


def _parse(d: dict, where: str) -> Ledger:
    ds = d["dataset"]
    if not isinstance(ds, dict) or not isinstance(ds.get("sequences"), list):
        raise LedgerError(f"{where}: field 'dataset' must hold the sequences' ids and lengths")
    lengths = []
    for s in ds["sequences"]:
        if not (isinstance(s, list) and len(s) == 2):
            raise LedgerError(f"{where}: dataset.sequences must be [id, rows] pairs, got {s!r}")
        lengths.append((s[0], _int(s[1], "dataset.sequences rows", where, 1)))
    rows = _int(ds.get("rows"), "dataset.rows", where)
    if rows != sum(n for _, n in lengths):
        raise LedgerError(f"{where}: dataset.rows {rows} is not the sum of its sequences' rows")
    total = d.get("total_eps")
    led = Ledger(where, str(d["id"]), ds.get("column"), ds.get("by"), rows, lengths,
                 None if total is None else _eps(total, "total_eps", where), [])
    n_of = dict(lengths)
    if not isinstance(d.get("releases"), list):
        raise LedgerError(f"{where}: field 'releases' must be a list")
    for i, r in enumerate(d["releases"]):
        name = f"{where}: releases[{i}]"
        if not isinstance(r, dict):
            raise LedgerError(f"{name} must be an object")
        cls = r.get("mechanism_class", "local")
        if cls != "local":
            raise LedgerError(f"{name} is a {cls} release: {NOT_LOCAL}")
        if r.get("release") != i + 1:
            raise LedgerError(f"{name}: field 'release' must be {i + 1} (releases in order), got {r.get('release')!r}")
        seqs = []
        for j, s in enumerate(r.get("sequences") or []):
            sn = f"{name}.sequences[{j}]"
            if not isinstance(s, dict) or s.get("id") not in n_of:
                raise LedgerError(f"{sn}: sequence {s.get('id') if isinstance(s, dict) else s!r} is not one of the "
                                  "dataset's")
            n = _int(s.get("n"), "n", sn, 1)
            if n > n_of[s["id"]]:
                raise LedgerError(f"{sn}: {n} rows, but the dataset's sequence has {n_of[s['id']]}")
            first = _int(s.get("first", 1), "first", sn, 1) - 1
            if first >= n:
                raise LedgerError(f"{sn}: field 'first' {first + 1} beyond its {n} rows")
            factor = rows_from_dict(s.get("factor"), n, f"{sn}.factor")
            if factor.starts and factor.starts[0] < first:
                raise LedgerError(f"{sn}.factor: a block before the release's first row {first + 1}")
            priv = tuple(int(p) - 1 for p in s.get("private") or [])
            if any(not first <= p < n for p in priv):
                raise LedgerError(f"{sn}: a private record outside {first + 1}..{n}")
            dense = factor.rows(0, n) if priv else None
            if priv and not all((dense[p] == 1.0).all() for p in priv):
                raise LedgerError(f"{sn}: a private record is not redacted with certainty by the factor")
            seqs.append(LedgerSequence(s["id"], n, priv, factor, from_ranges(s.get("redacted", []), n,
                                                                            f"{sn}.redacted"),
                                       [float(v) for v in s.get("leakage_alone") or []],
                                       [float(v) for v in s.get("cumulative") or []], first,
                                       [(int(p) - 1, float(v)) for p, v in s.get("also") or []]))
        covers: dict[Any, tuple[int, int]] = {}
        for c in r.get("covers") or []:
            if not (isinstance(c, list) and len(c) == 3 and c[0] in n_of and isinstance(c[1], int)
                    and isinstance(c[2], int) and 1 <= c[1] <= c[2] <= n_of[c[0]]):
                raise LedgerError(f"{name}: 'covers' must list [sequence, first row, last row] within the dataset, "
                                  f"got {c!r}")
            covers[c[0]] = (c[1] - 1, c[2])
        for q in seqs:
            if covers.get(q.id, (q.first, q.n)) != (q.first, q.n):
                raise LedgerError(f"{name}: sequence {q.id!r} covers rows {covers[q.id]} but its factor "
                                  f"{(q.first, q.n)}")
            covers.setdefault(q.id, (q.first, q.n))
        led.releases.append(LedgerEntry(
            i + 1, bool(r.get("consistent", False)), _eps(r["eps"], "eps", name), _eps(r["total_eps"], "total_eps", name),
            chain_of(r.get("chain"), name), str(r.get("method", "")), str(r.get("randomness", "")), str(r.get("time", "")),
            r.get("report"), r.get("output"), float(r["leakage_alone"]), float(r["cumulative"]),
            float(r.get("expected_utility", math.nan)), float(r.get("upper_bound", math.nan)), seqs, covers,
            bool(r.get("extends", False))))
    return led
