"""Input checks shared by the public API.

Every check raises ``TypeError`` for a wrong type and ``ValueError`` for a wrong
value, and every message names the parameter and the value it got, so that the
CLI can print it as a one-line error.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = [
    "check_real",
    "check_eps",
    "check_probability_open",
    "check_n",
    "check_index",
    "check_delta",
    "check_redact_prob",
    "check_private",
]


def check_real(value: object, name: str) -> float:
    """Return ``value`` as a finite float or raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return x


def check_eps(value: object, name: str = "eps") -> float:
    """A privacy budget: finite and strictly positive."""
    x = check_real(value, name)
    if x <= 0.0:
        raise ValueError(f"{name} must be > 0, got {x!r}")
    return x


def check_probability_open(value: object, name: str) -> float:
    """A transition probability strictly inside (0, 1)."""
    x = check_real(value, name)
    if not 0.0 < x < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {x!r}")
    return x


def _check_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    return int(value)


#: Largest number of records a mechanism may describe (an (n, 2) float array in memory).
MAX_N = 10**8


def check_n(value: object, name: str = "n") -> int:
    """A number of records, at least 1 and at most :data:`MAX_N`."""
    n = _check_int(value, name)
    if n < 1:
        raise ValueError(f"{name} must be >= 1, got {n}")
    if n > MAX_N:
        raise ValueError(f"{name} must be <= {MAX_N} (an (n, 2) mechanism must fit in memory), got {n}")
    return n


def check_delta(value: object, name: str = "delta", *, allow_zero: bool = False) -> int:
    """A distance between records (>= 1, or >= 0 when ``allow_zero``)."""
    d = _check_int(value, name)
    low = 0 if allow_zero else 1
    if d < low:
        raise ValueError(f"{name} must be >= {low}, got {d}")
    return d


def check_index(value: object, n: int, name: str = "p") -> int:
    """A 0-based record index in ``0..n-1``."""
    i = _check_int(value, name)
    if not 0 <= i < n:
        raise ValueError(f"{name} must be a 0-based index in 0..{n - 1}, got {i}")
    return i


def check_private(value: object, n: int, name: str = "private") -> tuple[int, ...]:
    """One 0-based private index or a non-empty collection of them, sorted and unique."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return (check_index(value, n, name),)
    if isinstance(value, (numbers.Real, bool)):
        raise TypeError(f"{name} must be an integer index, got {value!r}")
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be an index or a list of indices, got {value!r}")
    items = tuple(check_index(v, n, name) for v in value)
    if not items:
        raise ValueError(f"{name} must name at least one record")
    return tuple(sorted(set(items)))


def check_positions(private: object, n: int) -> tuple[int, ...]:
    """0-based private positions (:func:`check_private`) of an ``n``-record sequence; one beyond
    its end is named as ``--private`` takes it, 1-based."""
    items = check_private(private, sys.maxsize, "private")
    if items and items[-1] >= n:
        raise ValueError(f"--private: position {next(p for p in items if p >= n) + 1} is outside the sequence "
                         f"(positions 1..{n})")
    return items


def check_redact_prob(value: object, name: str = "redact_prob", *, n: int | None = None, k: int = 2) -> np.ndarray:
    """An ``(n, k)`` array of Pr(Y_t = bottom | X_t = x) with entries in [0, 1] (``k`` states, one column each)."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be an (n, {k}) array of probabilities, got a string")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an (n, {k}) array of probabilities: {exc}") from None
    if arr.ndim != 2 or arr.shape[1] != k or arr.shape[0] < 1:
        per_state = " (one column per state)" if k != 2 else ""
        raise ValueError(f"{name} must have shape (n, {k}){per_state} with n >= 1, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} must have {n} rows, got {arr.shape[0]}")
    lo, hi = float(arr.min()), float(arr.max())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        bad = int(np.argwhere(~np.isfinite(arr))[0][0])
        raise ValueError(f"{name} must be finite, row {bad} (0-based) is {arr[bad].tolist()}")
    if lo < 0.0 or hi > 1.0:
        bad = int(np.argwhere((arr < 0.0) | (arr > 1.0))[0][0])
        raise ValueError(
            f"{name} entries must lie in [0, 1], row {bad} (0-based) is {arr[bad].tolist()}"
        )
    return arr


def sequence_of_floats(values: Sequence[float], name: str) -> list[float]:
    """A list of finite floats (used for grids of eps and the like)."""
    return [check_real(v, name) for v in values]
