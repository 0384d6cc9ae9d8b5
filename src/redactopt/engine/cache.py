r"""Designs shared across sequences: the cache key, the cached design (a *shape*) and where it may be placed.

A release of many sequences needs a design around every group of nearby private records.
The design of a group is computed on a *sub-problem*: ``left`` records, then the group (its
private records at their offsets from the first one), then ``right`` records, with
:func:`redactopt.engine.joint.design_joint_sparse`.  :class:`DesignKey` holds exactly what
that call receives — the chain (or class of chains), ε, the method, the time limit, the
offsets, ``left`` and ``right`` — so one key is one design, computed once
(:class:`DesignCache`) and verified exactly once, however many sequences use it.

**Placing a design in a longer or shorter sequence is exact** (:meth:`Shape.place`).  Let
the group's first private record have ``d`` records before it in the real sequence, and let
the shape's first redactable row lie ``r`` records before it (its *reach*).

* *Cut.*  If the shape publishes the record at distance ``r + 1`` with certainty (``r <
  left``), every left pattern of Definition 1 ends at or before that record: a record
  published with certainty is observed without noise, and by the Markov property
  everything beyond it cancels from every likelihood ratio (docs/mathematics.md §8).  So
  any ``d >= r + 1`` gives the same leakage about every private record: the records
  beyond (more of them, or fewer than in the sub-problem) are published with certainty.
* *All-⊥ extension.*  If the shape's block reaches the sub-problem's end (``r = left``), the
  end is a true end there, and the only pattern that reaches it is "every record ⊥".  In a
  sequence with ``d > left`` the extra ``d - left`` records are redacted with certainty:
  with :math:`M_t = P\,\mathrm{diag}(q_t)` and :math:`q_t = (1, 1)`, :math:`M_t = P` and
  :math:`P\mathbb 1 = \mathbb 1`, so :math:`\Pr(\text{all}\ \bot \mid X_p = x) =
  (M_1\cdots M_{left}\,\mathbb 1)_x` is unchanged, and no new pattern is possible (a record
  redacted with certainty is never published).  So the leakage is again the sub-problem's,
  at the cost of ``d - left`` redacted records.

Both hold on each side independently (given :math:`X_p` the sides are independent), for
every private record of the group (each one's sides end beyond the group's footprint in
the same way) and for every chain of a class (the arguments use only :math:`P\mathbb1 =
\mathbb1` and the Markov property).  Hence the exact leakage about every private record of a
placed shape is the one :func:`~redactopt.judge.certify.finalize_sparse` verified for the
sub-problem (``Shape.design.per_private``), and two sequences whose groups use the same
key have the same exact leakage; ``tests/test_design_cache.py`` checks it against the
evaluator on the whole sequences and against enumeration of all outputs.

**Why the key is complete.**  The design is a deterministic function of the arguments of
``design_joint_sparse`` — which the key holds, and nothing else — and its placement is
exact by the two arguments above.  The clipping of the distances to the ends is therefore
never a guess: the release planner (:mod:`redactopt.release.plan`) chooses ``left`` and
``right`` from a few values and checks each placement with :meth:`Shape.place`, which
refuses any sequence where neither argument applies.

**Chain classes.**  ``chain`` is any hashable value ``design_joint_sparse`` accepts: a
:class:`~redactopt.model.chain.MarkovChain` or a :class:`~redactopt.model.classes.ChainClass`
(both frozen dataclasses).  A new kind of chain specification needs only to be hashable,
accepted by ``design_joint_sparse``, and described by :func:`chain_spec` for reports.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from redactopt.engine.joint import bound_table_keys, bound_tables, design_joint_sparse, design_states_release
from redactopt.judge.certify import SparseDesign, finalize_sparse
from redactopt.model.chain import Chain, is_two_state
from redactopt.model.classes import ChainClass
from redactopt.model.influence import delta_star

__all__ = ["DesignKey", "Shape", "DesignCache", "design_shape", "design_in_worker", "reflect", "chain_spec", "far_start", "placed_pieces",
           "MapFn"]

#: ``map_fn(fn, items)`` returns ``[fn(x) for x in items]`` in order, possibly in parallel.
MapFn = Callable[[Callable[[Any], Any], list], list]


def chain_spec(chain: Hashable) -> dict[str, Any]:
    """The file form of a key's chain: ``{"alpha", "beta"}``, ``{"labels", "transition"}`` for a chain on
    more states, or the class's ``to_dict()`` under ``"class"``."""
    if is_two_state(chain):
        return {"alpha": chain.alpha, "beta": chain.beta}
    if isinstance(chain, ChainClass):
        return {"class": chain.to_dict()}
    if isinstance(chain, Chain):
        return chain.to_dict()
    raise TypeError(f"chain must be a Chain or a ChainClass, got {type(chain).__name__}")


