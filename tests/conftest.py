"""Shared test helpers: independent references that share no code with the library.

``--chain-form {markov,matrix}`` (default ``markov``): with ``matrix``, every ``MarkovChain(alpha,
beta)`` a test builds -- imported from ``redactopt``, ``redactopt.model.chain`` or any public path,
or read as ``redactopt.MarkovChain`` -- is instead the same chain given as a 2x2 matrix,
``Chain([[1 - A, A], [B, 1 - B]], labels=(0, 1))`` with ``A, B`` the exact rationals of ``alpha``
and ``beta``: the same exact chain, the same doubles ``[[1.0 - alpha, alpha], [beta, 1.0 - beta]]``,
built by the general constructor (not the MarkovChain fast path).  ``isinstance(x, MarkovChain)``
in a test then holds for every chain equal to a MarkovChain.  The library is not patched: an import
hook hands the stand-in to code under tests/ only, so a test that passes in both forms shows that
the library designs, judges and writes the two forms alike.  Tests of the MarkovChain constructor
itself (its type, repr, pickle, speed) are marked ``markov_constructor`` and skipped in the matrix
form.  (The same doubles given *as doubles* are not this chain: a matrix of doubles stands for its
rows divided by their exact sums, tests/test_chain.py and tests/test_exact.py pin that.)
"""

from __future__ import annotations

import os
import types

import numpy as np
import pytest


def matrix_power_P(alpha: float, beta: float, delta: int) -> np.ndarray:
    P = np.array([[1 - alpha, alpha], [beta, 1 - beta]])
    return np.linalg.matrix_power(P, delta)


def random_mechanism(rng: np.random.Generator, n: int, p: int) -> np.ndarray:
    """Random (n, 2) redaction probabilities with exact 0 and 1 entries mixed in."""
    q = rng.random((n, 2))
    u = rng.random((n, 2))
    q[u < 0.2] = 0.0
    q[u > 0.8] = 1.0
    q[p] = 1.0
    return q


def dense_redact_prob(mech: dict) -> np.ndarray:
    """The ``(n, 2)`` table of a mechanism file object, read by hand from its JSON.

    ``redactopt.mechanism/3`` (and ``/2``, ``kmechanism/1``) list blocks ``{"start": 1-based row,
    "redact_prob": rows}`` and publish every other record; ``/1`` lists every row.
    """
    if mech["format"] == "redactopt.mechanism/1":
        return np.array(mech["redact_prob"], dtype=float)
    assert mech["format"] in ("redactopt.mechanism/3", "redactopt.mechanism/2", "redactopt.kmechanism/1"), \
        mech["format"]
    q = np.zeros((mech["n"], len(mech.get("states", (0, 1)))))
    for b in mech["blocks"]:
        q[b["start"] - 1 : b["start"] - 1 + len(b["redact_prob"])] = b["redact_prob"]
    return q


def counts_outside(values, private, radius, sequences=None, k=2):
    """Transition counts of the rows farther than ``radius`` from every private record of their sequence,
    by hand: ``values`` and ``private`` (0/1 flags) per row in sequence order, ``sequences`` the id of
    each row (one sequence if ``None``); ``radius=None`` counts only sequences without a private record.
    Returns ``(k x k counts, rows outside)``."""
    import pandas as pd

    values = np.asarray(values)
    private = np.asarray(private, dtype=bool)
    ids = np.zeros(values.size, dtype=np.int64) if sequences is None else pd.factorize(np.asarray(sequences))[0]
    C = np.zeros((k, k), dtype=np.int64)
    rows = 0
    for sid in np.unique(ids):
        idx = np.flatnonzero(ids == sid)
        x, priv = values[idx], np.flatnonzero(private[idx])
        t = np.arange(idx.size)
        if priv.size == 0:
            out = np.ones(idx.size, dtype=bool)
        elif radius is None:
            out = np.zeros(idx.size, dtype=bool)
        else:
            out = np.abs(t[:, None] - priv[None, :]).min(axis=1) > radius
        rows += int(out.sum())
        for a in range(idx.size - 1):
            if out[a] and out[a + 1]:
                C[int(x[a]), int(x[a + 1])] += 1
    return C, rows


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--chain-form", choices=("markov", "matrix"), default="markov",
                     help="matrix: every MarkovChain(a, b) a test builds is the same exact chain given as the 2x2 "
                          "transition matrix Chain([[1 - A, A], [B, 1 - B]], labels=(0, 1)), A, B the "
                          "Fractions of a, b")


class _TestView(types.ModuleType):
    """A public module of redactopt as a test module sees it under ``--chain-form matrix``.

    Every attribute is the module's own (read, set and deleted there, so ``monkeypatch`` on it
    patches the real module), except ``MarkovChain``, which is :data:`_MATRIX_FORM`'s factory.
    """

    def __init__(self, module: types.ModuleType) -> None:
        super().__init__(module.__name__, module.__doc__)
        object.__setattr__(self, "_module", module)

    def __getattribute__(self, name: str) -> object:
        if name == "MarkovChain":
            return _MATRIX_FORM["factory"]
        module = object.__getattribute__(self, "_module")
        if name == "_module":
            return module
        if name == "__class__":
            return type(self)
        return getattr(module, name)

    def __setattr__(self, name: str, value: object) -> None:
        setattr(object.__getattribute__(self, "_module"), name, value)

    def __delattr__(self, name: str) -> None:
        delattr(object.__getattribute__(self, "_module"), name)

    def __dir__(self) -> list[str]:
        return dir(object.__getattribute__(self, "_module"))

    def __repr__(self) -> str:
        return repr(object.__getattribute__(self, "_module"))


