"""Exact data-independent optimum: enumeration, MILP, brute force over all published sets."""

import time

import numpy as np
import pytest

from redactopt.judge.certify import DesignResult
from redactopt.model.chain import MarkovChain
from redactopt.judge.leakage import leakage
from redactopt.paper.mechanisms import markov_quilt, theorem2_bound
from redactopt.engine.design import design
from redactopt.model.influence import side_log_ratio_maxima
from conftest import matrix_power_P


def dim_enumerate(chain, n, *, eps, p):
    """The enumeration solver's proposal, judged by design()."""
    return design(chain, n, eps=eps, p=p, method="dim")


def dim_milp(chain, n, *, eps, p, **options):
    """The MILP solver's proposal, judged by design()."""
    return design(chain, n, eps=eps, p=p, method="dim-milp", options=options)


def best_published_set(chain: MarkovChain, n: int, p: int, eps: float) -> int:
    """Most records publishable by any {0,1} data-independent mechanism: all 2^(n-1) sets."""
    others = [t for t in range(n) if t != p]
    best = 0
    for mask in range(1 << len(others)):
        q = np.ones((n, 2))
        chosen = [t for i, t in enumerate(others) if mask >> i & 1]
        if len(chosen) <= best:
            continue
        q[chosen] = 0.0
        if leakage(chain, q, p).leakage <= eps * (1 + 1e-12):
            best = len(chosen)
    return best


def window_leakage_by_matrix_power(a: float, b: float, d_left: int | None, d_right: int | None) -> float:
    """Lemma 1 from scratch: nearest published records at distances d_left / d_right (None: none)."""
    totals = np.zeros(2)
    for d in (d_left, d_right):
        if d is None:
            continue
        pd = matrix_power_P(a, b, d)
        lr = np.log(pd[0] / pd[1])
        totals += [lr.max(), (-lr).max()]
    return float(totals.max())


# (alpha, beta, n, p, eps): lazy and oscillating chains, alpha > beta, p at both ends and inside.
BRUTE_POINTS = [
    (0.01, 0.8, 10, 0, 0.5),
    (0.01, 0.8, 10, 4, 1.0),
    (0.8, 0.01, 10, 9, 0.5),
    (0.8, 0.01, 9, 3, 2.0),
    (0.25, 0.5, 10, 5, 0.3),
    (0.6, 0.7, 10, 2, 0.4),
    (0.9, 0.3, 10, 7, 1.0),
    (0.9, 0.95, 10, 4, 0.5),
    (0.7, 0.2, 8, 0, 0.25),
    (0.05, 0.55, 8, 3, 2.0),
    (0.4, 0.4, 7, 6, 0.1),
    (0.3, 0.7, 6, 2, 0.1),  # independent records: everything but p may be published
    (0.02, 0.03, 10, 5, 4.0),
]


@pytest.mark.parametrize("a,b,n,p,eps", BRUTE_POINTS)
def test_dim_optimum_equals_bruteforce_over_all_published_sets(a, b, n, p, eps):
    ch = MarkovChain(a, b)
    best = best_published_set(ch, n, p, eps)
    for res in (dim_enumerate(ch, n, eps=eps, p=p), dim_milp(ch, n, eps=eps, p=p)):
        assert isinstance(res, DesignResult)
        assert res.method in ("dim", "dim-milp")
        assert res.utility * n == pytest.approx(best, abs=1e-9)
        assert res.leakage <= eps
        # data-independent: every row is [0, 0] or [1, 1], redacted rows are one window
        q = res.redact_prob
        assert set(map(tuple, q.tolist())) <= {(0.0, 0.0), (1.0, 1.0)}
        red = np.flatnonzero(q[:, 0] == 1.0)
        assert red.min() <= p <= red.max() and red.size == red.max() - red.min() + 1
        assert res.class_certificate.scope == "data-independent"
        assert res.class_certificate.upper_bound * n == pytest.approx(best, abs=1e-9)


def test_enumeration_equals_milp_at_random_points(rng):
    checked = 0
    while checked < 24:
        a, b = rng.uniform(0.01, 0.99, size=2)
        ch = MarkovChain(float(a), float(b))
        if ch.kind == "independent":
            continue
        n = int(rng.integers(2, 60))
        p = int(rng.choice([0, n - 1, int(rng.integers(0, n))]))
        eps = float(rng.choice([0.05, 0.25, 0.5, 1.0, 2.0, 4.0]))
        e = dim_enumerate(ch, n, eps=eps, p=p)
        m = dim_milp(ch, n, eps=eps, p=p)
        assert e.utility == pytest.approx(m.utility, abs=1e-12), (a, b, n, p, eps)
        assert m.class_certificate.upper_bound >= m.utility - 1e-12
        assert m.class_certificate.gap < 1.0 / n
        assert e.class_certificate.gap < 1e-12
        assert m.class_certificate.solver.startswith("ortools-mathopt-")
        checked += 1
    # the random points cover both chain kinds and alpha > beta
    assert checked == 24


@pytest.mark.parametrize("solver", ["HIGHS", "GSCIP", "CP_SAT"])
def test_each_mathopt_backend_gives_the_optimum(solver):
    ch = MarkovChain(0.9, 0.3)
    e = dim_enumerate(ch, 25, eps=0.6, p=11)
    m = dim_milp(ch, 25, eps=0.6, p=11, solver=solver)
    assert m.utility == pytest.approx(e.utility, abs=1e-12)
    assert m.class_certificate.solver == f"ortools-mathopt-{solver.lower()}"


