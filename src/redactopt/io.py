"""Files: the mechanism file format ``redactopt.mechanism/1`` and how every output is written.

Files count records from 1 (``private`` is 1-based); the Python API counts from 0.

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
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from redactopt._validate import check_eps, check_redact_prob
from redactopt.model.chain import MarkovChain
from redactopt.judge.certify import DesignResult, SparseDesign, SparseRows
from redactopt.judge.leakage import check_mechanism

__all__ = [
    "FORMAT",
    "REPORT_FORMAT",
    "STDIO",
    "MechanismFile",
    "mechanism_to_dict",
    "design_to_dict",
    "mechanism_from_dict",
    "read_mechanism",
    "read_mechanisms",
    "write_json_atomic",
    "write_text_atomic",
    "atomic_open",
    "check_input_path",
    "check_output_path",
    "new_file_mode",
    "stdin_as_file",
]

FORMAT = "redactopt.mechanism/1"
#: The report ``apply`` writes; it carries the mechanism of every designed sequence.
REPORT_FORMAT = "redactopt.release.apply-report/1"
#: The path that means standard input or standard output.
STDIO = "-"


@dataclass(frozen=True)
class MechanismFile:
    """A parsed mechanism file; ``private`` is 0-based here.

    ``utility``, ``leakage`` and ``certificate`` are what the file *claims*; audits
    recompute them.
    """

    chain: MarkovChain
    redact_prob: np.ndarray
    private: tuple[int, ...]
    eps: float
    method: str
    utility: float | None
    leakage: float | None
    certificate: dict | None


def _finite_or_none(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def mechanism_to_dict(
    chain: MarkovChain,
    redact_prob: np.ndarray,
    *,
    private: tuple[int, ...] | list[int],
    eps: float,
    method: str,
    utility: float,
    leakage: float,
) -> dict[str, Any]:
    """The mechanism file object (README, "Mechanism file") of a mechanism (``private`` given 0-based)."""
    q = np.asarray(redact_prob, dtype=float)
    return {
        "format": FORMAT,
        "chain": {"alpha": chain.alpha, "beta": chain.beta},
        "n": int(q.shape[0]),
        "private": [int(p) + 1 for p in private],
        "eps": float(eps),
        "redact_prob": q.tolist(),
        "method": method,
        "utility": _finite_or_none(utility),
        "leakage": _finite_or_none(leakage),
    }


def design_to_dict(res: DesignResult | SparseDesign, *, stream: bool = False) -> dict[str, Any]:
    """The mechanism file of a verified design, with its ``certificate``.

    With ``stream=True`` ``redact_prob`` stays an array or a
    :class:`~redactopt.judge.certify.SparseRows` (for writers that stream it in pieces, so a
    long sequence is never held as a list of Python floats); otherwise it is a list.
    """
    if stream:
        q = res.redact_prob if isinstance(res.redact_prob, SparseRows) else np.asarray(res.redact_prob)
        d = mechanism_to_dict(res.chain, np.zeros((0, 2)), private=res.private, eps=res.eps,
                              method=res.method, utility=res.utility, leakage=res.leakage)
        d["n"], d["redact_prob"] = int(res.redact_prob.shape[0]), q
    else:
        d = mechanism_to_dict(res.chain, np.asarray(res.redact_prob), private=res.private, eps=res.eps,
                              method=res.method, utility=res.utility, leakage=res.leakage)
    d["certificate"] = res.certificate.to_dict()
    return d


def _require(d: dict, key: str, where: str) -> Any:
    if key not in d:
        raise ValueError(f"{where}: missing field '{key}'")
    return d[key]


def mechanism_from_dict(d: object, where: str = "mechanism") -> MechanismFile:
    """Validate and parse a mechanism object; errors name the field."""
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(d).__name__}")
    fmt = _require(d, "format", where)
    if fmt != FORMAT:
        raise ValueError(f"{where}: field 'format' must be {FORMAT!r}, got {fmt!r}")
    chain_d = _require(d, "chain", where)
    if not isinstance(chain_d, dict):
        raise ValueError(f"{where}: field 'chain' must be an object with alpha and beta")
    try:
        chain = MarkovChain(_require(chain_d, "alpha", where + ".chain"), _require(chain_d, "beta", where + ".chain"))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: field 'chain': {exc}") from None
    n = _require(d, "n", where)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{where}: field 'n' must be an integer >= 1, got {n!r}")
    try:
        q = check_redact_prob(_require(d, "redact_prob", where), "redact_prob", n=n)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: field 'redact_prob': {exc}") from None
    priv_raw = _require(d, "private", where)
    if not isinstance(priv_raw, list) or not priv_raw:
        raise ValueError(f"{where}: field 'private' must be a non-empty list of 1-based positions")
    priv = []
    for v in priv_raw:
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= n:
            raise ValueError(f"{where}: field 'private' must hold positions in 1..{n}, got {v!r}")
        priv.append(v - 1)
    try:
        eps = check_eps(_require(d, "eps", where))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: field 'eps': {exc}") from None
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
    return MechanismFile(chain, q, privt, eps, method, util, leak, cert)


def _load_json(path: str | os.PathLike[str]) -> tuple[Any, str]:
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


def read_mechanism(path: str | os.PathLike[str]) -> MechanismFile:
    """Read and validate a mechanism JSON file (``-``: standard input)."""
    d, where = _load_json(path)
    return mechanism_from_dict(d, where=where)


def read_mechanisms(path: str | os.PathLike[str]) -> list[tuple[Any, MechanismFile]]:
    """The mechanisms of a mechanism file or of an ``apply`` report, with their sequence ids.

    A mechanism file gives one ``(None, mechanism)``; a report gives one pair per sequence
    that has private records (its id, or ``None`` for a report on a single sequence).
    """
    d, where = _load_json(path)
    if not isinstance(d, dict) or d.get("format") != REPORT_FORMAT:
        return [(None, mechanism_from_dict(d, where=where))]
    if "sequences" in d:
        seqs = d["sequences"]
        if not isinstance(seqs, list):
            raise ValueError(f"{where}: field 'sequences' must be a list")
        out = [(s.get("id"), mechanism_from_dict(s["mechanism"], where=f"{where}: sequence {s.get('id')!r}"))
               for s in seqs if isinstance(s, dict) and s.get("mechanism") is not None]
        if not out:
            raise ValueError(f"{where}: the report has no designed sequence")
        return out
    return [(None, mechanism_from_dict(_require(d, "mechanism", where), where=f"{where}: mechanism"))]


def write_json_atomic(path: str | os.PathLike[str], obj: Any, *, force: bool = False) -> None:
    """Write JSON through a temporary file and a rename; refuse to overwrite unless ``force``."""
    write_text_atomic(path, json.dumps(obj, indent=2) + "\n", force=force)


def write_text_atomic(path: str | os.PathLike[str], text: str, *, force: bool = False) -> None:
    """Write text through a temporary file and a rename (``-``: standard output)."""
    with atomic_open(path, force=force) as fh:
        fh.write(text)


def check_input_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a :class:`~pathlib.Path`; a missing one is a ``ValueError`` in the one wording."""
    p = Path(path)
    if not p.exists():
        raise ValueError(f"{p}: no such file or directory")
    return p


