"""Shared test helpers: independent references that share no code with the library."""

from __future__ import annotations

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
    parser.addoption("--chain-form", choices=("binary", "matrix"), default="binary",
                     help="matrix: every MarkovChain(a, b) a test builds is the same exact chain given as a "
                          "2x2 transition matrix (redactopt.model.chain.Chain), not a MarkovChain")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "markov_constructor: tests of the MarkovChain constructor itself "
                                       "(its repr, pickle and speed; skipped with --chain-form matrix)")
    if config.getoption("--chain-form") == "matrix":
        from fractions import Fraction

        from redactopt._validate import check_probability_open
        from redactopt.model.chain import Chain, MarkovChain

        def as_matrix(cls: type, alpha: object, beta: object) -> Chain:
            a, b = (Fraction(check_probability_open(v, name)) for v, name in ((alpha, "alpha"), (beta, "beta")))
            return Chain([[1 - a, a], [b, 1 - b]], labels=(0, 1))  # not a MarkovChain: __init__ is skipped

        MarkovChain.__new__ = as_matrix  # type: ignore[method-assign]


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
import os  # noqa: E402

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("slow", max_examples=10_000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
