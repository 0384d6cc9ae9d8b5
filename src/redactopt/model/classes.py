r"""Classes of chains (Pufferfish :math:`\Theta`): boxes of :math:`(\alpha,\beta)` and finite sets.

A guarantee for one fitted chain holds for that estimate only; Pufferfish privacy (Kifer &
Machanavajjhala) asks for it over a *class* :math:`\Theta` of distributions.  For local
redaction mechanisms on binary chains the class is decided by one or two chains
(docs/mathematics.md, "Classes of chains"):

**Theorem.** For a fixed mechanism, :math:`\alpha\mapsto\mathcal L_{(\alpha,\beta)}` does not
increase while :math:`\alpha+\beta\le1` and does not decrease while :math:`\alpha+\beta\ge1`
(it is 0 on :math:`\alpha+\beta=1`); the same holds in :math:`\beta`.  Hence over a box

.. math:: \sup_{\theta\in\Theta}\mathcal L_\theta = \max\big(\mathcal L(\alpha_{lo},\beta_{lo}),
          \mathcal L(\alpha_{hi},\beta_{hi})\big),

and a box of lazy chains (:math:`\alpha_{hi}+\beta_{hi}\le1`) is decided by its corner
:math:`(\alpha_{lo},\beta_{lo})` alone: private for every chain of the box iff private there.
The sup is attained at a corner, so it is certified by exact point evaluations
(:func:`redactopt.judge.classes.class_leakage`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from redactopt._validate import check_real
from redactopt.model.chain import MarkovChain, is_two_state

__all__ = ["ChainClass", "implied_by", "parse_range"]


def implied_by(chain: MarkovChain, other: MarkovChain) -> bool:
    """Whether privacy at ``other`` implies privacy at ``chain`` for every mechanism (the theorem).

    True when both lie on the same side of :math:`\\alpha+\\beta=1` and ``other`` is at
    least as far from it in both coordinates (or ``chain`` is independent: it leaks nothing).
    """
    lam, lam2 = chain.lam, other.lam
    if lam == 0.0:
        return True
    if lam > 0.0 and lam2 >= 0.0:
        return lam2 > 0.0 and other.alpha <= chain.alpha and other.beta <= chain.beta
    if lam < 0.0 and lam2 < 0.0:
        return other.alpha >= chain.alpha and other.beta >= chain.beta
    return False


def _interval(value: object, name: str, shown: str | None = None) -> tuple[float, float]:
    """``(lo, hi)`` of a number or a pair; errors quote ``shown`` (what was typed) when given."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"{name} must be a number or a (lo, hi) pair, got {value!r}")
        lo, hi = check_real(value[0], f"{name} lo"), check_real(value[1], f"{name} hi")
        given = f"{lo!r}:{hi!r}"
    else:
        lo = hi = check_real(value, name)
        given = repr(lo)
    given = given if shown is None else shown
    if not 0.0 < lo < 1.0 or not 0.0 < hi < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {given}")
    if lo > hi:
        raise ValueError(f"{name} range must have lo <= hi, got {given}")
    return lo, hi


def parse_range(text: str, name: str) -> tuple[float, float]:
    """``"0.003"`` or ``"0.002:0.0048"`` (the CLI's ``--alpha`` / ``--beta``) as ``(lo, hi)``."""
    parts = str(text).split(":")
    if len(parts) > 2 or any(not s.strip() for s in parts):
        raise ValueError(f"{name} must be a number or LO:HI, got {text!r}")
    try:
        vals = [float(s) for s in parts]
    except ValueError:
        raise ValueError(f"{name} must be a number or LO:HI, got {text!r}") from None
    if any(math.isnan(v) for v in vals):
        raise ValueError(f"{name} must not be NaN, got {text!r}")
    return _interval(tuple(vals) if len(vals) == 2 else vals[0], name, shown=str(text).strip())