def check_output_path(path: str | os.PathLike[str], *, force: bool, directory: bool = False) -> Path:
    """Checks before anything is written to ``path``; returns it as a :class:`~pathlib.Path`.

    Its directory must exist (outputs never create directories); an existing ``path`` is
    refused unless ``force``; a file output may not be an existing directory (a
    ``directory`` output, a Parquet dataset, replaces whatever is there when forced).
    """
    p = Path(path)
    parent = p.parent
    if not parent.is_dir():
        raise ValueError(f"{p}: directory {parent} does not exist (create it first; outputs never create directories)")
    if p.exists():
        if not directory and p.is_dir():
            raise ValueError(f"{p}: is a directory")
        if not force:
            raise FileExistsError(f"{p}: exists; pass --force to overwrite")
    return p


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
def atomic_open(path: str | os.PathLike[str], *, force: bool = False) -> Iterator[TextIO]:
    """A text file that appears at ``path`` only when the ``with`` block completes.

    Writes go to a temporary file in the same directory, renamed over ``path`` at the end
    and removed on any error; an existing ``path`` is refused unless ``force``; a missing
    directory is an error.  ``-`` writes to standard output.
    """
    if str(path) == STDIO:
        yield sys.stdout
        sys.stdout.flush()
        return
    p = check_output_path(path, force=force)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        os.fchmod(fd, new_file_mode())
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def stdin_as_file(path: str | os.PathLike[str], *, suffix: str = ".csv") -> Iterator[Path]:
    """``path`` itself, or for ``-`` a temporary copy of standard input (removed afterwards).

    Tables are read twice (scan, then release), which standard input cannot do; the copy
    is on disk, so memory stays independent of the input's length.
    """
    if str(path) != STDIO:
        yield Path(path)
        return
    fd, tmp = tempfile.mkstemp(prefix="redactopt-stdin.", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            shutil.copyfileobj(sys.stdin.buffer, fh, 1 << 20)
        yield Path(tmp)
    finally:
        os.unlink(tmp)
