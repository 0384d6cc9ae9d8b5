r"""The stationary Markov chain that correlates the records: one model for every number of states.

The records :math:`X_1..X_n` form a stationary, irreducible, aperiodic chain on ``k >= 2``
labelled states with transition matrix :math:`P_{xy}=\Pr(X_{t+1}=y\mid X_t=x)`
(:class:`Chain`).  The paper's binary chain (Section II) is the case ``k = 2``,
:math:`P=\begin{pmatrix}1-\alpha&\alpha\\\beta&1-\beta\end{pmatrix}`, built by
:class:`MarkovChain` ``(alpha, beta)``.  Every judge and solver takes a :class:`Chain`; the
two-state closed forms (:math:`\lambda^\Delta`, Appendix A) are the model's kernels for
``k = 2`` (:attr:`Chain.alpha`, :attr:`Chain.lam`, :meth:`Chain.lam_powers`, ...), whichever
way the chain was given — a :class:`MarkovChain` or a ``2 x 2`` matrix are the same chain.

**The exact chain behind the doubles.**  A matrix of doubles whose rows sum to 1 only up to
rounding is not exactly stochastic.  The chain a :class:`Chain` stands for is, exactly, the
given matrix with each row divided by its exact sum (:attr:`Chain.exact`, in rationals); the
float matrix is that one rounded (each row divided by its float sum).  Given
:class:`fractions.Fraction` entries (or decimal text such as ``"3/10"``), the exact chain is
those numbers (rows must then sum to exactly 1).  ``MarkovChain(alpha, beta)`` stands for
:math:`[[1-a, a], [b, 1-b]]` with ``a``, ``b`` the rationals of the doubles.  The rational
evaluators judge the exact chain; equality and hashing are by it (and the labels).

**The left side runs backwards.**  Records left of the private record, read outward, form the
*time-reversed* chain :math:`\tilde P = \operatorname{diag}(\pi)^{-1}P^\top\operatorname{diag}(\pi)`,
:math:`\tilde P_{xy}=\pi_y P_{yx}/\pi_x = \Pr(X_{t-1}=y\mid X_t=x)` (:meth:`Chain.reversed`).
Every two-state chain is reversible (:math:`\tilde P = P`); a chain on more states need not be
(docs/mathematics.md, "k-state chains").
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import FrozenInstanceError
from fractions import Fraction
from typing import Literal

import numpy as np

from redactopt._validate import check_delta, check_eps, check_index, check_n, check_probability_open

__all__ = [
    "Chain",
    "MarkovChain",
    "check_problem",
    "check_chain",
    "is_two_state",
    "is_markov",
    "ROW_SUM_TOL",
    "check_transition",
    "stationary_gth",
    "parse_transition",
    "check_labels",
]

ChainKind = Literal["lazy", "independent", "oscillating"]

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
                        "(redactopt.model.chain.parse_transition reads 'p11,p12;p21,p22')")
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


def check_transition(matrix: object, name: str = "transition", *, labels: Sequence[object] | None = None,
                     primitive: bool = True) -> tuple[np.ndarray, tuple[tuple[Fraction, ...], ...]]:
    r"""Validate a transition matrix; return the float matrix and the exact (rational) one.

    Checks, each failure one line naming the problem: a square ``(k, k)`` matrix with
    ``k >= 2``, finite, non-negative entries, rows summing to 1 within :data:`ROW_SUM_TOL`
    (exactly 1 for Fraction entries), irreducible (every state reaches every state) and
    aperiodic (the gcd of the cycle lengths is 1).  Irreducible and aperiodic together make
    the chain primitive: a unique stationary law with every :math:`\pi_x > 0`.  ``primitive=False``
    checks a stochastic matrix only (one step of a chain that varies with the step,
    :mod:`redactopt.model.varying`, need not be primitive on its own).

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
    if primitive:
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


def check_labels(labels: object, k: int) -> tuple[Hashable, ...]:
    """The ``k`` state labels as a tuple (default ``"0" .. "k-1"``); distinct as text, hashable, not ``None``."""
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


#: Distances up to this many steps form a two-state :math:`P^\Delta` by products of ``P`` where
#: :math:`|\lambda^\Delta|\ge 1/2` (the closed form's diagonal would cancel there).
_PRODUCT_STEPS = 64


