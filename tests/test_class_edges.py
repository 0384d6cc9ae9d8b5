"""Classes at the edges (issue 38): monotone by construction, bounds that are proofs, no internal errors.

Every expected number is derived here: exact LP optima of the owner and holder classes by a rational
simplex written in tests/exact_refs.py from the definitions (tiny n), exact upper bounds from a separate
float LP's dual point checked in rationals (n up to 6, k = 3 up to 4), and every returned mechanism
re-judged by enumerating all record tuples and outputs in rationals.
"""

from __future__ import annotations

import json
import math
import time
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exact_refs import (enum_ratio, enum_utility, leq_exp, local_law, owner_lp_dual_enclosure, owner_lp_exact,
                        scan_law, table_law)
from redactopt.engine.classes_design import compare_classes, design_class
from redactopt.model.chain import MarkovChain
from redactopt.model.chain import Chain
from redactopt.model.mechanism_classes import BlockMechanism, OwnerMechanism, ScanMechanism, as_kchain

#: a chain of small rationals (exact doubles): P(1, 1) / P(0, 1) = 2 exactly, a likelihood ratio of the chain
QUARTER_HALF = [[Fraction(3, 4), Fraction(1, 4)], [Fraction(1, 2), Fraction(1, 2)]]
#: just above ln 2 (the double of log(2) lies below it): e^EPS2 > 2, the budget ratio sits on the chain's ratio
EPS2 = math.nextafter(math.log(2), math.inf)
K3 = [[Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)], [Fraction(1, 4), Fraction(1, 2), Fraction(1, 4)],
      [Fraction(1, 8), Fraction(3, 8), Fraction(1, 2)]]


def exact_P(chain) -> list[list[Fraction]]:
    kc = as_kchain(chain)
    return [[Fraction(v) for v in row] for row in kc.exact_transition()]


def law_of(d) -> object:
    """The law of a design's mechanism, read from its tables (tests/exact_refs.py)."""
    m, n, p = d.mechanism, d.n, d.p
    if isinstance(m, np.ndarray):
        return local_law(m, n, p)
    if isinstance(m, ScanMechanism):
        return scan_law(None if m.left is None else m.left.tolist(), None if m.right is None else m.right.tolist(),
                        n, p, m.holder)
    if isinstance(m, BlockMechanism):
        raise AssertionError("blocks are judged elsewhere")
    return table_law(m.table, n, p, m.k, m.holder)


def check_by_enumeration(d) -> None:
    """The design's leakage within eps and its utility as stated, by enumeration in rationals."""
    P = exact_P(d.chain)
    ratio = enum_ratio(P, d.n, d.p, law_of(d))
    assert leq_exp(ratio, d.eps), (d.cls, d.info.get("best"), ratio)
    assert float(enum_utility(P, d.n, law_of(d))) == pytest.approx(d.utility, abs=1e-9)


def check_chain(rows) -> None:
    """Utilities grow along local ⊆ scan ⊆ owner ⊆ holder; every bound holds for every smaller class's design."""
    for a, b in zip(rows, rows[1:]):
        # a local design is a scan written as stop probabilities 1 - q, doubles rounded: equal up to 1e-12
        slack = 1e-12 if a.cls == "local" else 0.0
        assert a.utility <= b.utility + slack, (a.cls, a.utility, b.cls, b.utility)
    for i, d in enumerate(rows):
        assert d.verdict == "certified"
        assert all(e.utility <= d.certificate.upper_bound + 1e-12 for e in rows[: i + 1])


# ---------------------------------------------------------------------------
# the reproducers: a larger class never returns less than a smaller one
# ---------------------------------------------------------------------------
MONOTONE_CASES = [  # (chain, n, p 0-based, eps): each returned less for a larger class
    (MarkovChain(0.2, 0.4), 2, 0, 1.0986122886681096),           # eps = ln 3 on an influence
    (MarkovChain(0.000389, 0.000146), 7, 1, 13.8),
    (MarkovChain(0.5, 1e-06), 7, 3, 25.647049),
]