@pytest.mark.parametrize("eps", [0.25, 0.5, 1.0, 2.0, 4.0])
def test_fig3_setting_matches_first_publishable_distance(eps):
    # alpha=0.01, beta=0.8, n=10, p=1 (1-based): only the right side exists, so the
    # optimum publishes every record at distance >= the first d with max-influence <= eps.
    a, b, n = 0.01, 0.8, 10
    ch = MarkovChain(a, b)
    d = next((d for d in range(1, n) if window_leakage_by_matrix_power(a, b, None, d) <= eps), n)
    res = dim_enumerate(ch, n, eps=eps, p=0)
    assert res.utility * n == pytest.approx(n - d, abs=1e-9)
    assert dim_milp(ch, n, eps=eps, p=0).utility == pytest.approx(res.utility, abs=1e-12)
    # Algorithm 1 as printed redacts one record more than needed when d < n
    assert markov_quilt(ch, n, eps=eps, p=0).utility() <= res.utility + 1e-12


def test_theorem2_bound_is_beaten():
    # alpha=0.05, beta=0.55, n=8, p=4 (1-based), eps=2: Theorem 2 as printed bounds the
    # utility of data-independent mechanisms by 3/8, but redacting records 3..6 (1-based)
    # publishes 4 of 8.  Leakage by hand (Lemma 1 with matrix powers): nearest published
    # records at distance 2 (left) and 3 (right).
    a, b, n, p, eps = 0.05, 0.55, 8, 3, 2.0
    ch = MarkovChain(a, b)
    assert window_leakage_by_matrix_power(a, b, 2, 3) <= eps
    assert best_published_set(ch, n, p, eps) == 4
    assert theorem2_bound(ch, n, eps=eps, p=p) * n == pytest.approx(3.0)
    res = dim_enumerate(ch, n, eps=eps, p=p)
    assert res.utility * n == pytest.approx(4.0)
    assert res.utility > theorem2_bound(ch, n, eps=eps, p=p) + 0.1
    assert (res.info["delta_left"], res.info["delta_right"]) == (1, 2)


@pytest.mark.parametrize("a,b", [(0.01, 0.8), (0.9, 0.95), (0.7, 0.2), (0.99, 0.98)])
def test_side_log_ratio_maxima_are_lemma1_terms_and_non_increasing(a, b):
    ch = MarkovChain(a, b)
    ell = side_log_ratio_maxima(ch, 40)
    assert ell.shape == (40, 2)
    for d in range(1, 41):
        lr = np.log(matrix_power_P(a, b, d)[0] / matrix_power_P(a, b, d)[1])
        assert ell[d - 1] == pytest.approx([lr.max(), (-lr).max()], rel=1e-8, abs=1e-12)
    # data processing: each direction is non-increasing in the distance
    assert np.all(np.diff(ell, axis=0) <= 1e-15)


def test_single_record_and_tiny_budget():
    ch = MarkovChain(0.2, 0.3)
    res = dim_enumerate(ch, 1, eps=1.0, p=0)
    assert res.utility == 0.0 and res.redact_prob.tolist() == [[1.0, 1.0]]
    assert dim_milp(ch, 1, eps=1.0, p=0).utility == 0.0
    # eps below the influence at distance n-1: nothing can be published
    tiny = window_leakage_by_matrix_power(0.2, 0.3, None, 4) / 2
    assert dim_enumerate(ch, 5, eps=tiny, p=0).utility == 0.0
    assert dim_milp(ch, 5, eps=tiny, p=0).utility == 0.0


def test_bad_arguments_name_the_parameter():
    ch = MarkovChain(0.2, 0.3)
    with pytest.raises(ValueError, match="eps"):
        dim_enumerate(ch, 5, eps=0.0, p=0)
    with pytest.raises(ValueError, match="p"):
        dim_enumerate(ch, 5, eps=1.0, p=5)
    with pytest.raises(TypeError, match="n"):
        dim_milp(ch, 5.5, eps=1.0, p=0)
    with pytest.raises(TypeError, match="chain"):
        dim_enumerate((0.2, 0.3), 5, eps=1.0, p=0)
    with pytest.raises(ValueError, match="time_limit"):
        dim_milp(ch, 5, eps=1.0, p=0, time_limit=0.0)
    with pytest.raises(ValueError, match="solver"):
        dim_milp(ch, 5, eps=1.0, p=0, solver="NOPE")
    with pytest.raises(TypeError, match="m"):
        side_log_ratio_maxima(ch, 2.0)


@pytest.mark.slow
@pytest.mark.parametrize("n", [10, 100, 1000])
def test_large_n_enumeration_equals_milp(n):
    for a, b in [(0.01, 0.8), (0.9, 0.95), (0.8, 0.05)]:
        ch = MarkovChain(a, b)
        for p in (0, n // 3, n - 1):
            for eps in (0.1, 1.0):
                t0 = time.perf_counter()
                e = dim_enumerate(ch, n, eps=eps, p=p)
                t1 = time.perf_counter()
                m = dim_milp(ch, n, eps=eps, p=p)
                t2 = time.perf_counter()
                assert e.utility == pytest.approx(m.utility, abs=1e-12)
                assert t1 - t0 < 5.0 and t2 - t1 < 30.0