def _chains(chain: Hashable) -> tuple[Chain, ...]:
    if isinstance(chain, ChainClass):
        return chain.deciding()
    if isinstance(chain, Chain):
        return (chain,)
    raise TypeError(f"chain must be a Chain or a ChainClass, got {type(chain).__name__}")


@functools.lru_cache(maxsize=64)
def _reversible(chain: Hashable) -> bool:
    """Whether time reversal maps the chain onto itself (every two-state chain; see :func:`reflect`)."""
    return isinstance(chain, ChainClass) or is_two_state(chain) or chain.is_reversible


def far_start(chain: Hashable, eps: float) -> int:
    r"""The first distance to an end tried as "far": :math:`2\Delta^\star(\epsilon/2) + 16`.

    It is the window radius :func:`redactopt.engine.joint.design_local` starts from, so a
    sub-problem this long on each side holds every per-record window a long sequence would;
    whether it is far enough is decided by the design itself (the planner doubles it until
    the design publishes both ends with certainty).  For a class, the largest over its
    deciding chains.
    """
    return max(2 * delta_star(c, max(eps / 2.0, math.ulp(0.0))) + 16 for c in _chains(chain))


@dataclass(frozen=True)
class DesignKey:
    """Everything a group's design depends on: the sub-problem ``left`` records, the group, ``right`` records.

    ``private`` holds the offsets of the group's private records from its first one
    (starting at 0, sorted); the sub-problem has ``left + private[-1] + 1 + right`` records.
    ``chain`` is a :class:`~redactopt.model.chain.MarkovChain` or a
    :class:`~redactopt.model.classes.ChainClass`.
    """

    chain: Hashable
    eps: float
    method: str
    time_limit: float
    private: tuple[int, ...]
    left: int
    right: int

    def __post_init__(self) -> None:
        if not self.private or self.private[0] != 0 or list(self.private) != sorted(set(self.private)):
            raise ValueError(f"private offsets must start at 0, sorted and distinct, got {self.private!r}")
        if self.left < 0 or self.right < 0:
            raise ValueError(f"left and right must be >= 0, got {self.left}, {self.right}")

    @property
    def span(self) -> int:
        """Records from the first private record to the last, both included."""
        return self.private[-1] + 1

    @property
    def n(self) -> int:
        return self.left + self.span + self.right

    @property
    def positions(self) -> tuple[int, ...]:
        """0-based positions of the private records in the sub-problem."""
        return tuple(self.left + o for o in self.private)

    def with_ends(self, left: int, right: int) -> "DesignKey":
        return DesignKey(self.chain, self.eps, self.method, self.time_limit, self.private, int(left), int(right))

    def mirror(self) -> "DesignKey":
        """The same sub-problem read backwards (ends swapped, offsets reflected)."""
        last = self.private[-1]
        return DesignKey(self.chain, self.eps, self.method, self.time_limit,
                         tuple(last - o for o in reversed(self.private)), self.right, self.left)

    def canonical(self) -> tuple["DesignKey", bool]:
        """The key that is designed for this one, and whether it is the mirror image.

        A two-state stationary chain is reversible, so a sub-problem and its mirror image
        have mirror-image private mechanisms; only the one with the smaller
        ``(left, private)`` is designed, the other is its reflection (:func:`reflect`).
        """
        if not _reversible(self.chain):  # a chain on more states need not be: its mirror is another problem
            return self, False
        m = self.mirror()
        return (m, True) if (m.left, m.private) < (self.left, self.private) else (self, False)

    def to_dict(self) -> dict[str, Any]:
        return {"chain": chain_spec(self.chain), "eps": self.eps, "method": self.method,
                "time_limit": self.time_limit, "private_offsets": list(self.private), "left": self.left,
                "right": self.right, "n": self.n}