@pytest.mark.parametrize("chain,n,p,eps", MONOTONE_CASES)
def test_each_class_at_least_the_one_it_contains(chain, n, p, eps):
    rows = compare_classes(chain, n, eps=eps, p=p, time_limit=20)
    check_chain(rows)
    for d in rows:
        check_by_enumeration(d)
    # design --class on its own (no cache shared with the local design) is monotone too
    alone = [design_class(chain, n, eps=eps, p=p, cls=c, time_limit=20) for c in ("local", "scan")]
    assert alone[0].utility <= alone[1].utility + 1e-12


def test_eps_ln3_on_a_ratio_of_the_chain():
    # P = [[0.8, 0.2], [0.4, 0.6]] (the doubles' rationals), n = 2, p = 1: the value 1 of record 2 has the
    # fixed ratio P(1,1)/P(0,1) = 3 - 3e-16 > e^eps (eps the double below ln 3), so it is never published by a
    # mechanism that does not read X_p, and record 2 = 0 (ratio 2) is: the optimum of local, scan and owner is
    # pi_0 / 2 = 1/3 (an upper bound and, up to the margin, the design); the holder publishes more
    P = exact_P(MarkovChain(0.2, 0.4))
    eps = 1.0986122886681096
    assert not leq_exp(P[1][1] / P[0][1], eps) and leq_exp(P[0][0] / P[1][0], eps)
    rows = compare_classes(MarkovChain(0.2, 0.4), 2, eps=eps, p=0, time_limit=20)
    check_chain(rows)
    for d in rows[:3]:
        assert d.utility == pytest.approx(1 / 3, abs=1e-8)
        assert d.certificate.upper_bound == pytest.approx(1 / 3, abs=1e-12)
    assert rows[3].utility > 0.49


def test_kstate_chain_with_zeros_scan_is_at_least_local():
    kc = Chain([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]])
    rows = compare_classes(kc, 100, eps=13.8, p=0, classes=("local", "scan"), time_limit=20)
    check_chain(rows)
    # every record but X_1 published: the right side's first record has ratio P(x, c)/P(x', c) in {1, inf}
    # only where a zero entry rules a value out; publishing from distance 2 on costs P^2's ratios (all finite)
    assert rows[1].utility >= 0.98 - 1e-9


# ---------------------------------------------------------------------------
# no internal error on valid input
# ---------------------------------------------------------------------------
EDGE_CASES = [  # (chain, n, p, eps, cls): each raised RuntimeError (HiGHS) or an empty argmin
    (MarkovChain(0.1, 0.3), 5, 2, 1e-12, "owner"),
    (MarkovChain(0.000108, 0.000203), 7, 6, 30.0, "holder"),
    (MarkovChain(1e-06, 0.999), 4, 3, 1e-06, "owner"),
    (MarkovChain(0.1, 0.3), 5, 2, 1e-300, "holder"),
    (MarkovChain(0.1, 0.3), 5, 2, 5e-324, "holder"),
    (MarkovChain(0.1, 0.3), 5, 2, 1e300, "holder"),
    (MarkovChain(1e-12, 1e-12), 5, 2, 1.0, "holder"),
    (MarkovChain(0.3, 0.7), 5, 2, 1.0, "holder"),                 # alpha + beta = 1: independent records
    (MarkovChain(1e-12, 1 - 1e-12), 5, 2, 1.0, "holder"),
]


@pytest.mark.parametrize("chain,n,p,eps,cls", EDGE_CASES)
def test_valid_input_at_the_edges_designs_in_every_class(chain, n, p, eps, cls):
    rows = compare_classes(chain, n, eps=eps, p=p, time_limit=10)
    check_chain(rows)
    for d in rows:
        check_by_enumeration(d)


def test_independent_records_publish_everything_but_the_private_one():
    # alpha + beta = 1: the records are independent, nothing about X_p is learnt from the others
    for d in compare_classes(MarkovChain(0.3, 0.7), 5, eps=1e-9, p=2, time_limit=10):
        assert d.utility == pytest.approx(4 / 5, abs=1e-12)


