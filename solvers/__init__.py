"""Optimisation back-ends of redactopt (installed as ``redactopt.solvers``).

Each module formulates one design problem for one solver family and *proposes* a
:class:`redactopt.solvers.base.Candidate`; none of them judges its own answer.
:func:`redactopt.engine.design.design` snaps, verifies exactly, repairs or falls back and
certifies every proposal.
"""
