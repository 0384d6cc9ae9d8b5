"""Optimisation back-ends of redactopt (installed as ``redactopt.solvers``).

Each module formulates one design problem for one solver family and returns
:class:`redactopt.judge.certify.DesignResult` objects built by :func:`redactopt.judge.certify.finalize`,
so every answer is snapped and re-verified by the exact leakage evaluator.
"""
