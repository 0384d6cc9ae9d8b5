r"""A Markov chain whose transition matrix may change from step to step (issue 33).

Records :math:`X_1..X_n` on ``k`` labelled states with a law :math:`\pi_1` of the first record and
one stochastic matrix per step, :math:`P_t(x, y)=\Pr(X_{t+1}=y\mid X_t=x)`.  The matrices are
named by *levels* (an hour of the day, a weekday, or one level per step): every row has a level,
and the step from row ``t`` to row ``t + 1`` uses row ``t``'s level (the last row's level is used by
no step).  A homogeneous stationary chain (:class:`~redactopt.model.chain.Chain`) is the constant
case: one level and :math:`\pi_1` its stationary law (:meth:`VaryingChain.constant` finds it, and
the judges then take the constant path and its two-state closed forms).

**Marginals.**  :math:`\pi_{t+1}=\pi_tP_t` (:meth:`VaryingChain.marginals`), computed forward from
:math:`\pi_1` with only products and sums of non-negative numbers (no subtraction), each vector
divided by its sum: every entry keeps a small *relative* error (about ``k`` ulps per step), however
small it is.  A run of rows of one level is propagated with the powers :math:`P^j` of its matrix
(successive products, the same accuracy), so the cost is one small product per block of a run
rather than one Python step per row.

**Time reversal.**  The records left of a private record, read outward, form the reversed steps

.. math:: \tilde P_t(y\to x)=\Pr(X_t=x\mid X_{t+1}=y)=\frac{\pi_t(x)P_t(x,y)}{\sum_{x'}\pi_t(x')P_t(x',y)},

each row divided by the sum of its own (non-negative) numerators rather than by the separately
computed :math:`\pi_{t+1}(y)`, so a row sums to 1 up to rounding and no entry suffers
cancellation (:meth:`VaryingChain.backward_steps`).  A state with :math:`\pi_{t+1}(y)=0` cannot be
observed at row ``t + 1``; its row is never reached by an output of positive probability and is set
to the uniform law.

**Exactness.**  As for :class:`~redactopt.model.chain.Chain`, a matrix of doubles stands for
the rational matrix obtained by dividing each row by its exact sum, and Fractions (or decimal text)
are kept exactly (:attr:`VaryingChain.exact_matrices`, :attr:`VaryingChain.exact_initial`); the
rational evaluator (:mod:`redactopt.judge.exact`) judges that model.

Positions are 0-based in the Python API; files count rows from 1 (:meth:`VaryingChain.to_dict`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import FrozenInstanceError
from fractions import Fraction
from typing import Any

import numpy as np
from typing import Union

from redactopt.model.chain import Chain, MarkovChain, check_labels, check_transition

__all__ = ["VaryingChain", "is_varying", "as_varying", "level_runs", "judged_chain", "chain_window", "row_laws",
           "AnyChain"]

#: Runs of one level longer than this are propagated in blocks of the matrix's powers.
_POWER_BLOCK = 256


def _law(values: object, k: int, name: str) -> tuple[np.ndarray, tuple[Fraction, ...]]:
    """A probability vector of length ``k``: floats (normalised by the exact sum) or exact Fractions/text."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a sequence of {k} probabilities, got {values!r}")
    vals = list(values.tolist() if isinstance(values, np.ndarray) else values)
    if len(vals) != k:
        raise ValueError(f"{name} must hold {k} probabilities (one per state), got {len(vals)}")
    if all(isinstance(v, str) for v in vals) or any(isinstance(v, Fraction) for v in vals):
        try:
            ex = [Fraction(v.strip()) if isinstance(v, str) else Fraction(v) for v in vals]
        except (ValueError, ZeroDivisionError, TypeError):
            raise TypeError(f"{name} entries must be numbers such as '0.25' or '1/4'") from None
        if any(v < 0 for v in ex) or sum(ex) != 1:
            raise ValueError(f"{name} must be non-negative and sum to exactly 1 (exact entries), got {vals}")
        arr = np.array([float(v) for v in ex])
        if any(v > 0 and a == 0.0 for v, a in zip(ex, arr)):
            raise ValueError(f"{name} holds a positive entry that rounds to 0.0 as a double")
        return arr, tuple(ex)
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name} entries must be numbers, got {v!r}")
    arr = np.array(vals, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0.0):
        raise ValueError(f"{name} entries must be finite and non-negative, got {vals}")
    if abs(float(arr.sum()) - 1.0) > 1e-9:
        raise ValueError(f"{name} must sum to 1, got {float(arr.sum())!r}")
    fr = [Fraction(float(v)) for v in arr]
    total = sum(fr)
    return arr, tuple(v / total for v in fr)  # the doubles as given; exactly, divided by their exact sum


