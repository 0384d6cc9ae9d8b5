"""Optimisation back-ends of redactopt (installed as ``redactopt.solvers``).

Each module formulates one design problem for one solver family and returns
:class:`redactopt.certify.DesignResult` objects built by :func:`redactopt.certify.finalize`,
so every answer is snapped and re-verified by the exact leakage evaluator.
"""
