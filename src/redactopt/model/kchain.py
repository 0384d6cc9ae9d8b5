r"""Stationary Markov chains on k states (issue 17): the categorical generalisation of the chain.

The binary :class:`redactopt.model.chain.MarkovChain` stays the fast special case with its
closed forms; nothing here routes through it.  A :class:`KChain` is a ``k x k`` transition
matrix ``P`` (rows: current state, columns: next state) with state labels, validated to be a
stochastic, irreducible and aperiodic matrix (a *primitive* chain: it has one stationary law
:math:`\pi > 0` and :math:`P^d \to \mathbf 1\pi`).

**The exact chain behind the doubles.**  A matrix of doubles whose rows sum to 1 only up to
rounding is not exactly stochastic.  The chain a :class:`KChain` stands for is, exactly, the
given matrix with each row divided by its exact sum (:meth:`KChain.exact_transition`, in
rationals); the float matrix is that one rounded (each row divided by its float sum).  Given
:class:`fractions.Fraction` entries, the exact chain is those fractions (rows must then sum
to exactly 1).  The rational evaluator (:mod:`redactopt.judge.kexact`) judges the exact chain.

**The left side runs backwards.**  Records left of the private record, read outward, form the
*time-reversed* chain :math:`\tilde P = \operatorname{diag}(\pi)^{-1}P^\top\operatorname{diag}(\pi)`,
:math:`\tilde P_{xy}=\pi_y P_{yx}/\pi_x = \Pr(X_{t-1}=y\mid X_t=x)` (:meth:`KChain.reversed`).
Every binary chain is reversible (:math:`\tilde P = P`); a k-state chain need not be
(docs/mathematics.md, "k-state chains").
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from redactopt._validate import check_delta
from redactopt.model.chain import MarkovChain

__all__ = [
    "KChain",
    "ROW_SUM_TOL",
    "check_transition",
    "stationary_gth",
    "parse_transition",
]

#: A row of a given transition matrix may sum to 1 up to this much (then it is divided by its sum).
ROW_SUM_TOL = 1e-9


def _entry_name(i: int, j: int, labels: Sequence[object] | None) -> str:
    if labels is None:
        return f"[{i}, {j}]"
    return f"[{i}, {j}] ({labels[i]!s} -> {labels[j]!s})"


def _as_matrix(matrix: object, name: str) -> tuple[np.ndarray, list[list[Fraction]] | None]:
    """The float matrix and, when every entry is a Fraction or int, the exact one."""
    if isinstance(matrix, (str, bytes)):
        raise TypeError(f"{name} must be a (k, k) matrix of probabilities, got a string "
                        "(redactopt.model.kchain.parse_transition reads 'p11,p12;p21,p22')")
    rows = matrix.tolist() if isinstance(matrix, np.ndarray) else matrix
    if isinstance(rows, Sequence) and rows and all(isinstance(r, Sequence) and not isinstance(r, (str, bytes))
                                                  for r in rows):
        lens = [len(r) for r in rows]
        if any(v != len(rows) for v in lens):
            raise ValueError(f"{name} must be a square (k, k) matrix with k >= 2: {len(rows)} rows of lengths {lens}")
    exact: list[list[Fraction]] | None = None
    if isinstance(rows, Sequence) and rows and all(isinstance(r, Sequence) and not isinstance(r, (str, bytes))
                                                  for r in rows):
        flat = [v for r in rows for v in r]
        if flat and all(isinstance(v, str) for v in flat):  # exact decimals or fractions written as text
            try:
                exact = [[Fraction(v.strip()) for v in r] for r in rows]
            except (ValueError, ZeroDivisionError):
                raise TypeError(f"{name} entries given as text must be numbers such as '0.1' or '3/10'") from None
        elif flat and all(isinstance(v, (Fraction, int)) and not isinstance(v, bool) for v in flat) and \
                any(isinstance(v, Fraction) for v in flat):
            exact = [[Fraction(v) for v in r] for r in rows]
    try:
        arr = np.array([[float(v) for v in r] for r in exact], dtype=float) if exact is not None \
            else np.array(rows, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a (k, k) matrix of probabilities: {exc}") from None
    return arr, exact


def check_transition(matrix: object, name: str = "transition", *,
                     labels: Sequence[object] | None = None) -> tuple[np.ndarray, tuple[tuple[Fraction, ...], ...]]:
    r"""Validate a transition matrix; return the float matrix and the exact (rational) one.

    Checks, each failure one line naming the problem: a square ``(k, k)`` matrix with
    ``k >= 2``, finite, non-negative entries, rows summing to 1 within :data:`ROW_SUM_TOL`
    (exactly 1 for Fraction entries), irreducible (every state reaches every state) and
    aperiodic (the gcd of the cycle lengths is 1).  Irreducible and aperiodic together make
    the chain primitive: a unique stationary law with every :math:`\pi_x > 0`.

    Returns
    -------
    (numpy.ndarray, tuple of tuple of Fraction)
        The row-normalised float matrix (read-only) and the exact chain it stands for
        (module docstring).
    """
    arr, exact = _as_matrix(matrix, name)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 2:
        raise ValueError(f"{name} must be a square (k, k) matrix with k >= 2, got shape {arr.shape}")
    k = arr.shape[0]
    if labels is not None and len(labels) != k:
        raise ValueError(f"labels must name the {k} states, got {len(labels)} labels")
    if not np.all(np.isfinite(arr)):
        i, j = (int(v) for v in np.argwhere(~np.isfinite(arr))[0])
        raise ValueError(f"{name} entry {_entry_name(i, j, labels)} must be finite, got {float(arr[i, j])!r}")
    if np.any(arr < 0.0):
        i, j = (int(v) for v in np.argwhere(arr < 0.0)[0])
        raise ValueError(f"{name} entry {_entry_name(i, j, labels)} is negative ({float(arr[i, j])!r})")
    if exact is not None:
        for i, r in enumerate(exact):
            if sum(r) != 1:
                raise ValueError(f"{name} row {i} sums to {sum(r)}, not exactly 1 (rational entries)")
        ex = tuple(tuple(r) for r in exact)
        lost = [(i, j) for i, r in enumerate(exact) for j, v in enumerate(r) if v > 0 and arr[i, j] == 0.0]
        if lost:
            i, j = lost[0]
            raise ValueError(f"{name} entry {_entry_name(i, j, labels)} = {exact[i][j]} is positive but "
                             "rounds to 0.0 as a double")
    else:
        sums = arr.sum(axis=1)
        bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_TOL)
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"{name} row {i} sums to {float(sums[i])!r}, not 1 (tolerance {ROW_SUM_TOL:g})")
        rows = [[Fraction(float(v)) for v in r] for r in arr]
        ex = tuple(tuple(v / sum(r) for v in r) for r in rows)
        arr = arr / sums[:, None]
    _check_primitive(arr > 0.0, name, labels)
    arr = np.ascontiguousarray(arr)
    arr.setflags(write=False)
    return arr, ex


def _reach(adj: np.ndarray) -> np.ndarray:
    """Reflexive-transitive closure of a boolean adjacency matrix (Warshall)."""
    r = adj | np.eye(adj.shape[0], dtype=bool)
    for m in range(adj.shape[0]):
        r = r | (r[:, m : m + 1] & r[m : m + 1, :])
    return r


def _period(adj: np.ndarray) -> int:
    """Period of an irreducible chain: gcd of ``level(x) + 1 - level(y)`` over edges (BFS levels)."""
    k = adj.shape[0]
    level = [-1] * k
    level[0] = 0
    frontier = [0]
    while frontier:
        nxt = []
        for x in frontier:
            for y in np.flatnonzero(adj[x]):
                if level[y] < 0:
                    level[y] = level[x] + 1
                    nxt.append(int(y))
        frontier = nxt
    g = 0
    for x, y in zip(*np.nonzero(adj)):
        g = math.gcd(g, abs(level[x] + 1 - level[y]))
    return g


def _exact_entries(matrix: object) -> bool:
    """Whether a matrix is given with exact entries (Fractions or text), kept exactly by :func:`check_transition`."""
    rows = matrix.tolist() if isinstance(matrix, np.ndarray) else matrix
    if not isinstance(rows, Sequence) or isinstance(rows, (str, bytes)):
        return False
    flat = [v for r in rows if isinstance(r, Sequence) and not isinstance(r, (str, bytes)) for v in r]
    return bool(flat) and (all(isinstance(v, str) for v in flat) or any(isinstance(v, Fraction) for v in flat))


def _check_primitive(adj: np.ndarray, name: str, labels: Sequence[object] | None) -> None:
    reach = _reach(adj)
    if not reach.all():
        i, j = (int(v) for v in np.argwhere(~reach)[0])
        a = labels[i] if labels is not None else i
        b = labels[j] if labels is not None else j
        raise ValueError(f"{name} is reducible: state {a!s} never reaches state {b!s} "
                         "(a chain must be irreducible)")
    d = _period(adj)
    if d != 1:
        raise ValueError(f"{name} is periodic with period {d} (every cycle's length is a multiple of {d}; "
                         "a chain must be aperiodic)")


def stationary_gth(P: np.ndarray) -> np.ndarray:
    r"""Stationary law :math:`\pi P=\pi` of an irreducible chain by the GTH algorithm.

    Grassmann, Taksar and Heyman (1985) state reduction: only additions, multiplications and
    divisions of non-negative numbers (no subtraction), so every :math:`\pi_x` has small
    *relative* error even when it is tiny.  Works as well on :class:`fractions.Fraction`
    matrices (object arrays) for exact laws.
    """
    A = np.array(P, dtype=object if P.dtype == object else float)
    k = A.shape[0]
    for m in range(k - 1, 0, -1):
        s = sum(A[m, :m]) if A.dtype == object else A[m, :m].sum()
        A[:m, m] = A[:m, m] / s
        A[:m, :m] = A[:m, :m] + np.outer(A[:m, m], A[m, :m])
    pi = np.empty(k, dtype=A.dtype)
    pi[0] = 1 if A.dtype == object else 1.0
    for j in range(1, k):
        pi[j] = sum(pi[i] * A[i, j] for i in range(j)) if A.dtype == object else float(pi[:j] @ A[:j, j])
    return pi / (sum(pi) if A.dtype == object else pi.sum())


def _label_tuple(labels: object, k: int) -> tuple[Hashable, ...]:
    if labels is None:
        return tuple(str(i) for i in range(k))
    if isinstance(labels, np.ndarray) and labels.ndim == 1:
        labels = labels.tolist()  # numpy scalars become Python values
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence):
        raise TypeError(f"labels must be a sequence of {k} state labels, got {labels!r}")
    out = tuple(labels)
    if len(out) != k:
        raise ValueError(f"labels must name the {k} states, got {len(out)} labels")
    for v in out:
        if not isinstance(v, Hashable) or v is None:
            raise TypeError(f"state labels must be hashable values other than None, got {v!r}")
    if len({str(v) for v in out}) != k:
        raise ValueError(f"state labels must be distinct (as text), got {[str(v) for v in out]}")
    return out


@dataclass(frozen=True, eq=False)
class KChain:
    r"""A stationary, irreducible, aperiodic Markov chain on ``k`` labelled states.

    Parameters
    ----------
    transition : array_like, shape (k, k)
        :math:`P_{xy}=\Pr(X_{t+1}=y\mid X_t=x)`; validated by :func:`check_transition` (rows
        summing to 1 within :data:`ROW_SUM_TOL` are divided by their sum; Fraction entries are
        kept exactly).
    labels : sequence of k hashable values, optional
        The states' names, kept in every output (default ``"0" .. "k-1"``).  State ``i`` of the
        arrays is ``labels[i]``.

    Notes
    -----
    Equality and hashing are by the float matrix and the labels.  The binary chain is the
    special case ``k = 2`` (:meth:`from_binary`), but the binary code never goes through here.
    """

    transition: np.ndarray
    labels: tuple[Hashable, ...] = ()
    exact: tuple[tuple[Fraction, ...], ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        raw_labels = None if isinstance(self.labels, tuple) and self.labels == () else self.labels
        given = self.transition
        try:
            raw = np.asarray(given, dtype=float).tolist() if not _exact_entries(given) else None
        except (TypeError, ValueError):
            raw = None
        arr, ex = check_transition(self.transition, "transition",
                                   labels=None if raw_labels is None else [str(v) for v in raw_labels])
        object.__setattr__(self, "transition", arr)
        object.__setattr__(self, "labels", _label_tuple(raw_labels, arr.shape[0]))
        object.__setattr__(self, "exact", ex)
        object.__setattr__(self, "_raw", raw)
        pi = stationary_gth(arr)
        pi.setflags(write=False)
        object.__setattr__(self, "_pi", pi)
        R = (arr.T * pi[None, :]) / pi[:, None]
        R = R / R.sum(axis=1, keepdims=True)
        R.setflags(write=False)
        object.__setattr__(self, "_rev", R)

    # --- identity ----------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KChain):
            return NotImplemented
        return self.labels == other.labels and np.array_equal(self.transition, other.transition)

    def __hash__(self) -> int:
        return hash((self.labels, self.transition.tobytes()))

    @classmethod
    def from_binary(cls, chain: MarkovChain, labels: Sequence[Hashable] = (0, 1)) -> KChain:
        r"""The k = 2 chain of a binary :class:`MarkovChain`, exactly: :math:`P=[[1-\alpha,\alpha],[\beta,1-\beta]]`.

        The entries are taken as the rationals of the doubles ``alpha`` and ``beta`` (so the
        rational evaluators of both paths judge the same chain); the float matrix is their
        correctly rounded value, as :attr:`MarkovChain.transition_matrix`.
        """
        if not isinstance(chain, MarkovChain):
            raise TypeError(f"chain must be a MarkovChain, got {type(chain).__name__}")
        a, b = Fraction(chain.alpha), Fraction(chain.beta)
        return cls([[1 - a, a], [b, 1 - b]], labels=tuple(labels))

    # --- basic quantities -------------------------------------------------
    @property
    def k(self) -> int:
        """Number of states."""
        return int(self.transition.shape[0])

    @property
    def transition_matrix(self) -> np.ndarray:
        """The one-step matrix P (read-only; rows: current state, columns: next state)."""
        return self.transition

    @property
    def stationary(self) -> np.ndarray:
        r"""Stationary law :math:`\pi` (:math:`\pi P=\pi`, all entries positive), by GTH (:func:`stationary_gth`)."""
        return self._pi  # type: ignore[attr-defined]

    def exact_transition(self) -> tuple[tuple[Fraction, ...], ...]:
        """The exact stochastic matrix this chain stands for (module docstring), rows summing to 1."""
        return self.exact

    def reversed_matrix(self) -> np.ndarray:
        r"""The time-reversed matrix :math:`\tilde P_{xy}=\pi_yP_{yx}/\pi_x` (left side, read outward; read-only).

        :math:`\tilde P_{xy}=\Pr(X_{t-1}=y\mid X_t=x)` for the stationary chain; rows renormalised
        to sum to 1 in floating point.  Same zero pattern as :math:`P^\top`.
        """
        return self._rev  # type: ignore[attr-defined]

    def exact_stationary(self) -> tuple[Fraction, ...]:
        r"""The stationary law of the exact chain (:meth:`exact_transition`), in rationals (GTH)."""
        return tuple(stationary_gth(np.array(self.exact, dtype=object)).tolist())

    def reversed(self) -> KChain:
        r"""The time-reversed chain :math:`\operatorname{diag}(\pi)^{-1}P^\top\operatorname{diag}(\pi)`, same labels.

        Exactly reversed in rationals (its :meth:`exact_transition` uses the exact stationary law).
        """
        ex = self.exact
        pi = self.exact_stationary()
        rows = [[pi[y] * ex[y][x] / pi[x] for y in range(self.k)] for x in range(self.k)]
        return KChain(rows, labels=self.labels)

    @property
    def is_reversible(self) -> bool:
        r"""Whether :math:`\pi_xP_{xy}=\pi_yP_{yx}` (detailed balance) holds exactly for the exact chain."""
        ex = self.exact
        pi = self.exact_stationary()
        return all(pi[x] * ex[x][y] == pi[y] * ex[y][x] for x in range(self.k) for y in range(x + 1, self.k))

    def state_index(self, label: object) -> int:
        """The index of a state given its label (or the label's text).

        A label equal in value *and* type wins over one only equal in value or text (labels are
        distinct as text, so ``(1.0, 1)`` or ``(True, 1)`` are two states)."""
        for match in (lambda v: type(v) is type(label) and v == label,
                      lambda v: v == label or str(v) == str(label)):
            for i, v in enumerate(self.labels):
                if match(v):
                    return i
        raise ValueError(f"unknown state {label!r}; the states are {[str(v) for v in self.labels]}")

    # --- n-step transitions -------------------------------------------------
    def n_step_matrices(self, m: int, *, reverse: bool = False) -> np.ndarray:
        r""":math:`P^1, \dots, P^m` (or the reversed chain's), shape ``(m, k, k)``.

        Formed by successive products of the non-negative matrix, so every entry keeps a small
        *relative* error (about ``d k`` ulps at distance ``d``) however small it is.
        """
        m = check_delta(m, "m", allow_zero=True)
        P = self.reversed_matrix() if reverse else self.transition
        out = np.empty((m, self.k, self.k))
        if m:
            out[0] = P
        for d in range(1, m):
            out[d] = out[d - 1] @ P
        return out

    def n_step_matrix(self, delta: int, *, reverse: bool = False) -> np.ndarray:
        r""":math:`P^\Delta` by repeated squaring (non-negative products: small relative error per entry)."""
        d = check_delta(delta, "delta", allow_zero=True)
        P = self.reversed_matrix() if reverse else self.transition
        out = np.eye(self.k)
        base = P.copy()
        while d:
            if d & 1:
                out = out @ base
            base = base @ base
            d >>= 1
        return out

    def to_dict(self) -> dict:
        """``{"labels": [...], "transition": rows}``: labels as text, the matrix as given.

        The rows are the numbers the chain was built from (doubles, or exact fractions as text such
        as ``"3/10"``), so reading them back gives the same exact chain (:meth:`exact_transition`)
        and the same float matrix.
        """
        raw = self._raw  # type: ignore[attr-defined]
        rows = raw if raw is not None else [[f"{v.numerator}/{v.denominator}" for v in r] for r in self.exact]
        return {"labels": [str(v) for v in self.labels], "transition": rows}


def parse_transition(text: str, name: str = "--transition") -> list[list[float]]:
    r"""Rows of a matrix written ``"p11,p12,...;p21,..."`` (rows separated by ``;``).

    Decimal numbers only; an empty item or a row of the wrong length is a one-line error
    naming the item.  Validation of the matrix itself is :func:`check_transition`'s.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{name} needs rows such as '0.9,0.1;0.2,0.8', got {text!r}")
    rows = []
    for i, row in enumerate(text.split(";")):
        items = [t.strip() for t in row.split(",")]
        if any(not t for t in items):
            raise ValueError(f"{name}: empty item in row {i + 1} ({row.strip()!r})")
        try:
            vals = [float(t) for t in items]
        except ValueError:
            raise ValueError(f"{name}: row {i + 1} ({row.strip()!r}) is not a list of numbers") from None
        rows.append(vals)
    if any(len(r) != len(rows) for r in rows):
        lens = [len(r) for r in rows]
        raise ValueError(f"{name} must be a square matrix: {len(rows)} rows of lengths {lens}")
    return rows