_MATRIX_FORM: dict = {}
_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))


def _matrix_markov_chain() -> type:
    """The ``MarkovChain`` a test sees under ``--chain-form matrix``: a factory of matrix-given chains.

    ``MarkovChain(alpha, beta)`` validates both numbers as the real constructor does (same errors),
    then builds ``Chain([[1 - A, A], [B, 1 - B]], labels=(0, 1))``, ``A, B`` the Fractions of the
    doubles, through the general constructor: the chain MarkovChain stands for, entry by entry (its
    doubles are ``1.0 - alpha``, ``alpha``, ...).  Not the doubles themselves: a matrix of doubles
    stands for its rows divided by their exact sums, another exact chain (tests/test_chain.py,
    tests/test_exact.py pin that), which the library rightly judges and writes as such.  ``isinstance(x, MarkovChain)`` holds for a real MarkovChain and for any chain
    equal to one (the two-state chain on labels ``(0, 1)`` with ``0 < alpha, beta < 1``).
    """
    from fractions import Fraction

    from redactopt._validate import check_probability_open
    from redactopt.model.chain import Chain
    from redactopt.model.chain import MarkovChain as Markov

    class MatrixForm(type):
        def __call__(cls, alpha: float, beta: float) -> Chain:
            a = Fraction(check_probability_open(alpha, "alpha"))
            b = Fraction(check_probability_open(beta, "beta"))
            return Chain([[1 - a, a], [b, 1 - b]], labels=(0, 1))

        def __instancecheck__(cls, obj: object) -> bool:
            if isinstance(obj, Markov):
                return True
            return (isinstance(obj, Chain) and obj.binary and obj.labels == (0, 1)
                    and obj == Markov(obj.alpha, obj.beta))

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, Markov)

    class MarkovChain(metaclass=MatrixForm):
        """Test stand-in (``--chain-form matrix``): ``MarkovChain(alpha, beta)`` is the 2x2 matrix chain."""

    return MarkovChain


def _install_matrix_form() -> None:
    """Give test code (modules under tests/) the matrix-form ``MarkovChain``; the library keeps its own.

    An import hook, not a patch: ``from redactopt[...] import MarkovChain`` and ``import redactopt``
    run in a file under tests/ receive a :class:`_TestView` of the module, whose ``MarkovChain`` is
    the factory.  The modules themselves, and every import made by the library, are untouched (so
    the library's own MarkovChain, its pickles and its lazy imports are the real ones).
    """
    import builtins

    from redactopt.model.chain import MarkovChain as Markov

    real_import = builtins.__import__
    is_test: dict[str, bool] = {}

    def test_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
        module = real_import(name, globals, locals, fromlist, level)
        where = globals.get("__file__") if globals else None
        if not where:
            return module
        mine = is_test.get(where)
        if mine is None:
            mine = is_test[where] = os.path.dirname(os.path.abspath(where)).startswith(_TESTS_DIR)
        if not mine or isinstance(module, _TestView):
            return module
        if fromlist:
            if ("MarkovChain" in fromlist or "*" in fromlist) and getattr(module, "MarkovChain", None) is Markov:
                return _TestView(module)
        elif level == 0 and getattr(module, "__name__", None) == "redactopt":
            return _TestView(module)  # import redactopt[.sub] [as ro]: ro.MarkovChain
        return module

    _MATRIX_FORM.update(factory=_matrix_markov_chain(), real_import=real_import)
    builtins.__import__ = test_import


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "markov_constructor: tests of the MarkovChain constructor itself "
                                       "(its type, repr, pickle and speed; skipped with --chain-form matrix)")
    if config.getoption("--chain-form") == "matrix":
        _install_matrix_form()  # before any test module is imported


def pytest_unconfigure(config: pytest.Config) -> None:
    if "real_import" in _MATRIX_FORM:
        import builtins

        builtins.__import__ = _MATRIX_FORM.pop("real_import")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--chain-form") == "matrix":
        skip = pytest.mark.skip(reason="tests the MarkovChain constructor itself, not a chain")
        for item in items:
            if "markov_constructor" in item.keywords:
                item.add_marker(skip)


def pytest_report_header(config: pytest.Config) -> str:
    return f"chain form: {config.getoption('--chain-form')}"


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261130)


@pytest.fixture
def run():
    """``redactopt.interface.cli.main`` returning the exit status, also for argparse's own exits."""
    from redactopt.interface import cli

    def main(argv: list[str]) -> int:
        try:
            return cli.main(argv)
        except SystemExit as exc:  # argparse errors exit 2 from inside main
            return int(exc.code)

    return main


# Hypothesis profiles: "ci" (default, fast) and "slow" (>= 10,000 examples per property).
# Select with HYPOTHESIS_PROFILE=slow python -m pytest tests/test_properties.py -m "slow or not slow"
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("slow", max_examples=10_000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