def _products(P: np.ndarray, m: int) -> np.ndarray:
    r""":math:`P^1, \dots, P^m` by successive products of the non-negative matrix, shape ``(m, k, k)``.

    Every entry keeps a small *relative* error (about ``d k`` ulps at distance ``d``) however
    small it is: no subtraction.
    """
    out = np.empty((m,) + P.shape)
    if m:
        out[0] = P
    for d in range(1, m):
        out[d] = out[d - 1] @ P
    return out


def _power(P: np.ndarray, d: int) -> np.ndarray:
    r""":math:`P^d` by repeated squaring (non-negative products: small relative error per entry)."""
    out = np.eye(P.shape[0])
    base = P.copy()
    while d:
        if d & 1:
            out = out @ base
        base = base @ base
        d >>= 1
    return out


class Chain:
    r"""A stationary, irreducible, aperiodic Markov chain on ``k >= 2`` labelled states (immutable).

    Parameters
    ----------
    transition : array_like, shape (k, k)
        :math:`P_{xy}=\Pr(X_{t+1}=y\mid X_t=x)`; validated by :func:`check_transition` (rows
        summing to 1 within :data:`ROW_SUM_TOL` are divided by their sum; Fraction entries and
        decimal text are kept exactly).
    labels : sequence of k hashable values, optional
        The states' names, kept in every output (default ``"0" .. "k-1"``).  State ``i`` of the
        arrays is ``labels[i]``.

    Attributes
    ----------
    transition : numpy.ndarray, shape (k, k)
        The float matrix (read-only); :attr:`transition_matrix` is the same array.
    labels : tuple
        The state labels.

    Notes
    -----
    Two chains are equal when they have the same labels and the same exact matrix (and so the
    same float one): a :class:`MarkovChain` ``(a, b)`` equals ``Chain([[1 - A, A], [B, 1 - B]],
    labels=(0, 1))`` with ``A, B`` the Fractions of ``a, b``.  The two-state accessors
    (:attr:`alpha`, :attr:`beta`, :attr:`lam`, :meth:`lam_powers`, ...) exist for every chain
    with ``k = 2``; on more states they raise ``AttributeError`` naming ``k``.
    """

    transition: np.ndarray
    labels: tuple[Hashable, ...]

    def __init__(self, transition: object, labels: Sequence[Hashable] | None = None) -> None:
        raw_labels = None if labels is None or (isinstance(labels, tuple) and labels == ()) else labels
        try:
            raw = None if _exact_entries(transition) else np.asarray(transition, dtype=float).tolist()
        except (TypeError, ValueError):
            raw = None
        arr, exact = check_transition(transition, "transition",
                                      labels=None if raw_labels is None else [str(v) for v in raw_labels])
        self._fill(arr, check_labels(raw_labels, arr.shape[0]), exact, raw)

    def _fill(self, P: np.ndarray, labels: tuple, exact: tuple | None, raw: list | None) -> None:
        """Set the fields once (the instance is immutable afterwards)."""
        ab = (float(P[0, 1]), float(P[1, 0])) if P.shape[0] == 2 else None
        self.__dict__.update(transition=P, labels=labels, _exact=exact, _raw=raw, _pi=None, _rev=None,
                             _hash=None, _ab=ab, _binary=ab is not None and ab[0] < 1.0 and ab[1] < 1.0)

    # --- identity ----------------------------------------------------------
    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}: a chain is immutable")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}: a chain is immutable")

    def _identity(self) -> tuple:
        """What equality compares, built once: the labels, the shape and doubles of the matrix, and its
        exact rationals as ``(numerator, denominator)`` pairs (tuples of ints and floats compare in C;
        comparing ``Fraction`` objects cost about 10 us per chain, paid by every cache lookup that meets
        the same chain given in another form)."""
        key = self.__dict__.get("_identity_key")
        if key is None:
            key = (self.labels, self.transition.shape, tuple(self.transition.ravel().tolist()),
                   tuple((f.numerator, f.denominator) for row in self.exact for f in row))
            self.__dict__["_identity_key"] = key
        return key

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Chain):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash((self.labels, self.exact))
            self.__dict__["_hash"] = h
        return h

    def __reduce__(self) -> tuple:
        rows = self._raw if self._raw is not None else self.exact
        return (Chain, (rows, self.labels))

    def __repr__(self) -> str:
        return f"Chain(transition={self.transition.tolist()!r}, labels={self.labels!r})"

    @classmethod
    def from_binary(cls, chain: Chain, labels: Sequence[Hashable] = (0, 1)) -> Chain:
        r"""The same two-state chain given by its exact matrix :math:`[[1-\alpha,\alpha],[\beta,1-\beta]]`.

        The entries are the chain's exact rationals (for a :class:`MarkovChain` those of the
        doubles ``alpha`` and ``beta``), so every evaluator judges the same chain; ``labels``
        names the two states.
        """
        if not isinstance(chain, Chain) or chain.k != 2:
            raise TypeError(f"chain must be a two-state chain (a MarkovChain), got {chain!r}")
        return Chain([list(r) for r in chain.exact], labels=tuple(labels))

    # --- basic quantities -------------------------------------------------
    @property
    def k(self) -> int:
        """Number of states."""
        return int(self.transition.shape[0])

    @property
    def varying(self) -> bool:
        """False: every step has this matrix (a :class:`~redactopt.model.varying.VaryingChain` is true)."""
        return False

    @property
    def binary(self) -> bool:
        r"""Whether the two-state closed forms apply: ``k = 2`` and :math:`0<\alpha,\beta<1` (every entry positive).

        The paper's binary chain (:class:`MarkovChain`).  The judges and the influences pick their
        two-state kernels by it; a two-state chain with a zero entry (:math:`\alpha=1` or
        :math:`\beta=1`) goes through the matrix algorithms, which handle impossible transitions.
        """
        return self._binary

    @property
    def transition_matrix(self) -> np.ndarray:
        """The one-step matrix P (read-only; rows: current state, columns: next state)."""
        return self.transition

    @property
    def exact(self) -> tuple[tuple[Fraction, ...], ...]:
        """The exact stochastic matrix this chain stands for (module docstring), rows summing to 1."""
        ex = self._exact
        if ex is None:  # a MarkovChain: the rationals of its doubles
            a, b = Fraction(self._ab[0]), Fraction(self._ab[1])
            ex = ((1 - a, a), (b, 1 - b))
            self.__dict__["_exact"] = ex
        return ex

    def exact_transition(self) -> tuple[tuple[Fraction, ...], ...]:
        """The exact stochastic matrix (:attr:`exact`)."""
        return self.exact

    @property
    def stationary(self) -> np.ndarray:
        r"""Stationary law :math:`\pi` (:math:`\pi P=\pi`, every entry positive; read-only).

        Two states: :math:`(\beta, \alpha)/(\alpha+\beta)`; more: by GTH (:func:`stationary_gth`,
        no subtraction, small relative error in every entry).
        """
        pi = self._pi
        if pi is None:
            if self._ab is not None:
                a, b = self._ab
                s = a + b
                pi = np.array([b / s, a / s])
            else:
                pi = stationary_gth(self.transition)
            pi.setflags(write=False)
            self.__dict__["_pi"] = pi
        return pi

    def exact_stationary(self) -> tuple[Fraction, ...]:
        r"""The stationary law of the exact chain (:attr:`exact`), in rationals."""
        if self.k == 2:
            (_, a), (b, _) = self.exact
            return (b / (a + b), a / (a + b))
        return tuple(stationary_gth(np.array(self.exact, dtype=object)).tolist())

    def reversed_matrix(self) -> np.ndarray:
        r"""The time-reversed matrix :math:`\tilde P_{xy}=\pi_yP_{yx}/\pi_x` (left side, read outward; read-only).

        :math:`\tilde P_{xy}=\Pr(X_{t-1}=y\mid X_t=x)` for the stationary chain; rows renormalised
        to sum to 1 in floating point.  Same zero pattern as :math:`P^\top`; a two-state chain
        is reversible, so it is :attr:`transition` itself.
        """
        if self.k == 2:
            return self.transition
        R = self._rev
        if R is None:
            pi = self.stationary
            R = (self.transition.T * pi[None, :]) / pi[:, None]
            R = R / R.sum(axis=1, keepdims=True)
            R.setflags(write=False)
            self.__dict__["_rev"] = R
        return R

    def reversed(self) -> Chain:
        r"""The time-reversed chain :math:`\operatorname{diag}(\pi)^{-1}P^\top\operatorname{diag}(\pi)`, same labels.

        Exactly reversed in rationals; a two-state chain is its own reversal.
        """
        if self.k == 2:
            return self
        ex = self.exact
        pi = self.exact_stationary()
        rows = [[pi[y] * ex[y][x] / pi[x] for y in range(self.k)] for x in range(self.k)]
        return Chain(rows, labels=self.labels)

    @property
    def is_reversible(self) -> bool:
        r"""Whether :math:`\pi_xP_{xy}=\pi_yP_{yx}` (detailed balance) holds exactly for the exact chain."""
        if self.k == 2:
            return True
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

    def to_dict(self) -> dict:
        """``{"labels": [...], "transition": rows}``: labels as text, the matrix as given.

        The rows are the numbers the chain was built from (doubles, or exact fractions as text such
        as ``"3/10"``), so reading them back gives the same exact chain and the same float matrix.
        """
        raw = self._raw
        rows = raw if raw is not None else [[f"{v.numerator}/{v.denominator}" for v in r] for r in self.exact]
        return {"labels": [str(v) for v in self.labels], "transition": rows}

    # --- n-step transitions -------------------------------------------------
    def n_step_matrices(self, deltas: object, *, reverse: bool = False) -> np.ndarray:
        r""":math:`P^\Delta` for several distances (or the reversed chain's), shape ``(len, k, k)``.

        Parameters
        ----------
        deltas : int or 1-D array of int
            An integer ``m``: the distances ``1..m`` (successive products, every entry with a
            small relative error).  An array: those distances ``>= 0`` — for a :attr:`binary`
            chain by the closed form of Appendix A (accurate for distances in the millions;
            products where the diagonal would cancel), otherwise by repeated squaring.
        reverse : bool
            The time-reversed chain's powers (the left side); a two-state chain is reversible.
        """
        P = self.reversed_matrix() if reverse else self.transition
        if np.ndim(deltas) == 0:
            return _products(P, check_delta(deltas, "m", allow_zero=True))
        d = np.asarray(deltas, dtype=float)
        if d.ndim != 1:
            raise ValueError("deltas must be an integer or a 1-D array of integers >= 0")
        if self._binary:
            return self._two_state_powers(d)
        if d.size and (np.min(d) < 0 or not np.all(d == np.round(d))):
            raise ValueError("deltas must be integers >= 0")
        out = np.empty((d.size, self.k, self.k))
        for i, v in enumerate(d.astype(np.int64).tolist()):
            out[i] = _power(P, v)
        return out

    def _two_state_powers(self, d: np.ndarray) -> np.ndarray:
        r"""The closed form of Appendix A for an array of distances (two states).

        .. math::
            P^\Delta = \begin{pmatrix}\pi_0+\pi_1\lambda^\Delta & \pi_1(1-\lambda^\Delta)\\
            \pi_0(1-\lambda^\Delta) & \pi_1+\pi_0\lambda^\Delta\end{pmatrix},

        the diagonal formed as :math:`\pi_x + \pi_{\bar x}\lambda^\Delta` so that tiny entries
        keep full relative accuracy; where :math:`\lambda^\Delta\le -1/2` (at most
        :data:`_PRODUCT_STEPS` steps) that sum cancels and products of ``P`` are used instead.
        """
        lp, om = self.lam_powers(d)
        pi0, pi1 = self.stationary
        out = np.empty((d.size, 2, 2))
        out[:, 0, 0] = pi0 + pi1 * lp
        out[:, 0, 1] = pi1 * om
        out[:, 1, 0] = pi0 * om
        out[:, 1, 1] = pi1 + pi0 * lp
        strong = np.flatnonzero((lp <= -0.5) & (d <= _PRODUCT_STEPS))
        if strong.size:
            out[strong] = _products(self.transition, int(d[strong].max()))[d[strong].astype(int) - 1]
        return out

    def n_step_matrix(self, delta: int, *, reverse: bool = False) -> np.ndarray:
        r""":math:`P^\Delta` for one distance (:meth:`n_step_matrices`: closed form for a binary chain, else squaring)."""
        d = check_delta(delta, "delta", allow_zero=True)
        if self._binary:
            return self._two_state_powers(np.array([float(d)]))[0]
        return _power(self.reversed_matrix() if reverse else self.transition, d)

    # --- the two-state closed forms (Appendix A) ----------------------------
    def _pair(self, name: str) -> tuple[float, float]:
        """``(alpha, beta)``; an ``AttributeError`` naming ``k`` for a chain on more states."""
        ab = self._ab
        if ab is None:
            raise AttributeError(f"{name} is defined for two-state chains; this chain has {self.k} states")
        return ab

    @property
    def alpha(self) -> float:
        r""":math:`\Pr(X_{t+1}=1\mid X_t=0)`, the entry ``P[0, 1]`` (two-state chains)."""
        return self._pair("alpha")[0]

    @property
    def beta(self) -> float:
        r""":math:`\Pr(X_{t+1}=0\mid X_t=1)`, the entry ``P[1, 0]`` (two-state chains)."""
        return self._pair("beta")[1]

    @property
    def lam(self) -> float:
        r"""Second eigenvalue :math:`\lambda = 1-\alpha-\beta` of :math:`P`, correctly rounded (``fsum``)."""
        a, b = self._pair("lam")
        return math.fsum((1.0, -a, -b))

    @property
    def log_abs_lam(self) -> float:
        r""":math:`\log|\lambda|` to full relative accuracy (``-inf`` when :math:`\lambda=0`)."""
        a, b = self._pair("log_abs_lam")
        lam = self.lam
        if lam == 0.0:
            return -math.inf
        s = a + b
        if s < 0.5:
            return math.log1p(-s)
        if s > 1.5:
            return math.log1p(-math.fsum((2.0, -a, -b)))
        return math.log(abs(lam))

    @property
    def kind(self) -> ChainKind:
        """``"lazy"`` (alpha+beta < 1), ``"independent"`` (= 1) or ``"oscillating"`` (> 1), by the sign of :attr:`lam`."""
        lam = self.lam
        if lam > 0.0:
            return "lazy"
        if lam < 0.0:
            return "oscillating"
        return "independent"

    def lam_powers(self, deltas: object) -> tuple[np.ndarray, np.ndarray]:
        r""":math:`(\lambda^\Delta, 1-\lambda^\Delta)` for an array of distances, both accurate (two states).

        The one place where powers of :math:`\lambda` are formed.  Through logarithms
        (:attr:`log_abs_lam`), so they stay accurate for distances in the millions;
        :math:`1-\lambda^\Delta` by ``expm1`` when :math:`\lambda^\Delta>0`, so it keeps full
        relative accuracy when :math:`\lambda^\Delta\approx 1`.  Relative error of
        :math:`\lambda^\Delta` about :math:`|\Delta\log|\lambda||` ulps (at most ~750 ulps
        while it is not 0).

        Parameters
        ----------
        deltas : int or array of int
            Distances :math:`\Delta\ge 0`.
        """
        self._pair("lam_powers")
        d = np.asarray(deltas, dtype=float)
        if d.size and (np.min(d) < 0 or not np.all(d == np.round(d))):
            raise ValueError("deltas must be integers >= 0")
        lam = self.lam
        if lam == 0.0:
            lp = np.where(d == 0, 1.0, 0.0)
            return lp, 1.0 - lp
        log_mag = d * self.log_abs_lam
        mag = np.exp(log_mag)
        one_minus = -np.expm1(log_mag)
        if lam > 0.0:
            return mag, one_minus
        odd = np.mod(d, 2.0) == 1.0
        return np.where(odd, -mag, mag), np.where(odd, 1.0 + mag, one_minus)

    def lam_power(self, delta: int) -> float:
        r""":math:`\lambda^\Delta` (:meth:`lam_powers` for one distance)."""
        return float(self.lam_powers(check_delta(delta, "delta", allow_zero=True))[0])

    def one_minus_lam_power(self, delta: int) -> float:
        r""":math:`1-\lambda^\Delta` without cancellation (:meth:`lam_powers` for one distance)."""
        return float(self.lam_powers(check_delta(delta, "delta", allow_zero=True))[1])

    def n_step(self, delta: int) -> tuple[float, float]:
        r"""Closed-form :math:`(\alpha_\Delta, \beta_\Delta)` of Appendix A (two states).

        .. math::
            \alpha_\Delta = \tfrac{\alpha}{\alpha+\beta}(1-\lambda^\Delta),\quad
            \beta_\Delta = \tfrac{\beta}{\alpha+\beta}(1-\lambda^\Delta),

        the off-diagonal entries of :math:`P^\Delta` (:meth:`n_step_matrices`).
        """
        self._pair("n_step")
        m = self.n_step_matrix(delta)
        return float(m[0, 1]), float(m[1, 0])


