"""Files: the mechanism file formats and how every output is written.

Files count records from 1 (``private`` is 1-based); the Python API counts from 0.

Mechanism files (docs/commands.md, "Mechanism file"):

* ``redactopt.mechanism/3`` (written since 0.4), one format for every chain: ``states`` (the
  labels as text, the column order of every row), ``chain`` — ``{"alpha", "beta"}`` for a
  binary chain given that way, ``{"labels", "transition"}`` (rows, doubles or exact fractions
  as text) for any other — ``n``, ``private`` (1-based), ``eps``, ``blocks``: a sorted list of
  ``{"start": first row, "redact_prob": rows of k numbers}`` separated by at least one row;
  every record outside a block is published with certainty.  Its size grows with the blocks,
  not with ``n``, and an audit re-verifies it block by block (:mod:`redactopt.judge.audit`)
  without ever building ``n`` rows.  ``method``, ``utility``, ``leakage`` (exact), optional
  ``certificate`` and ``chain_class``.
* ``redactopt.mechanism/2`` (0.2-0.3): ``/3`` for binary chains without ``states``; still read.
* ``redactopt.kmechanism/1`` (0.3): ``/3`` for chains given as a matrix; still read.
* ``redactopt.mechanism/1``: ``redact_prob`` with one row per record; still read.

Readers check the ``format`` field first, so an older reader refuses a newer file with a
message naming the formats it knows.

Conventions for every file redactopt reads or writes (the command line relies on them):

* ``-`` is standard input (for inputs) or standard output (for outputs);
* an output is written to a temporary file beside it and renamed when complete, is never
  overwritten without ``force``, and never creates a missing directory (a typo in a path
  is an error, not a new folder);
* a written file gets the permissions the process's umask gives a new file (a temporary
  file would otherwise stay private to its owner);
* a missing input is "<path>: no such file or directory".
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from redactopt import _tempfiles
from redactopt._validate import check_eps, check_redact_prob
from redactopt.model.varying import VaryingChain
from redactopt.model.chain import Chain, MarkovChain, is_markov
from redactopt.model.classes import ChainClass
from redactopt.judge.audit import as_sparse
from redactopt.engine.cache import placed_pieces
from redactopt.judge.certify import DesignResult, SparseDesign, SparseRows, merge_blocks
from redactopt.judge.leakage import check_mechanism

__all__ = [
    "FORMAT",
    "FORMAT_BLOCKS",
    "FORMAT_DENSE",
    "FORMAT_KSTATE",
    "MECHANISM_FORMATS",
    "chain_to_dict",
    "chain_from_dict",
    "is_matrix_file",
    "REPORT_FORMAT",
    "REPORT_FORMATS",
    "STDIO",
    "MechanismFile",
    "KMechanismFile",
    "kmechanism_from_dict",
    "StoredMechanism",
    "mechanism_to_dict",
    "design_to_dict",
    "mechanism_from_dict",
    "read_mechanism",
    "read_mechanisms",
    "write_json_atomic",
    "write_output",
    "write_text_atomic",
    "atomic_open",
    "atomic_path",
    "check_input_path",
    "check_output_dir",
    "check_output_name",
    "check_output_path",
    "check_writable",
    "new_file_mode",
    "stdin_as_file",
]

#: The mechanism file format redactopt writes, for every chain: blocks of rows, everything else published.
FORMAT = "redactopt.mechanism/3"
#: The binary blocks format of 0.2-0.3 (still read, and written on request).
FORMAT_BLOCKS = "redactopt.mechanism/2"
#: The k-state blocks format of 0.3 (still read).
FORMAT_KSTATE = "redactopt.kmechanism/1"
#: The first mechanism file format, one row per record: still read (and written on request).
FORMAT_DENSE = "redactopt.mechanism/1"
#: Every mechanism format redactopt reads.
MECHANISM_FORMATS = (FORMAT, FORMAT_BLOCKS, FORMAT_KSTATE, FORMAT_DENSE)
#: The report ``apply`` writes: every distinct design once (``shapes``, ``/2`` mechanism files of their
#: sub-problems) and per sequence the groups placing them, inline or in a columnar file beside it.
REPORT_FORMAT = "redactopt.release.apply-report/3"
#: Reports audit reads: ``/1`` carried ``redactopt.mechanism/1`` objects, ``/2`` one ``/2`` mechanism per sequence.
REPORT_FORMATS = ("redactopt.release.apply-report/1", "redactopt.release.apply-report/2", REPORT_FORMAT)
#: The path that means standard input or standard output.
STDIO = "-"


@dataclass(frozen=True)
class StoredMechanism:
    """What every parsed mechanism file holds, whatever the chain model (binary
    :class:`MechanismFile`, k-state :class:`KMechanismFile`); ``private`` is
    0-based; ``utility``, ``leakage`` and ``certificate`` are what the file *claims*."""

    chain: Any
    redact_prob: Any
    private: tuple[int, ...]
    eps: float
    method: str
    utility: float | None
    leakage: float | None
    certificate: dict | None

    @property
    def n(self) -> int:
        return int(self.redact_prob.shape[0])


@dataclass(frozen=True)
class MechanismFile(StoredMechanism):
    """A parsed mechanism file; ``private`` is 0-based here.

    ``redact_prob`` is a dense ``(n, 2)`` array (``redactopt.mechanism/1``) or a
    :class:`~redactopt.judge.certify.SparseRows` (``/2``: never densified).
    ``utility``, ``leakage`` and ``certificate`` are what the file *claims*; audits
    recompute them.  ``chain_class`` is the class of chains the mechanism was designed and
    verified for (field ``chain_class``, optional; ``chain`` is then the chain its utility
    and certificate are measured at).
    """

    chain: MarkovChain
    redact_prob: np.ndarray | SparseRows
    chain_class: ChainClass | None = None


def _finite_or_none(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def chain_to_dict(chain: Chain | VaryingChain) -> dict[str, Any]:
    """The ``chain`` field: ``{"alpha", "beta"}`` for a :class:`MarkovChain` (however given:
    :func:`~redactopt.model.chain.is_markov`), ``{"labels", "transition"}`` for another chain, and
    ``{"labels", "initial", "levels", "transition", "level_runs"}`` for a chain that varies with the step
    (:meth:`~redactopt.model.varying.VaryingChain.to_dict`)."""
    if isinstance(chain, VaryingChain):
        return chain.to_dict()
    if is_markov(chain):
        return {"alpha": chain.alpha, "beta": chain.beta}
    return chain.to_dict()


def chain_from_dict(d: object, where: str = "chain") -> Chain:
    """The chain of a ``chain`` field: a :class:`MarkovChain` from ``alpha``/``beta``, any other
    :class:`Chain` from ``{"labels": [...], "transition": rows}`` (a fit report works too)."""
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected an object with alpha and beta, or labels and transition")
    try:
        if "level_runs" in d:  # a chain that varies with the step
            return VaryingChain.from_dict(_binary_labels(d))
        if "transition" not in d:
            return MarkovChain(require_field(d, "alpha", where), require_field(d, "beta", where))
        labels = d.get("labels")
        return Chain(d["transition"], labels=tuple(str(v) for v in labels) if labels is not None else ())
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def _binary_labels(d: dict) -> dict:
    """A two-state varying chain on the states ``"0"``, ``"1"`` is the binary one (states 0 and 1)."""
    if d.get("labels") in (["0", "1"], [0, 1]):
        return dict(d, labels=[0, 1])
    return d


def is_matrix_file(d: object) -> bool:
    """Whether a parsed mechanism object is one of a chain given as a matrix (the categorical path reads
    it: ``redactopt.kmechanism/1``, or ``/3`` whose ``chain`` has a ``transition``)."""
    if not isinstance(d, dict):
        return False
    chain = d.get("chain")
    return d.get("format") == FORMAT_KSTATE or (d.get("format") == FORMAT and isinstance(chain, dict)
                                                 and "transition" in chain)


def mechanism_to_dict(
    chain: Chain,
    redact_prob: np.ndarray | SparseRows,
    *,
    private: tuple[int, ...] | list[int],
    eps: float,
    method: str,
    utility: float | None,
    leakage: float | None,
    format: str = FORMAT,
    certificate: dict | None = None,
) -> dict[str, Any]:
    """The mechanism file object (docs/commands.md, "Mechanism file") of a mechanism (``private`` given 0-based).

    ``format`` is :data:`FORMAT` (every chain: ``states``, ``chain`` and ``blocks``, the maximal
    runs of rows that can be redacted, or the blocks of a
    :class:`~redactopt.judge.certify.SparseRows`), or for a binary chain one of the older
    :data:`FORMAT_BLOCKS` and :data:`FORMAT_DENSE` (one row per record, for readers of
    ``redactopt.mechanism/1``).
    """
    rows = as_sparse(redact_prob, k=chain.k)
    priv = [private] if isinstance(private, (int, np.integer)) else list(private)
    if format != FORMAT and not is_markov(chain):
        raise ValueError(f"format {format!r} holds a binary chain given by alpha and beta; {chain!r} needs {FORMAT!r}")
    d: dict[str, Any] = {"format": format}
    if format == FORMAT:
        d["states"] = [str(v) for v in chain.labels]
    d.update({"chain": chain_to_dict(chain), "n": rows.n, "private": [int(p) + 1 for p in priv], "eps": float(eps)})
    if format in (FORMAT, FORMAT_BLOCKS):
        d["blocks"] = [{"start": s + 1, "redact_prob": b.tolist()} for s, b in zip(rows.starts, rows.blocks)]
    elif format == FORMAT_DENSE:
        d["redact_prob"] = np.asarray(rows).tolist()
    else:
        raise ValueError(f"format must be {FORMAT!r}, {FORMAT_BLOCKS!r} or {FORMAT_DENSE!r}, got {format!r}")
    d.update({"method": method, "utility": _finite_or_none(utility), "leakage": _finite_or_none(leakage)})
    if certificate is not None:
        d["certificate"] = certificate
    return d


def design_to_dict(res: DesignResult | SparseDesign, *, format: str = FORMAT) -> dict[str, Any]:
    """The mechanism file of a verified design, with its ``certificate``."""
    d = mechanism_to_dict(res.chain, res.redact_prob, private=res.private, eps=res.eps, method=res.method,
                          utility=res.utility, leakage=res.leakage, format=format)
    if res.chain_class is not None:
        d["chain_class"] = res.chain_class.to_dict()
    d["certificate"] = res.certificate.to_dict()
    return d


def require_field(d: dict, key: str, where: str) -> Any:
    if key not in d:
        raise ValueError(f"{where}: missing field '{key}'")
    return d[key]


def _int_field(value: object, name: str, where: str, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo or (hi is not None and value > hi):
        bound = f" in {lo}..{hi}" if hi is not None else f" >= {lo}"
        raise ValueError(f"{where}: field '{name}' must be an integer{bound}, got {value!r}")
    return value


def _sparse_rows(d: dict, n: int, where: str, k: int = 2) -> SparseRows:
    """The ``blocks`` of a mechanism object (rows of ``k`` numbers), checked."""
    raw = require_field(d, "blocks", where)
    if not isinstance(raw, list):
        raise ValueError(f"{where}: field 'blocks' must be a list of objects with 'start' and 'redact_prob'")
    starts, blocks = [], []
    end = -2  # 0-based last row of the previous block
    for i, b in enumerate(raw):
        name = f"blocks[{i}]"
        if not isinstance(b, dict):
            raise ValueError(f"{where}: field '{name}' must be an object with 'start' and 'redact_prob'")
        s = _int_field(require_field(b, "start", f"{where}: {name}"), f"{name}.start", where, 1, n) - 1
        try:
            rows = check_redact_prob(require_field(b, "redact_prob", f"{where}: {name}"), f"{name}.redact_prob", k=k)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: field '{name}.redact_prob': {exc}") from None
        if s <= end + 1:
            raise ValueError(f"{where}: field '{name}' starts at row {s + 1}, but blocks must be sorted and "
                             f"separated by at least one row published with certainty (the previous block ends "
                             f"at row {end + 1})")
        if s + rows.shape[0] > n:
            raise ValueError(f"{where}: field '{name}' runs past the last record (rows {s + 1}.."
                             f"{s + rows.shape[0]}, n = {n})")
        end = s + rows.shape[0] - 1
        rows.setflags(write=False)
        starts.append(s)
        blocks.append(rows)
    return SparseRows(n, tuple(starts), tuple(blocks))


def _check_private_rows(rows: SparseRows, priv: list[int], where: str) -> None:
    for p in priv:
        i = int(np.searchsorted(rows.starts, p, side="right")) - 1
        if i < 0 or p >= rows.starts[i] + rows.blocks[i].shape[0]:
            raise ValueError(f"{where}: private record {p + 1} lies outside every block: it would be published "
                             "(infinite leakage); private rows must be all ones")
        row = rows.blocks[i][p - rows.starts[i]]
        if not bool(np.all(row == 1.0)):
            ones = ", ".join(["1"] * row.size)
            raise ValueError(f"{where}: row {p + 1} is a private record and must be [{ones}] (always redacted), "
                             f"got {row.tolist()}")


def private_positions(d: dict, n: int, where: str) -> list[int]:
    """Field ``private`` of a mechanism object (1-based positions in ``1..n``), 0-based."""
    priv_raw = require_field(d, "private", where)
    if not isinstance(priv_raw, list) or not priv_raw:
        raise ValueError(f"{where}: field 'private' must be a non-empty list of 1-based positions")
    priv = []
    for v in priv_raw:
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= n:
            raise ValueError(f"{where}: field 'private' must hold positions in 1..{n}, got {v!r}")
        priv.append(v - 1)
    return priv


def parse_mechanism(d: object, where: str = "mechanism") -> StoredMechanism:
    """Validate any mechanism object (:data:`MECHANISM_FORMATS`); errors name the field.

    Dense rows for ``/1``, :class:`~redactopt.judge.certify.SparseRows` for the blocks formats.
    """
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(d).__name__}")
    fmt = require_field(d, "format", where)
    if fmt not in MECHANISM_FORMATS:
        raise ValueError(f"{where}: field 'format' must be one of {', '.join(map(repr, MECHANISM_FORMATS))}, "
                         f"got {fmt!r}")
    raw = require_field(d, "chain", where)
    if fmt in (FORMAT_DENSE, FORMAT_BLOCKS) and not (isinstance(raw, dict) and "transition" not in raw):
        raise ValueError(f"{where}: field 'chain' must be an object with alpha and beta")
    if fmt == FORMAT_KSTATE and not (isinstance(raw, dict) and "transition" in raw):
        raise ValueError(f"{where}: field 'chain' must be an object with labels and transition")
    chain = chain_from_dict(raw, f"{where}: field 'chain'")
    if isinstance(chain, VaryingChain) and chain.n != _int_field(require_field(d, "n", where), "n", where, 1):
        raise ValueError(f"{where}: field 'chain' has {chain.n} rows (its level_runs) but 'n' is {d['n']}")
    if fmt in (FORMAT, FORMAT_KSTATE):
        states = require_field(d, "states", where)
        if not isinstance(states, list) or [str(v) for v in states] != [str(v) for v in chain.labels]:
            raise ValueError(f"{where}: field 'states' must list the chain's labels in order "
                             f"{[str(v) for v in chain.labels]}")
    n = _int_field(require_field(d, "n", where), "n", where, 1)
    q: np.ndarray | SparseRows
    if fmt == FORMAT_DENSE:
        try:
            q = check_redact_prob(require_field(d, "redact_prob", where), "redact_prob", n=n)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: field 'redact_prob': {exc}") from None
    else:
        q = _sparse_rows(d, n, where, k=chain.k)
    priv = private_positions(d, n, where)
    try:
        eps = check_eps(require_field(d, "eps", where))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: field 'eps': {exc}") from None
    if isinstance(q, SparseRows):
        privt = tuple(sorted(set(priv)))
        _check_private_rows(q, list(privt), where)
    else:
        try:
            q, privt = check_mechanism(q, priv)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    method = d.get("method", "unknown")
    if not isinstance(method, str):
        raise ValueError(f"{where}: field 'method' must be a string, got {method!r}")
    cert = d.get("certificate")
    if cert is not None and not isinstance(cert, dict):
        raise ValueError(f"{where}: field 'certificate' must be an object")
    util = d.get("utility")
    leak = d.get("leakage")
    for key, val in (("utility", util), ("leakage", leak)):
        if val is not None and (isinstance(val, bool) or not isinstance(val, (int, float))):
            raise ValueError(f"{where}: field '{key}' must be a number or null, got {val!r}")
    return StoredMechanism(chain, q, privt, eps, method, util, leak, cert)


def mechanism_from_dict(d: object, where: str = "mechanism") -> MechanismFile:
    """A mechanism object of a binary chain (``redactopt.mechanism/1``, ``/2``, ``/3``), parsed and checked.

    Rows stay sparse (never ``n`` rows) for the blocks formats.  A chain given as a matrix is read by
    the categorical path (:func:`redactopt.kio.kmechanism_from_dict`); here it is refused in one line.
    """
    m = parse_mechanism(d, where)
    if not is_markov(m.chain):
        raise ValueError(f"{where}: the chain is given as a {m.chain.k}-state matrix (states "
                         f"{[str(v) for v in m.chain.labels]}); it is read as a categorical mechanism")
    return MechanismFile(m.chain, m.redact_prob, m.private, m.eps, m.method, m.utility, m.leakage, m.certificate,
                         _chain_class(d.get("chain_class"), where))  # type: ignore[union-attr]


def _chain_class(raw: object, where: str) -> ChainClass | None:
    """The optional ``chain_class`` field: ``{"alpha": [lo, hi], "beta": [lo, hi]}`` or ``{"chains": [...]}``."""
    if raw is None:
        return None
    name = f"{where}: field 'chain_class'"
    if not isinstance(raw, dict):
        raise ValueError(f"{name} must be an object")
    try:
        nom = raw.get("nominal")
        nominal = MarkovChain(nom["alpha"], nom["beta"]) if isinstance(nom, dict) else None
        if "chains" in raw:
            return ChainClass.of([MarkovChain(c["alpha"], c["beta"]) for c in raw["chains"]], nominal=nominal)
        return ChainClass.box(tuple(raw["alpha"]), tuple(raw["beta"]), nominal=nominal)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{name}: {exc}") from None


def load_json(path: str | os.PathLike[str]) -> tuple[Any, str]:
    """The parsed JSON of a file (``-``: standard input) and the name to use in messages."""
    where = "<stdin>" if str(path) == STDIO else str(path)
    if str(path) == STDIO:
        text = sys.stdin.read()
    else:
        p = check_input_path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except IsADirectoryError:
            raise ValueError(f"{p}: is a directory, expected a mechanism JSON file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"{p}: cannot read: {exc}") from None
    try:
        return json.loads(text), where
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None


@dataclass(frozen=True)
class KMechanismFile(StoredMechanism):
    """A parsed mechanism of a chain given as a matrix; ``private`` is 0-based, ``redact_prob`` dense ``(n, k)``.

    ``utility``, ``leakage`` and ``certificate`` are what the file *claims*; audits recompute them.
    """

    chain: Chain
    redact_prob: np.ndarray


def kmechanism_from_dict(d: object, where: str = "mechanism") -> KMechanismFile:
    """Validate and parse a mechanism object of a chain given as a matrix (``/3`` or ``kmechanism/1``)."""
    if not is_matrix_file(d):
        fmt = d.get("format") if isinstance(d, dict) else None
        raise ValueError(f"{where}: field 'format' must be {FORMAT!r} with a chain given as a matrix "
                         f"(or the older {FORMAT_KSTATE!r}), got {fmt!r}")
    m = parse_mechanism(d, where)
    rows = m.redact_prob
    q = np.asarray(rows, dtype=float) if isinstance(rows, SparseRows) else rows
    return KMechanismFile(m.chain, q, m.private, m.eps, m.method, m.utility, m.leakage, m.certificate)


def read_mechanism(path: str | os.PathLike[str]) -> StoredMechanism:
    """Read and validate a mechanism JSON file of any chain and format (``-``: standard input).

    A binary chain given by ``alpha``/``beta`` gives a :class:`MechanismFile` (rows kept sparse), a
    chain given as a matrix a :class:`KMechanismFile` (dense ``(n, k)`` rows).
    """
    d, where = load_json(path)
    if is_matrix_file(d):
        return kmechanism_from_dict(d, where=where)
    return mechanism_from_dict(d, where=where)


def read_mechanisms(path: str | os.PathLike[str]) -> list[tuple[Any, MechanismFile]]:
    """The mechanisms of a mechanism file or of an ``apply`` report, with their sequence ids.

    A mechanism file gives one ``(None, mechanism)``; a report gives one pair per sequence
    that has private records (its id, or ``None`` for a report on a single sequence).  A
    ``/3`` report's sequences that do not carry their mechanism (a columnar file beside the
    report, ``sequences_file``, or compact rows) are rebuilt from its ``shapes`` and groups.
    """
    d, where = load_json(path)
    if not isinstance(d, dict) or d.get("format") not in REPORT_FORMATS:
        return [(None, mechanism_from_dict(d, where=where))]
    if "sequences" in d or "sequences_file" in d:
        seqs = d["sequences"] if "sequences" in d else sequence_rows(path, d, where)
        if not isinstance(seqs, list):
            raise ValueError(f"{where}: field 'sequences' must be a list")
        out = []
        placed = None
        for s in seqs:
            if not isinstance(s, dict):
                continue
            name = f"{where}: sequence {s.get('id')!r}"
            if s.get("mechanism") is not None:
                out.append((s.get("id"), mechanism_from_dict(s["mechanism"], where=name)))
            elif s.get("groups"):
                placed = placed or _Shapes(d, where)
                out.append((s.get("id"), placed.mechanism(s, name)))
        if not out:
            raise ValueError(f"{where}: the report has no designed sequence")
        return out
    return [(None, mechanism_from_dict(require_field(d, "mechanism", where), where=f"{where}: mechanism"))]


def sequence_rows(path: str | os.PathLike[str], d: dict, where: str) -> list:
    """The rows of a report's ``sequences_file`` (beside the report; Parquet or JSON lines)."""
    name = d["sequences_file"]
    if not isinstance(name, str) or Path(name).name != name:
        raise ValueError(f"{where}: field 'sequences_file' must be a file name beside the report, got {name!r}")
    side = (Path(".") if str(path) == STDIO else Path(path).parent) / name
    check_input_path(side)
    try:
        if name.endswith(".jsonl"):
            return [json.loads(line) for line in side.read_text(encoding="utf-8").splitlines() if line.strip()]
        import pyarrow.parquet as pq

        return pq.read_table(side).to_pylist()
    except (OSError, ValueError) as exc:
        raise ValueError(f"{side}: cannot read the report's sequences: {exc}") from None