def test_a_huge_budget_publishes_everything_but_the_private_record():
    # every ratio of the chain is finite, so eps = 1e300 allows publishing all four other records
    for d in compare_classes(MarkovChain(0.1, 0.3), 5, eps=1e300, p=2, time_limit=10):
        assert d.utility == pytest.approx(4 / 5, abs=1e-9)
        assert d.certificate.upper_bound == pytest.approx(4 / 5, abs=1e-12)


# ---------------------------------------------------------------------------
# owner and holder beyond the fall-back: the LP's own design, and bounds against exact LP optima
# ---------------------------------------------------------------------------
def test_owner_closes_the_gap_where_it_beats_the_scan():
    # the issue: the owner design fell back to the scan's 0.0354 where the LP optimum is 0.0724
    chain, n, p, eps = MarkovChain(0.038921, 0.000283), 7, 3, 0.123642
    P = exact_P(chain)
    E_hi = Fraction(math.exp(eps)) * (1 + Fraction(1, 10**13))  # above e^eps: math.exp errs by < 1 ulp
    upper = owner_lp_dual_enclosure(P, n, p, E_hi, holder=False)
    d = design_class(chain, n, eps=eps, p=p, cls="owner", time_limit=20)
    check_by_enumeration(d)
    assert isinstance(d.mechanism, OwnerMechanism) and d.info["best"] == "owner-lp"
    assert d.utility >= float(upper) - 1e-6
    assert d.certificate.upper_bound <= float(upper) + 1e-9


@pytest.mark.parametrize("n,p,holder", [(2, 0, False), (2, 0, True), (3, 1, False), (3, 1, True), (3, 0, True),
                                        (4, 1, False), (4, 2, True)])
def test_owner_and_holder_against_the_exact_rational_optimum(n, p, holder):
    # e^EPS2 > 2 = P(1,1)/P(0,1): OPT(2) <= OPT(e^EPS2) <= bound, and the LP value is right-continuous in E
    opt = owner_lp_exact(QUARTER_HALF, n, p, Fraction(2), holder)
    cls = "holder" if holder else "owner"
    d = design_class(Chain(QUARTER_HALF), n, eps=EPS2, p=p, cls=cls, time_limit=20)
    check_by_enumeration(d)
    assert d.certificate.upper_bound >= float(opt)
    assert d.certificate.upper_bound <= float(opt) + 1e-9
    assert d.utility >= float(opt) - 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("holder", [False, True])
def test_kstate_owner_and_holder_against_the_exact_rational_optimum(holder):
    opt = owner_lp_exact(K3, 3, 1, Fraction(2), holder)
    d = design_class(Chain(K3), 3, eps=EPS2, p=1, cls="holder" if holder else "owner", time_limit=20)
    check_by_enumeration(d)
    assert float(opt) <= d.certificate.upper_bound <= float(opt) + 1e-9
    assert d.utility >= float(opt) - 1e-6


@pytest.mark.parametrize("chain,n,p,eps,holder", [
    (MarkovChain(0.1, 0.3), 5, 2, 0.5, False), (MarkovChain(0.1, 0.3), 6, 3, 0.5, True),
    (MarkovChain(0.1, 0.3), 6, 2, 1e-6, False), (MarkovChain(0.05, 0.2), 6, 1, 1e-7, True),
    (Chain(K3), 4, 1, 0.7, False), (Chain(K3), 4, 2, 1e-6, True),
])
def test_bounds_agree_with_an_exact_dual_check_of_a_separate_lp(chain, n, p, eps, holder):
    # the LP built here from the definitions, its float dual point checked in rationals at a ratio above
    # e^eps: an exact upper bound; the returned design is checked by enumeration (an exact lower bound)
    P = exact_P(chain)
    E_hi = Fraction(math.exp(eps)) * (1 + Fraction(1, 10**13))
    upper = owner_lp_dual_enclosure(P, n, p, E_hi, holder)
    d = design_class(chain, n, eps=eps, p=p, cls="holder" if holder else "owner", time_limit=30)
    check_by_enumeration(d)
    assert d.utility <= float(upper) + 1e-12  # no design beats an exact bound
    assert d.certificate.upper_bound >= d.utility
    assert abs(d.certificate.upper_bound - float(upper)) <= 1e-9