class MarkovChain(Chain):
    r"""The two-state chain of the paper: :class:`Chain` ``[[1 - alpha, alpha], [beta, 1 - beta]]``, states 0 and 1.

    .. math::
        P = \begin{pmatrix} 1-\alpha & \alpha \\ \beta & 1-\beta \end{pmatrix}

    Parameters
    ----------
    alpha : float
        :math:`\Pr(X_{t+1}=1 \mid X_t=0)`, strictly between 0 and 1.
    beta : float
        :math:`\Pr(X_{t+1}=0 \mid X_t=1)`, strictly between 0 and 1.

    Notes
    -----
    A constructor, not a second model: it builds the :class:`Chain` with labels ``(0, 1)``
    whose exact matrix has the rationals of the doubles ``alpha`` and ``beta`` (without the
    general validation, so it costs about a microsecond), and equals that chain however it is
    given.  The paper assumes :math:`\alpha \le \beta`; here any pair in (0, 1) works (for
    :math:`\alpha > \beta` the roles of 0 and 1 swap).  The chain is *lazy* when
    :math:`\alpha+\beta<1`, *independent* when :math:`\alpha+\beta=1` and *oscillating* when
    :math:`\alpha+\beta>1`.  A two-state stationary chain is reversible, so backward and
    forward transitions coincide (Section II), which lets left and right of the private
    record be treated alike.
    """

    def __init__(self, alpha: float, beta: float) -> None:
        a = check_probability_open(alpha, "alpha")
        b = check_probability_open(beta, "beta")
        P = np.array(((1.0 - a, a), (b, 1.0 - b)))
        P.flags.writeable = False
        self.__dict__.update(transition=P, labels=(0, 1), _exact=None, _raw=None, _pi=None, _rev=None,
                             _hash=None, _ab=(a, b), _binary=True)

    def __reduce__(self) -> tuple:
        return (MarkovChain, self._ab)

    def __repr__(self) -> str:
        a, b = self._ab
        return f"MarkovChain(alpha={a!r}, beta={b!r})"