class _Shapes:
    """The ``shapes`` of a ``/3`` report, parsed once, and the mechanisms of sequences that place them."""

    def __init__(self, d: dict, where: str) -> None:
        raw = require_field(d, "shapes", where)
        if not isinstance(raw, list):
            raise ValueError(f"{where}: field 'shapes' must be a list")
        self.where = where
        self.method = d.get("method", "unknown")
        self.keys = [require_field(s, "key", f"{where}: shapes[{i}]") for i, s in enumerate(raw)]
        self.files = [mechanism_from_dict(require_field(s, "mechanism", f"{where}: shapes[{i}]"),
                                          where=f"{where}: shapes[{i}].mechanism") for i, s in enumerate(raw)]

    def mechanism(self, row: dict, where: str) -> MechanismFile:
        n = _int_field(require_field(row, "n", where), "n", where, 1)
        parts = []
        mf = None
        for i, g in enumerate(require_field(row, "groups", where)):
            k = g.get("shape") if isinstance(g, dict) else None
            if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(self.files):
                raise ValueError(f"{where}: field 'groups[{i}].shape' must name one of the report's shapes, got {k!r}")
            mf, key = self.files[k], self.keys[k]
            rows = mf.redact_prob
            wipe = g.get("wipe")
            first = _int_field(g.get("first"), f"groups[{i}].first", where, 1, n)
            if not (isinstance(wipe, list) and len(wipe) == 2 and all(isinstance(w, int) and w >= 0 for w in wipe)):
                raise ValueError(f"{where}: field 'groups[{i}].wipe' must be two counts, got {wipe!r}")
            pieces = placed_pieces([(s, b.shape[0]) for s, b in zip(rows.starts, rows.blocks)],
                                   first - 1 - int(key["left"]), int(key["n"]), (wipe[0], wipe[1]))
            parts += [(s, np.ones((m, 2)) if j < 0 else rows.blocks[j]) for s, m, j in pieces]
        assert mf is not None
        try:
            starts, blocks = merge_blocks(n, parts)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        sparse = SparseRows(n, tuple(starts), tuple(blocks))
        priv = sorted({_int_field(p, "private", where, 1, n) - 1 for p in require_field(row, "private", where)})
        _check_private_rows(sparse, priv, where)
        cert = {k: row[k] for k in ("upper_bound", "gap") if k in row}
        return MechanismFile(mf.chain, sparse, tuple(priv), mf.eps, self.method, row.get("expected_utility"),
                             row.get("leakage_max"), cert or None, mf.chain_class)