# ---------------------------------------------------------------------------
# the bound LP's error model: the float dual bound is above the same dual point's exact bound
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("k,n,p,holder", [(2, 6, 2, False), (2, 5, 4, True), (3, 4, 1, False), (3, 4, 0, True)])
def test_owner_program_float_bound_is_above_its_exact_value(k, n, p, holder):
    import itertools

    from redactopt.judge.scan import exp_enclosure
    from redactopt.solvers.lp_certificate import dual_bound, solve_lp
    from redactopt.solvers.owner_lp import owner_program
    from exact_refs import stationary, tuple_prob

    Pq = QUARTER_HALF if k == 2 else K3
    kc = Chain(Pq)
    E = exp_enclosure(0.3)[1]
    lp, masks = owner_program(kc, n, p, E, holder=holder)
    sol = solve_lp(lp)
    pi = stationary(Pq)
    others = [t for t in range(n) if t != p]
    Ex = Fraction(E)
    # every entry of the program recomputed exactly from its row (pair, output) and column (table row, mask)
    nout = (k + 1) ** (n - 1)
    pairs = [(a, b) for a in range(k) for b in range(k) if a != b]
    rows_of = lp.info["outputs"]
    red = [Fraction(0)] * lp.c.shape[0]
    for x in itertools.product(range(k), repeat=n):
        w = tuple_prob(Pq, pi, x)
        r = sum(x[t] * k**t for t in range(n)) if holder else sum(x[t] * k**j for j, t in enumerate(others))
        for i, mask in enumerate(masks):
            red[r * len(masks) + i] += w * bin(int(mask)).count("1")
    A = lp.A_ub.tocoo()
    exact = {}
    for x in itertools.product(range(k), repeat=n):
        w = tuple_prob(Pq, pi, x)
        r = sum(x[t] * k**t for t in range(n)) if holder else sum(x[t] * k**j for j, t in enumerate(others))
        for i, mask in enumerate(masks):
            o = sum((x[t] if (int(mask) >> j) & 1 else k) * (k + 1) ** j for j, t in enumerate(others))
            for jp, (a, b) in enumerate(pairs):
                key = (jp * nout + o, r * len(masks) + i)
                if x[p] == a:
                    exact[key] = exact.get(key, Fraction(0)) + w / pi[a]
                if x[p] == b:
                    exact[key] = exact.get(key, Fraction(0)) - Ex * w / pi[b]
    live = {int(g): i for i, g in enumerate(rows_of)}
    yu = [max(Fraction(float(v)), Fraction(0)) for v in sol.y_ub]
    for (g, j), v in exact.items():
        if g in live:
            red[j] -= v * yu[live[g]]
        else:
            assert v == 0
    ye = [Fraction(float(v)) for v in sol.y_eq]
    for j in range(len(red)):
        red[j] -= ye[j // len(masks)]
    exact_bound = sum(ye, Fraction(0)) + sum((v for v in red if v > 0), Fraction(0))
    assert dual_bound(lp, sol.y_ub, sol.y_eq) >= exact_bound
    assert float(exact_bound) == pytest.approx(sol.value, rel=1e-8)


# ---------------------------------------------------------------------------
# properties over the parameter box, edges included
# ---------------------------------------------------------------------------
EDGE_EPS = [5e-324, 1e-300, 1e-12, 1e-6, 0.05, 0.5, 1.0, math.log(3), 5.0, 30.0, 800.0, 1e300]
EDGE_P = [1e-12, 1e-6, 0.01, 0.1, 0.3, 0.5, 0.9, 1 - 1e-6, 1 - 1e-12]


@st.composite
def problems(draw):
    a = draw(st.sampled_from(EDGE_P) | st.floats(1e-12, 1 - 1e-12))
    b = draw(st.sampled_from(EDGE_P + [1 - a]) | st.floats(1e-12, 1 - 1e-12))
    b = min(max(b, 1e-12), 1 - 1e-12)
    eps = draw(st.sampled_from(EDGE_EPS) | st.floats(1e-9, 50.0))
    n = draw(st.integers(2, 4))
    p = draw(st.integers(0, n - 1))
    return MarkovChain(a, b), n, p, eps


def _property(case) -> None:
    chain, n, p, eps = case
    rows = compare_classes(chain, n, eps=eps, p=p, time_limit=4)
    check_chain(rows)
    for d in rows:
        check_by_enumeration(d)
    opt_h = owner_lp_dual_enclosure(exact_P(chain), n, p, Fraction(math.exp(min(eps, 700.0))) * (1 + Fraction(1, 10**13)),
                                    True) if eps < 700 else None
    if opt_h is not None:  # no mechanism beats the holder LP's exact bound
        assert rows[-1].utility <= float(opt_h) + 1e-12


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_property_classes_monotone_private_and_bounded(case):
    _property(case)


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_property_classes_monotone_private_and_bounded_long(case):
    _property(case)


# ---------------------------------------------------------------------------
# time limits bound every design (the figures: benchmarks/class_time_limits.py)
# ---------------------------------------------------------------------------
def test_a_holder_lp_too_slow_for_the_time_limit_falls_back_and_says_so():
    # k = 3, n = 6, a transition of 1e-6: this design ran for more than 15 minutes; the holder LP's design
    # runs out of its share and the contained classes' designs are used, the bound still proven
    kc = Chain([[0.999998, 1e-06, 1e-06], [0.5, 0.25, 0.25], [0.5, 0.25, 0.25]])
    t = time.monotonic()
    d = design_class(kc, 6, eps=0.01, p=0, cls="holder", time_limit=2)
    assert time.monotonic() - t < 60  # generous: the 10 % + 1 s target is measured in the benchmark
    assert d.verdict == "certified" and d.certificate.upper_bound >= d.utility
    assert d.info["best"] != "holder-lp" or d.info.get("notes") is None


@pytest.mark.parametrize("argv", [
    ["--class", "owner", "--n", "5", "--private", "3", "--eps", "1e-12", "--alpha", "0.1", "--beta", "0.3"],
    ["--class", "holder", "--n", "7", "--private", "7", "--eps", "30", "--alpha", "0.000108", "--beta", "0.000203"],
    ["--class", "owner", "--n", "4", "--private", "4", "--eps", "1e-06", "--alpha", "1e-06", "--beta", "0.999"],
    ["--class", "local", "--n", "5", "--private", "3", "--eps", "1e-300", "--alpha", "0.1", "--beta", "0.3"],
    ["--class", "local", "--n", "5", "--private", "3", "--eps", "5e-324", "--alpha", "0.1", "--beta", "0.3"],
    ["--class", "scan", "--n", "5", "--private", "3", "--eps", "1e300", "--alpha", "0.1", "--beta", "0.3"],
])
def test_cli_designs_at_the_edges_exit_0(run, capsys, argv):
    assert run(["design", *argv, "--time-limit", "5"]) == 0
    out = capsys.readouterr()
    assert "utility" in out.out and out.err == ""


def test_cli_design_class_file_is_the_monotone_design(run, capsys, tmp_path):
    # design --class scan alone (no compare, no cache): the local design's completion is a candidate
    out = tmp_path / "scan.json"
    assert run(["design", "--class", "scan", "--n", "2", "--private", "1", "--eps", "1.0986122886681096",
                "--alpha", "0.2", "--beta", "0.4", "--out", str(out)]) == 0
    capsys.readouterr()
    d = json.loads(out.read_text())
    assert d["designed_for"] == "scan" and d["utility"] == pytest.approx(1 / 3, abs=1e-8)
    assert run(["audit", str(out)]) == 0
    assert "result    : PASS" in capsys.readouterr().out