@dataclass(frozen=True)
class ChainClass:
    r"""A class :math:`\Theta` of chains: a box :math:`[\alpha_{lo},\alpha_{hi}]\times[\beta_{lo},\beta_{hi}]` or a finite set.

    Build with :meth:`box` or :meth:`of`.  ``nominal`` is the chain a release is most likely
    to follow (the point estimate; utilities are also reported there); by default the
    box's centre or the first chain of a set.  A degenerate box is the point chain.

    Attributes
    ----------
    alpha, beta : (float, float) or None
        The box's ranges (``None`` for a finite set).
    chains : tuple of MarkovChain
        The finite set (empty for a box).
    nominal : MarkovChain
    """

    alpha: tuple[float, float] | None
    beta: tuple[float, float] | None
    chains: tuple[MarkovChain, ...]
    nominal: MarkovChain

    @classmethod
    def box(cls, alpha: object, beta: object, *, nominal: MarkovChain | None = None) -> "ChainClass":
        """The box of every chain with :math:`\\alpha` in ``alpha`` and :math:`\\beta` in ``beta``.

        ``alpha`` and ``beta`` are numbers (a degenerate range) or ``(lo, hi)`` pairs, taken as
        the doubles given (to certify a decimal box, round ``lo`` down and ``hi`` up first).
        """
        a, b = _interval(alpha, "alpha"), _interval(beta, "beta")
        if nominal is None:
            nominal = MarkovChain(0.5 * (a[0] + a[1]), 0.5 * (b[0] + b[1]))
        elif not (is_two_state(nominal) and a[0] <= nominal.alpha <= a[1] and b[0] <= nominal.beta <= b[1]):
            raise ValueError(f"nominal chain must be a MarkovChain inside the box, got {nominal!r}")
        return cls(a, b, (), nominal)

    @classmethod
    def of(cls, chains: object, *, nominal: MarkovChain | None = None) -> "ChainClass":
        """The finite set of ``chains`` (two-state chains: MarkovChain objects or 2 x 2 matrices)."""
        items = tuple(chains)  # type: ignore[arg-type]
        if not items or not all(is_two_state(c) for c in items):
            raise TypeError("chains must be a non-empty collection of MarkovChain")
        nominal = items[0] if nominal is None else nominal
        if nominal not in items:
            raise ValueError(f"nominal chain must be one of the chains, got {nominal!r}")
        return cls(None, None, items, nominal)

    @classmethod
    def point(cls, chain: MarkovChain) -> "ChainClass":
        """The class of one chain."""
        return cls.box(chain.alpha, chain.beta, nominal=chain)

    @property
    def is_point(self) -> bool:
        """A single chain (a degenerate box or a set of one)."""
        if self.chains:
            return len(set(self.chains)) == 1
        return self.alpha[0] == self.alpha[1] and self.beta[0] == self.beta[1]  # type: ignore[index]

    def deciding(self) -> tuple[MarkovChain, ...]:
        """The chains whose privacy decides the class's (the theorem), as few as possible.

        A box: :math:`(\\alpha_{lo},\\beta_{lo})` if it holds lazy chains, :math:`(\\alpha_{hi},
        \\beta_{hi})` if it holds oscillating ones (both when it straddles
        :math:`\\alpha+\\beta=1`).  A set: its chains not implied by another one.
        """
        if not self.chains:
            lo = MarkovChain(self.alpha[0], self.beta[0])  # type: ignore[index]
            hi = MarkovChain(self.alpha[1], self.beta[1])  # type: ignore[index]
            out = ([lo] if lo.lam > 0.0 else []) + ([hi] if hi.lam < 0.0 else [])
            # neither: every chain of the box is independent (alpha + beta = 1) and leaks nothing
            return tuple(dict.fromkeys(out)) or (lo,)
        kept: list[MarkovChain] = []
        for c in dict.fromkeys(self.chains):
            if any(implied_by(c, k) for k in kept):
                continue
            kept = [k for k in kept if not implied_by(k, c)] + [c]
        return tuple(kept)

    def __contains__(self, chain: object) -> bool:
        if not is_two_state(chain):
            return False
        if self.chains:
            return chain in self.chains
        return (self.alpha[0] <= chain.alpha <= self.alpha[1]  # type: ignore[index]
                and self.beta[0] <= chain.beta <= self.beta[1])  # type: ignore[index]

    def to_dict(self) -> dict:
        """The file form: ``{"alpha": [lo, hi], "beta": [lo, hi]}`` or ``{"chains": [...]}``, plus ``nominal``."""
        nominal = {"alpha": self.nominal.alpha, "beta": self.nominal.beta}
        if self.chains:
            return {"chains": [{"alpha": c.alpha, "beta": c.beta} for c in self.chains], "nominal": nominal}
        return {"alpha": list(self.alpha), "beta": list(self.beta), "nominal": nominal}  # type: ignore[arg-type]

    def describe(self) -> str:
        """One line: ``alpha 0.002:0.0048  beta 0.0075:0.0178`` or ``3 chains``."""
        if self.chains:
            return f"{len(self.chains)} chains"
        return (f"alpha {self.alpha[0]:.6g}:{self.alpha[1]:.6g}  "  # type: ignore[index]
                f"beta {self.beta[0]:.6g}:{self.beta[1]:.6g}")  # type: ignore[index]