def write_json_atomic(path: str | os.PathLike[str], obj: Any, *, force: bool = False) -> None:
    """Write JSON through a temporary file and a rename; refuse to overwrite unless ``force``."""
    write_text_atomic(path, json.dumps(obj, indent=2) + "\n", force=force)


def write_text_atomic(path: str | os.PathLike[str], text: str, *, force: bool = False) -> None:
    """Write text through a temporary file and a rename (``-``: standard output)."""
    with atomic_open(path, force=force) as fh:
        fh.write(text)


def write_output(text: str, out: str | None, *, force: bool = False) -> None:
    """A command's text, ending in a newline, to standard output (``out`` ``None`` or ``-``) or to
    the file ``out`` (:func:`write_text_atomic`)."""
    text = text if text.endswith("\n") else text + "\n"
    if out is None or out == STDIO:
        sys.stdout.write(text)
    else:
        write_text_atomic(out, text, force=force)


def check_input_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a :class:`~pathlib.Path`; a missing one is a :class:`~redactopt.errors.MissingInputError`
    (a ``FileNotFoundError`` and a ``ValueError``) in the one wording."""
    from redactopt.errors import MissingInputError

    p = Path(path)
    if not p.exists():
        raise MissingInputError(f"{p}: no such file or directory")
    return p


#: What the last extension of a file name says the file holds (:func:`check_output_name`).
NAMED_FORMATS = {
    ".json": "JSON", ".jsonl": "JSON lines", ".csv": "CSV", ".tsv": "tab-separated text", ".txt": "text",
    ".md": "Markdown", ".parquet": "Parquet", ".pq": "Parquet", ".parq": "Parquet", ".html": "HTML", ".htm": "HTML",
    ".png": "a PNG image", ".svg": "an SVG image", ".pdf": "PDF", ".gz": "gzip-compressed", ".bz2": "bzip2-compressed",
    ".xz": "xz-compressed", ".zst": "zstd-compressed", ".zip": "a zip archive", ".xlsx": "a spreadsheet",
}
#: The extensions a text output of each kind may have; any extension not in :data:`NAMED_FORMATS` is accepted too.
OUTPUT_EXTENSIONS = {"json": (".json",), "csv": (".csv",), "text": (".txt", ".md"), "jsonl": (".jsonl",)}
_KIND_NAMES = {"json": "JSON", "csv": "CSV", "text": "text", "jsonl": "JSON lines"}


def check_output_name(path: str | os.PathLike[str], kind: str, *, option: str | None = None) -> None:
    """Refuse (``ValueError``, one line naming ``path`` as given) an output whose extension names another
    format than the ``kind`` written (a key of :data:`OUTPUT_EXTENSIONS`): ``o.csv`` for JSON, ``o.json.gz``
    for plain text.  A name without an extension, or with one no format claims, is accepted."""
    suffix = Path(path).suffix.lower()
    if suffix in NAMED_FORMATS and suffix not in OUTPUT_EXTENSIONS[kind]:
        shown = f"{option} {os.fspath(path)}" if option else os.fspath(path)
        raise ValueError(f"{shown}: the name ends in {suffix} ({NAMED_FORMATS[suffix]}) but this output is "
                         f"{_KIND_NAMES[kind]}; use a name ending in {' or '.join(OUTPUT_EXTENSIONS[kind])}")


def check_output_path(path: str | os.PathLike[str], *, force: bool, directory: bool = False,
                      option: str | None = None, kind: str | None = None) -> Path:
    """Checks before anything is read or written for an output ``path``; returns it as a :class:`~pathlib.Path`.

    ``kind`` (optional): the format written, whose extension :func:`check_output_name` checks.  Its
    directory must exist (outputs never create directories) and take a new file (one is created
    there and removed again: the answer is the file system's, whoever runs it); an existing ``path``
    is refused unless ``force``; a file output may not be an existing directory (a ``directory``
    output, a Parquet dataset, replaces whatever is there when forced).  Every refusal is one line
    naming ``option`` and ``path`` as given (``ValueError``; ``FileExistsError`` for an existing file).
    """
    shown = f"{option} {os.fspath(path)}" if option else os.fspath(path)
    check_output_dir(path, option=option)
    if kind is not None:
        check_output_name(path, kind, option=option)
    p = Path(path)
    if p.exists():
        if not directory and p.is_dir():
            raise ValueError(f"{shown}: is a directory")
        if not force:
            raise FileExistsError(f"{shown}: exists; pass --force to overwrite")
    check_writable(p, shown=shown)
    return p


def check_output_dir(path: str | os.PathLike[str], *, option: str | None = None) -> None:
    """Refuse (``ValueError``, one line) an output whose directory does not exist: outputs never create one."""
    parent = Path(path).parent
    if not parent.is_dir():
        shown = f"{option} {os.fspath(path)}" if option else os.fspath(path)
        why = "is not a directory" if parent.exists() else "does not exist"
        raise ValueError(f"{shown}: directory {parent} {why} (create it first; outputs never create directories)")


def check_writable(path: str | os.PathLike[str], *, shown: str | None = None) -> None:
    """Refuse (``ValueError``, one line) an output whose directory does not take a new file: a file is
    created there and removed again, so the answer is the file system's, whoever runs it."""
    p = Path(path)
    try:
        fd, probe = _tempfiles.temp_file(prefix=f".{p.name}.", suffix=".probe", dir=p.parent)
    except OSError as exc:
        raise ValueError(f"{os.fspath(path) if shown is None else shown}: cannot write in {p.parent}: "
                         f"{exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(probe)
    _tempfiles.settled(probe)


def _umask() -> int:
    """The process's file-creation mask, read without changing it where Linux allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def new_file_mode(*, directory: bool = False) -> int:
    """The permissions the umask gives a new file (``0o666 & ~umask``) or directory (``0o777 & ~umask``).

    Temporary files and folders are created private (``0o600``/``0o700``); outputs get
    this mode before they are renamed into place, as if they had been created directly.
    """
    return (0o777 if directory else 0o666) & ~_umask()


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, force: bool = False) -> Iterator[Path]:
    """A temporary path beside ``path`` that is renamed to ``path`` when the ``with`` block completes.

    For writers that take a file name (Parquet): checks as :func:`check_output_path`, the
    permissions the umask gives a new file, and the temporary file removed on any error.
    """
    p = check_output_path(path, force=force)
    fd, tmp = _tempfiles.temp_file(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        os.fchmod(fd, new_file_mode())
        os.close(fd)
        yield Path(tmp)
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    finally:
        _tempfiles.settled(tmp)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], *, force: bool = False) -> Iterator[TextIO]:
    """A text file that appears at ``path`` only when the ``with`` block completes.

    Writes go to a temporary file in the same directory, renamed over ``path`` at the end
    and removed on any error (:func:`atomic_path`); an existing ``path`` is refused unless
    ``force``; a missing directory is an error.  ``-`` writes to standard output.
    """
    if str(path) == STDIO:
        yield sys.stdout
        sys.stdout.flush()
        return
    with atomic_path(path, force=force) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        yield fh


@contextlib.contextmanager
def stdin_as_file(path: str | os.PathLike[str], *, suffix: str = ".csv") -> Iterator[Path]:
    """``path`` itself, or for ``-`` a temporary copy of standard input (removed afterwards).

    Tables are read twice (scan, then release), which standard input cannot do; the copy
    is on disk, so memory stays independent of the input's length.
    """
    if str(path) != STDIO:
        yield Path(path)
        return
    fd, tmp = _tempfiles.temp_file(prefix="redactopt-stdin.", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            shutil.copyfileobj(sys.stdin.buffer, fh, 1 << 20)
        yield Path(tmp)
    finally:
        os.unlink(tmp)
        _tempfiles.settled(tmp)