@dataclass(frozen=True)
class Shape:
    """A verified design of a :class:`DesignKey`'s sub-problem, with what placing it needs.

    Rows are those of the sub-problem (0-based).  ``lo``/``hi`` are its first and last
    redactable rows; ``mass`` its expected number of redacted records (at the chain its
    utility is measured at).
    """

    key: DesignKey
    design: SparseDesign = field(repr=False)

    @cached_property
    def lo(self) -> int:
        return int(self.design.redact_prob.starts[0])

    @cached_property
    def hi(self) -> int:
        rows = self.design.redact_prob
        return int(rows.starts[-1] + rows.blocks[-1].shape[0] - 1)

    @cached_property
    def mass(self) -> float:
        pi = self.design.chain.stationary
        return float(sum(float((b @ pi).sum()) for b in self.design.redact_prob.blocks))

    @property
    def cuts_left(self) -> bool:
        """The row before the first redactable row is published with certainty (the *cut* applies)."""
        return self.lo > 0

    @property
    def cuts_right(self) -> bool:
        return self.hi < self.key.n - 1

    @property
    def need_left(self) -> int:
        """The fewest records before the group a sequence must have for this shape (see :meth:`place`)."""
        return self.key.left - self.lo + 1 if self.cuts_left else self.key.left

    @property
    def need_right(self) -> int:
        last = self.key.left + self.key.span - 1
        return self.hi - last + 1 if self.cuts_right else self.key.right

    def place(self, d_left: int, d_right: int) -> tuple[int, int] | None:
        """Where the shape fits a group with ``d_left``/``d_right`` records before/after it: the
        records always redacted beyond the shape on each side, or ``None`` when it does not fit.

        A side that *cuts* fits every ``d >= need`` with nothing added; a side whose block
        reaches the sub-problem's end fits ``d >= left`` (``right``), the extra records always
        redacted (the module docstring proves both exact).
        """
        if d_left < self.need_left or d_right < self.need_right:
            return None
        wl = 0 if self.cuts_left else d_left - self.key.left
        wr = 0 if self.cuts_right else d_right - self.key.right
        return wl, wr

    def cost(self, wipe: tuple[int, int]) -> float:
        """Expected redacted records once placed with ``wipe`` records always redacted."""
        return self.mass + wipe[0] + wipe[1]

    def pieces(self, origin: int, wipe: tuple[int, int]) -> list[tuple[int, int, int]]:
        """:func:`placed_pieces` of this shape's blocks."""
        rows = self.design.redact_prob
        return placed_pieces([(int(s), b.shape[0]) for s, b in zip(rows.starts, rows.blocks)], origin,
                             self.key.n, wipe)


def placed_pieces(blocks: Sequence[tuple[int, int]], origin: int, n_sub: int,
                  wipe: tuple[int, int]) -> list[tuple[int, int, int]]:
    """The sequence rows a placed shape may redact: ``(first row, length, j)``, sorted.

    ``blocks`` are the shape's ``(first row, length)`` in its sub-problem of ``n_sub``
    records, whose row 0 lies at sequence row ``origin``; ``j`` is the block's index, or
    ``-1`` for the ``wipe`` records always redacted before row 0 and after the last row.
    """
    out = [(origin - wipe[0], wipe[0], -1)] if wipe[0] else []
    out += [(origin + s, m, j) for j, (s, m) in enumerate(blocks)]
    if wipe[1]:
        out.append((origin + n_sub, wipe[1], -1))
    return out


def reflect(shape: Shape, key: DesignKey) -> Shape:
    """The shape of ``key`` = ``shape.key.mirror()``: the design read backwards, verified again.

    Time reversal maps the outputs of the mirrored mechanism one to one onto the original's
    with the same probabilities (a stationary two-state chain is reversible), so the leakage
    about each private record and every region bound carry over;
    :func:`~redactopt.judge.certify.finalize_sparse` checks the reflected design exactly anyway.
    """
    if shape.key.mirror() != key:
        raise ValueError(f"{key} is not the mirror image of {shape.key}")
    d, n = shape.design, key.n
    rows = d.redact_prob
    parts = [(n - int(s) - b.shape[0], b[::-1].copy()) for s, b in zip(rows.starts, rows.blocks)]
    regions = None if d.regions is None else [(n - 1 - r.stop, n - 1 - r.start, r.upper_bound, r.solver)
                                              for r in d.regions]
    c = d.certificate
    design = finalize_sparse(d.chain, n, parts, private=list(key.positions), eps=d.eps, method=d.method,
                             upper_bound=c.upper_bound, solver=c.solver, scope=c.scope,
                             info=dict(d.info, mirror_of=shape.key.to_dict()), regions=regions,
                             chain_class=d.chain_class)
    return Shape(key, design)