def check_chain(chain: object, name: str = "chain") -> Chain:
    """``chain`` itself if it is a :class:`Chain` (a MarkovChain or a ``k x k`` matrix chain), else a ``TypeError``."""
    if not isinstance(chain, Chain):
        raise TypeError(f"{name} must be a Chain (a MarkovChain or a transition matrix), got {type(chain).__name__}")
    return chain


def is_two_state(chain: object) -> bool:
    """Whether ``chain`` is a binary chain: a :class:`Chain` with :attr:`Chain.binary` (a MarkovChain or the same as a matrix)."""
    return isinstance(chain, Chain) and chain.binary


def is_markov(chain: object) -> bool:
    r"""Whether ``chain`` is the chain ``MarkovChain(chain.alpha, chain.beta)``, however it was given.

    A :class:`MarkovChain`, or a :class:`Chain` equal to one: two states labelled ``(0, 1)``, both
    transitions in (0, 1) (:attr:`Chain.binary`), exact matrix :math:`[[1-a, a], [b, 1-b]]` with
    ``a``, ``b`` the rationals of its doubles ``P[0, 1]``, ``P[1, 0]`` (e.g.
    ``Chain([[1 - A, A], [B, 1 - B]], labels=(0, 1))`` with Fractions).  Such a chain is written and
    reported as the MarkovChain it equals (its file's chain is ``alpha``/``beta``).  A
    matrix of doubles whose rows do not sum to exactly 1 is another exact chain (the module
    docstring), and a two-state chain on other labels keeps its labels: neither is one.
    """
    if isinstance(chain, MarkovChain):
        return True
    if not isinstance(chain, Chain) or not chain.binary or chain.labels != (0, 1):
        return False
    a, b = Fraction(chain.alpha), Fraction(chain.beta)
    return chain.exact == ((1 - a, a), (b, 1 - b))


def check_problem(chain: object, n: object, eps: object, p: object, *,
                  two_state: bool = True) -> tuple[int, float, int]:
    """Validate a design problem: a :class:`Chain`, ``n`` records, budget ``eps``, 0-based ``p``.

    ``two_state``: the caller's method is built on the two values of a binary record (its
    closed forms), so a chain on more states is refused with a ``TypeError`` saying so.
    """
    check_chain(chain)
    if two_state and not chain.binary:
        raise TypeError("chain must be a binary chain (two states, every transition probability in (0, 1): "
                        f"a MarkovChain) for this method; got {chain!r}")
    n = check_n(n)
    return n, check_eps(eps), check_index(p, n, "p")


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