def _matrix_powers(P: np.ndarray, m: int) -> np.ndarray:
    """:math:`P^1..P^m` by successive products (non-negative: small relative error per entry)."""
    out = np.empty((m,) + P.shape)
    out[0] = P
    for j in range(1, m):
        out[j] = out[j - 1] @ P
    return out


def level_runs(row_level: np.ndarray) -> list[tuple[int, int, int]]:
    """Maximal runs of equal levels: ``(first_row, last_row, level)`` (0-based, inclusive)."""
    lv = np.asarray(row_level)
    if lv.size == 0:
        return []
    cut = np.flatnonzero(lv[1:] != lv[:-1]) + 1
    starts = np.concatenate(([0], cut))
    ends = np.concatenate((cut - 1, [lv.size - 1]))
    return [(int(a), int(b), int(lv[a])) for a, b in zip(starts, ends)]


class VaryingChain:
    r"""A chain on ``k`` labelled states whose step matrix depends on the level of the row (immutable).

    Parameters
    ----------
    levels : mapping of level name to (k, k) matrix, or sequence of (k, k) matrices
        One stochastic matrix per level (:func:`~redactopt.model.chain.check_transition` without
        the primitivity check; Fractions and decimal text are kept exactly).  A sequence names its
        levels ``"0"``, ``"1"``, ...
    row_levels : sequence of level names (or level indices), length ``n``
        The level of each row; the step from row ``t`` to row ``t + 1`` uses row ``t``'s level.
    initial : sequence of k probabilities, optional
        :math:`\pi_1`, the law of the first row.  Default: the stationary law of the first row's
        level matrix (which must then be primitive).
    labels : sequence of k hashable values, optional
        The states' names (default ``"0" .. "k-1"``).

    Attributes
    ----------
    rounding_steps : int
        How many floating-point steps of propagation the initial law went through: 0 when given; a
        :meth:`window` starting at row ``lo`` adds ``lo`` (its initial law is a computed marginal).
        The judges widen their decision band by the error this can cause
        (:func:`redactopt.judge.tolerances.chain_zone`).

    Notes
    -----
    Equality and hashing are by the labels, the exact level matrices, the level of every row and the
    exact initial law.  :meth:`window` restricts the chain to a range of rows (its initial law is
    the marginal of the range's first row); :meth:`constant` returns the homogeneous stationary
    :class:`~redactopt.model.chain.Chain` it equals, if any.
    """

    def __init__(self, levels: Mapping[str, object] | Sequence[object], row_levels: Sequence[object],
                 initial: Sequence[object] | None = None, labels: Sequence[Hashable] | None = None) -> None:
        names, mats = _levels(levels)
        floats, exacts, raws = [], [], []
        for name, M in zip(names, mats):
            raws.append(_raw_rows(M))
            arr, ex = check_transition(M, f"transition of level {name!r}", primitive=False,
                                       labels=None if labels is None else [str(v) for v in labels])
            floats.append(arr)
            exacts.append(ex)
        k = floats[0].shape[0]
        if any(a.shape[0] != k for a in floats):
            raise ValueError(f"every level's matrix must be {k} x {k}, got {[a.shape[0] for a in floats]}")
        row_level = _row_levels(row_levels, names)
        stacked = np.ascontiguousarray(np.stack(floats))
        stacked.setflags(write=False)
        lab = check_labels(labels, k)
        if initial is None:
            first = int(row_level[0])
            try:
                init = Chain([list(r) for r in exacts[first]]).exact_stationary()
            except ValueError as exc:
                raise ValueError(f"initial must be given: the first row's level {names[first]!r} has no unique "
                                 f"stationary law ({exc})") from None
            init_f, init_x, init_raw = np.array([float(v) for v in init]), tuple(init), None
        else:
            init_f, init_x = _law(initial, k, "initial")
            init_raw = _raw_rows([initial])
            init_raw = None if init_raw is None else init_raw[0]
        init_f.setflags(write=False)
        self.__dict__.update(labels=lab, level_names=tuple(names), matrices=stacked, exact_matrices=tuple(exacts),
                             row_level=row_level, initial=init_f, exact_initial=init_x, _marg=None, _hash=None,
                             _powers={}, _raw=tuple(raws), _raw_initial=init_raw, rounding_steps=0)

    # --- identity ---------------------------------------------------------------------------------
    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}: a chain is immutable")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}: a chain is immutable")

    def _identity(self) -> tuple:
        key = self.__dict__.get("_identity_key")
        if key is None:
            used = np.unique(self.row_level[: max(self.n - 1, 0)])
            key = (self.labels, self.n, tuple(self.exact_matrices[i] for i in used.tolist()),
                   tuple(used.tolist()), self.row_level[: self.n - 1].tobytes() if self.n > 1 else b"",
                   self.exact_initial)
            self.__dict__["_identity_key"] = key
        return key

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, VaryingChain):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash(self._identity())
            self.__dict__["_hash"] = h
        return h

    def __reduce__(self) -> tuple:
        levels = {n: _rows_of(raw, ex) for n, raw, ex in zip(self.level_names, self._raw, self.exact_matrices)}
        init = self._raw_initial if self._raw_initial is not None else _text(self.exact_initial)
        return (_rebuild, (levels, self.level_names, self.row_level, init, self.labels))

    def __repr__(self) -> str:
        return (f"VaryingChain(n={self.n}, k={self.k}, levels={list(self.level_names)!r}, "
                f"runs={len(level_runs(self.row_level))})")

    # --- constructors -------------------------------------------------------------------------------
    @classmethod
    def from_steps(cls, steps: Sequence[object], initial: Sequence[object],
                   labels: Sequence[Hashable] | None = None) -> VaryingChain:
        """A chain of ``len(steps) + 1`` rows given its step matrices in order (equal matrices share a level)."""
        if len(steps) == 0:
            raise ValueError("steps must hold at least one matrix (a chain of one row has no step)")
        mats: list[object] = []
        index: dict[Any, int] = {}
        rows = []
        for M in steps:
            key = _matrix_key(M)
            if key not in index:
                index[key] = len(mats)
                mats.append(M)
            rows.append(index[key])
        rows.append(rows[-1])
        return cls(mats, rows, initial=initial, labels=labels)

    @classmethod
    def from_chain(cls, chain: Chain, n: int) -> VaryingChain:
        """The homogeneous stationary ``chain`` on ``n`` rows, as the constant case of this type."""
        if not isinstance(chain, Chain):
            raise TypeError(f"chain must be a Chain, got {type(chain).__name__}")
        rows = [list(r) for r in chain.exact]
        return cls({"0": rows}, ["0"] * int(n), initial=list(chain.exact_stationary()), labels=chain.labels)

    @classmethod
    def periodic(cls, levels: Mapping[str, object], runs: Sequence[Sequence[object]],
                 initial: Sequence[object] | None = None, labels: Sequence[Hashable] | None = None) -> VaryingChain:
        """From level runs ``[[first_row, last_row, level], ...]`` (rows 1-based and inclusive, contiguous from 1)."""
        row_levels: list[object] = []
        for i, run in enumerate(runs):
            if not isinstance(run, Sequence) or isinstance(run, str) or len(run) != 3:
                raise ValueError(f"level_runs[{i}] must be [first_row, last_row, level], got {run!r}")
            a, b, name = run
            if any(isinstance(v, bool) or not isinstance(v, int) for v in (a, b)):
                raise TypeError(f"level_runs[{i}]: rows must be integers, got {a!r}, {b!r}")
            if a != len(row_levels) + 1 or b < a:
                raise ValueError(f"level_runs[{i}] = {list(run)!r}: runs must cover rows 1, 2, ... in order "
                                 f"(expected a run starting at row {len(row_levels) + 1})")
            row_levels.extend([str(name)] * (b - a + 1))
        if not row_levels:
            raise ValueError("level_runs must cover at least one row")
        return cls(levels, row_levels, initial=initial, labels=labels)

    # --- basic quantities ---------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.row_level.shape[0])

    @property
    def k(self) -> int:
        """Number of states."""
        return int(self.matrices.shape[1])

    @property
    def varying(self) -> bool:
        """Always true: the judges take per-step matrices from this chain (``Chain.varying`` is false)."""
        return True

    @property
    def binary(self) -> bool:
        r"""Whether the two-state kernel applies: two states, every used step entry and the initial law positive."""
        b = self.__dict__.get("_binary")
        if b is None:
            used = np.unique(self.row_level[: max(self.n - 1, 0)])
            b = self.k == 2 and bool(np.all(self.matrices[used] > 0.0)) and bool(np.all(self.initial > 0.0))
            self.__dict__["_binary"] = b
        return b

    def level_of(self, t: int) -> str:
        """The level name of row ``t`` (0-based)."""
        return self.level_names[int(self.row_level[t])]

    # --- steps and marginals ------------------------------------------------------------------------
    def steps(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Forward step matrices :math:`P_t` for rows ``t`` in ``[lo, hi)`` (default: every step), ``(hi - lo, k, k)``."""
        hi = self.n - 1 if hi is None else hi
        if not 0 <= lo <= hi <= self.n - 1:
            raise ValueError(f"steps [{lo}, {hi}) must lie in [0, {self.n - 1}]")
        return self.matrices[self.row_level[lo:hi]]

    def marginals(self) -> np.ndarray:
        r"""The law :math:`\pi_t` of every row, ``(n, k)`` (read-only; module docstring, "Marginals")."""
        m = self._marg
        if m is None:
            m = np.empty((self.n, self.k))
            m[0] = self.initial
            for a, b, lv in level_runs(self.row_level[: self.n - 1]):
                self._propagate(m, a, b + 1, lv)
            m.setflags(write=False)
            self.__dict__["_marg"] = m
        return m

    def _propagate(self, m: np.ndarray, a: int, b: int, lv: int) -> None:
        """Fill rows ``a + 1 .. b`` of ``m`` from row ``a`` through the steps ``a .. b - 1`` of level ``lv``."""
        P = self.matrices[lv]
        if b - a <= 8:
            for t in range(a, b):
                v = m[t] @ P
                m[t + 1] = v / v.sum()
            return
        pw = self._powers.get(lv)
        if pw is None:
            pw = _matrix_powers(P, _POWER_BLOCK)
            self._powers[lv] = pw
        t = a
        while t < b:
            r = min(_POWER_BLOCK, b - t)
            v = m[t] @ pw[:r]
            m[t + 1 : t + r + 1] = v / v.sum(axis=1, keepdims=True)
            t += r

    def marginal(self, t: int) -> np.ndarray:
        """The law of row ``t`` (0-based)."""
        return self.marginals()[t]

    def backward_steps(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        r"""Reversed steps :math:`\tilde P_t(y\to x)` from row ``t + 1`` to row ``t``, ``t`` in ``[lo, hi)``.

        ``out[i, y, x] = Pr(X_t = x | X_{t+1} = y)`` with ``t = lo + i`` (module docstring, "Time
        reversal"); rows of unreachable states are uniform.
        """
        P = self.steps(lo, hi)
        pi = self.marginals()[lo : lo + P.shape[0]]
        num = pi[:, :, None] * P  # [i, x, y]
        R = np.swapaxes(num, 1, 2)  # [i, y, x]
        s = R.sum(axis=2, keepdims=True)
        return np.where(s > 0.0, R / np.where(s > 0.0, s, 1.0), 1.0 / self.k)

    def side_steps(self, p: int, side: str, m: int | None = None) -> np.ndarray:
        """The ``m`` steps one side of row ``p`` is read through, nearest first (default: to the end).

        ``"right"``: :math:`P_p, P_{p+1}, \\dots`; ``"left"``: :math:`\\tilde P_{p-1}, \\tilde P_{p-2}, \\dots`.
        """
        if side == "right":
            m = self.n - 1 - p if m is None else m
            return self.steps(p, p + m)
        if side != "left":
            raise ValueError(f"side must be 'left' or 'right', got {side!r}")
        m = p if m is None else m
        return self.backward_steps(p - m, p)[::-1]

    # --- reductions ---------------------------------------------------------------------------------
    def window(self, lo: int, hi: int) -> VaryingChain:
        """Rows ``lo .. hi - 1`` as a chain of their own (its initial law: the marginal of row ``lo``)."""
        if not 0 <= lo < hi <= self.n:
            raise ValueError(f"window [{lo}, {hi}) must lie in [0, {self.n}] and hold a row")
        if lo == 0 and hi == self.n:
            return self
        out = object.__new__(VaryingChain)
        init = self.marginal(lo) if lo else self.initial
        ex = self.exact_initial if lo == 0 else _law(list(init), self.k, "initial")[1]
        rl = self.row_level[lo:hi].copy()
        rl.setflags(write=False)
        init = np.array(init)
        init.setflags(write=False)
        out.__dict__.update(labels=self.labels, level_names=self.level_names, matrices=self.matrices,
                            exact_matrices=self.exact_matrices, row_level=rl, initial=init, exact_initial=ex,
                            _marg=None, _hash=None, _powers=self._powers, _raw=self._raw,
                            _raw_initial=self._raw_initial if lo == 0 else init.tolist(),
                            rounding_steps=self.rounding_steps + lo)
        return out

    def constant(self) -> Chain | None:
        """The homogeneous stationary chain this one equals, or ``None``.

        One matrix for every step (exactly), primitive, and the initial law its stationary law (as
        doubles, and exactly when the matrix was given exactly): then every judge takes the
        constant path, with today's numbers bit for bit.
        """
        if "_const" in self.__dict__:
            return self.__dict__["_const"]
        out = None
        used = np.unique(self.row_level[: max(self.n - 1, 1)])
        if len({self.exact_matrices[i] for i in used.tolist()}) == 1:
            i = int(used[0])
            try:
                c = _constant_chain(self.exact_matrices[i], self._raw[i], self.labels)
            except ValueError:
                c = None
            if c is not None and (np.array_equal(c.stationary, self.initial)
                                  or tuple(c.exact_stationary()) == self.exact_initial):
                out = c
        self.__dict__["_const"] = out
        return out

    def reversed(self) -> VaryingChain:
        """The chain read from the last row to the first (steps: :meth:`backward_steps` reversed)."""
        if self.n == 1:
            return self
        R = self.backward_steps()[::-1]
        return VaryingChain.from_steps(list(R), list(self.marginal(self.n - 1)), labels=self.labels)

    # --- files --------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The file form (docs/commands.md, "Varying chains"): rows 1-based and inclusive."""
        used = sorted(set(self.row_level.tolist()))
        init = self._raw_initial if self._raw_initial is not None else _text(self.exact_initial)
        return {
            "labels": [str(v) for v in self.labels],
            "initial": list(init),
            "levels": [self.level_names[i] for i in used],
            "transition": {self.level_names[i]: _rows_of(self._raw[i], self.exact_matrices[i]) for i in used},
            "level_runs": [[a + 1, b + 1, self.level_names[lv]] for a, b, lv in level_runs(self.row_level)],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> VaryingChain:
        """Read :meth:`to_dict`'s form (``ValueError``/``TypeError`` naming the field at fault)."""
        if not isinstance(d, Mapping):
            raise TypeError(f"a varying chain must be a JSON object, got {type(d).__name__}")
        for field in ("transition", "level_runs"):
            if field not in d:
                raise ValueError(f"a varying chain needs the field {field!r}")
        trans = d["transition"]
        if not isinstance(trans, Mapping) or not trans:
            raise TypeError("'transition' must be an object mapping each level to its matrix")
        levels = d.get("levels", list(trans))
        if not isinstance(levels, list) or set(map(str, levels)) != set(map(str, trans)):
            raise ValueError("'levels' must list exactly the levels of 'transition'")
        labels = d.get("labels")
        return cls.periodic({str(n): trans[n] for n in levels}, d["level_runs"], initial=d.get("initial"),
                            labels=labels)


def _raw_rows(M: object) -> list[list[float]] | None:
    """The rows as given when they are doubles (written back as given: the same exact chain), else ``None``."""
    rows = M.tolist() if isinstance(M, np.ndarray) else M
    try:
        flat = [v for r in rows for v in r]
    except TypeError:
        return None
    if any(isinstance(v, (str, Fraction, bool)) for v in flat):
        return None
    try:
        return [[float(v) for v in r] for r in rows]
    except (TypeError, ValueError):
        return None


def _text(values: Sequence[Fraction]) -> list[str]:
    return [f"{v.numerator}/{v.denominator}" for v in values]


def _rows_of(raw: list | None, exact: tuple) -> list:
    return raw if raw is not None else [_text(r) for r in exact]


def _matrix_key(M: object) -> Any:
    arr = np.asarray(M, dtype=object if any(isinstance(v, (Fraction, str)) for v in np.ravel(
        np.asarray(M, dtype=object))) else float)
    return (arr.shape, tuple(str(v) if arr.dtype == object else float(v) for v in arr.ravel()))


def _levels(levels: object) -> tuple[list[str], list[object]]:
    if isinstance(levels, Mapping):
        if not levels:
            raise ValueError("levels must hold at least one matrix")
        return [str(k) for k in levels], list(levels.values())
    if isinstance(levels, (str, bytes)) or not isinstance(levels, (Sequence, np.ndarray)) or len(levels) == 0:
        raise TypeError("levels must be a mapping of level names to matrices or a non-empty sequence of matrices")
    mats = list(levels)
    return [str(i) for i in range(len(mats))], mats


def _row_levels(row_levels: object, names: list[str]) -> np.ndarray:
    if isinstance(row_levels, (str, bytes)) or not isinstance(row_levels, (Sequence, np.ndarray)):
        raise TypeError("row_levels must be a sequence with the level of every row")
    arr = np.asarray(row_levels)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("row_levels must be a non-empty 1-D sequence (one level per row)")
    if np.issubdtype(arr.dtype, np.integer):
        codes = arr.astype(np.int64)
        if codes.min() < 0 or codes.max() >= len(names):
            raise ValueError(f"row_levels indices must lie in 0..{len(names) - 1}")
    else:
        index = {n: i for i, n in enumerate(names)}
        uniq, inv = np.unique(arr.astype(str), return_inverse=True)
        missing = [u for u in uniq.tolist() if u not in index]
        if missing:
            raise ValueError(f"row_levels names levels without a matrix: {missing[:5]}")
        codes = np.array([index[u] for u in uniq.tolist()], dtype=np.int64)[inv]
    dtype = np.int16 if len(names) < 2**15 else np.int32
    out = np.ascontiguousarray(codes.astype(dtype))
    out.setflags(write=False)
    return out


def _constant_chain(ex: tuple, raw: list | None, labels: tuple) -> Chain:
    """The Chain of one level's matrix — built from the rows as given, so its float and exact matrices are
    the level's — as a MarkovChain when it is one (the chain a file's ``alpha``/``beta`` names)."""
    if len(ex) == 2 and labels == (0, 1):
        a, b = float(ex[0][1]), float(ex[1][0])
        if 0.0 < a < 1.0 and 0.0 < b < 1.0 and ex == ((1 - Fraction(a), Fraction(a)), (Fraction(b), 1 - Fraction(b))):
            return MarkovChain(a, b)
    return Chain(raw if raw is not None else [list(r) for r in ex], labels=labels)


def _rebuild(levels: dict, names: tuple, row_level: np.ndarray, initial: list, labels: tuple) -> VaryingChain:
    return VaryingChain({n: levels[n] for n in names}, np.asarray(row_level, dtype=np.int64).tolist(),
                        initial=initial, labels=labels)


def is_varying(chain: object) -> bool:
    """Whether ``chain`` is a :class:`VaryingChain` that is not a homogeneous stationary chain."""
    return isinstance(chain, VaryingChain) and chain.constant() is None


def judged_chain(chain: object, n: int, name: str = "chain") -> Chain | VaryingChain:
    """The chain a judge evaluates ``n`` rows on: a :class:`~redactopt.model.chain.Chain`, or a
    :class:`VaryingChain` of exactly ``n`` rows — its constant case as that Chain (the constant
    path, bit for bit); a ``TypeError``/``ValueError`` naming ``name`` otherwise."""
    if isinstance(chain, VaryingChain):
        if chain.n != n:
            raise ValueError(f"{name} has {chain.n} rows but the mechanism has {n}")
        const = chain.constant()
        return chain if const is None else const
    if not isinstance(chain, Chain):
        raise TypeError(f"{name} must be a Chain (a MarkovChain or a transition matrix) or a VaryingChain, "
                        f"got {type(chain).__name__}")
    return chain


def chain_window(chain: Chain | VaryingChain, lo: int, hi: int) -> Chain | VaryingChain:
    """The chain of rows ``lo .. hi - 1``: a homogeneous chain is its own window (it is stationary)."""
    if isinstance(chain, VaryingChain):
        return judged_chain(chain.window(lo, hi), hi - lo)
    return chain


def row_laws(chain: Chain | VaryingChain, lo: int, hi: int) -> np.ndarray:
    """The law of every row in ``[lo, hi)``, ``(hi - lo, k)``: the stationary law repeated, or the marginals."""
    if isinstance(chain, VaryingChain):
        return chain.marginals()[lo:hi]
    return np.broadcast_to(chain.stationary, (hi - lo, chain.k))


def as_varying(chain: Chain | VaryingChain, n: int) -> VaryingChain:
    """``chain`` on ``n`` rows as a :class:`VaryingChain` (a homogeneous chain as its constant case)."""
    if isinstance(chain, VaryingChain):
        if chain.n != n:
            raise ValueError(f"the varying chain has {chain.n} rows, not {n}")
        return chain
    return VaryingChain.from_chain(chain, n)



#: Whatever a judge accepts: a homogeneous stationary chain or one that varies with the step.
AnyChain = Union[Chain, VaryingChain]