#: ``method="optimal"`` in a release: the gap (expected records of a sub-problem) at which the certified bound
#: of a run of private records stops being refined (:func:`redactopt.engine.joint.design_joint_sparse`'s
#: ``target_gap``, per record of the sub-problem; a function of the key, so the design stays one of the key).
RELEASE_RUN_GAP = 0.5


#: The least time a release design is given once the release's design phase is nearly spent.
MIN_DESIGN_SECONDS = 0.05


def design_shape(key: DesignKey, deadline: float | None = None) -> Shape:
    """The design of a key's sub-problem (:func:`~redactopt.engine.joint.design_joint_sparse`), as a :class:`Shape`.

    A module-level function of the key alone, so process pools and Dask workers can run it.
    ``deadline`` (``time.time()``): the end of the release's design phase; the design gets
    ``key.time_limit`` or what is left until then, whichever is less (it is stopped, says so and keeps
    its certificate when that is less than it needs).
    """
    limit = key.time_limit if deadline is None else max(min(key.time_limit, deadline - time.time()),
                                                           MIN_DESIGN_SECONDS)
    if isinstance(key.chain, Chain) and not key.chain.binary:  # more states: the release rule of those chains
        design = design_states_release(key.chain, key.n, eps=key.eps, private=list(key.positions),
                                       method=key.method, time_limit=limit)
    else:
        design = design_joint_sparse(key.chain, key.n, eps=key.eps, private=list(key.positions), method=key.method,
                                     time_limit=limit, target_gap=RELEASE_RUN_GAP / key.n)
    return Shape(key, design)


def design_in_worker(key: DesignKey, deadline: float | None = None) -> tuple[Shape, dict]:
    """:func:`design_shape`, and the region-bound tables (:func:`~redactopt.engine.joint.bound_tables`)
    this process built for it, for the caller's process to reuse
    (:func:`~redactopt.engine.joint.seed_bound_tables`): a table takes about a second to build
    and is the same wherever it is built."""
    before = bound_table_keys()
    shape = design_shape(key, deadline)
    return shape, {k: bound_tables(*k) for k in bound_table_keys() - before}


def _serial(fn: Callable[[Any], Any], items: list) -> list:
    return [fn(x) for x in items]


class DesignCache:
    """Verified designs by :class:`DesignKey`, each computed once.

    :meth:`fetch` returns the shapes of a list of keys, computing the missing ones — each
    distinct key once, through ``map_fn`` (in parallel where it is a process pool or Dask).
    ``share=False`` is the uncached path: every request is designed anew and nothing is kept
    (the tests compare the two).  ``computed`` counts designs run, ``reflected`` shapes made
    by reflecting a mirror image's (:func:`reflect`), ``hits`` requests answered from the
    cache.  One cache may serve several releases (same chain, ε, ...).
    """

    def __init__(self, *, share: bool = True) -> None:
        self.share = share
        self._shapes: dict[DesignKey, Shape] = {}
        self.computed = 0
        self.reflected = 0
        self.hits = 0

    def __len__(self) -> int:
        return len(self._shapes)

    def __contains__(self, key: object) -> bool:
        return key in self._shapes

    def shapes(self) -> list[Shape]:
        return list(self._shapes.values())

    def fetch(self, keys: Sequence[DesignKey], map_fn: MapFn | None = None) -> list[Shape]:
        """The shapes of ``keys``, in order (missing ones designed with ``map_fn``, default in this process).

        Only canonical keys are designed (:meth:`DesignKey.canonical`); a mirrored key gets
        the reflection of its canonical shape.
        """
        run = map_fn or _serial
        canon = [k.canonical() for k in keys]
        if not self.share:
            designed = list(run(design_shape, [c for c, _ in canon])) if keys else []
            self.computed += len(designed)
            self.reflected += sum(flip for _, flip in canon)
            return [reflect(s, k) if flip else s for s, k, (_, flip) in zip(designed, keys, canon)]
        missing = [c for c in dict.fromkeys(c for c, _ in canon) if c not in self._shapes]
        if missing:
            for k, s in zip(missing, run(design_shape, missing)):
                self._shapes[k] = s
            self.computed += len(missing)
        self.hits += len(keys) - len(missing)
        for k, (c, flip) in zip(keys, canon):
            if flip and k not in self._shapes:
                self._shapes[k] = reflect(self._shapes[c], k)
                self.reflected += 1
        return [self._shapes[k] for k in keys]
