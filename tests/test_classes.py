"""Classes of chains (issue 14): the worst case over a box sits at a deciding corner, checked exactly.

Independent references: the rational evaluator (:func:`redactopt.judge.exact.exact_leakage_ratio`,
no floating point) at points inside boxes, a hand-built pattern ratio in fractions, grids and
local maximisation with the float evaluator.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from redactopt import MarkovChain, design
from redactopt.engine.joint import design_joint_sparse
from redactopt.judge.classes import class_leakage
from redactopt.judge.exact import certify_exact, exact_leakage_ratio
from redactopt.judge.leakage import leakage
from redactopt.model.classes import ChainClass, implied_by, parse_range

probs = st.floats(min_value=0.01, max_value=0.99, allow_nan=False)
entries = st.one_of(st.just(0.0), st.just(1.0), st.floats(min_value=1e-6, max_value=1.0))


@st.composite
def boxes_and_mechanisms(draw):
    a = sorted([draw(probs), draw(probs)])
    b = sorted([draw(probs), draw(probs)])
    n = draw(st.integers(min_value=2, max_value=6))
    p = draw(st.integers(min_value=0, max_value=n - 1))
    q = np.array(draw(st.lists(st.tuples(entries, entries), min_size=n, max_size=n)), dtype=float)
    q[p] = 1.0
    inside = (draw(st.floats(0, 1)), draw(st.floats(0, 1)))
    return ChainClass.box(tuple(a), tuple(b)), q, p, inside


@settings(max_examples=150)
@given(boxes_and_mechanisms())
def test_no_chain_inside_a_box_leaks_more_than_its_deciding_corners(case):
    box, q, p, (u, v) = case
    alpha = box.alpha[0] + u * (box.alpha[1] - box.alpha[0])
    beta = box.beta[0] + v * (box.beta[1] - box.beta[0])
    inside = exact_leakage_ratio(alpha, beta, q.tolist(), p)
    corners = max(exact_leakage_ratio(c.alpha, c.beta, q.tolist(), p) for c in box.deciding())
    assert inside <= corners  # exact rational comparison of exp(leakage)
    # the certified sup is the float leakage at a deciding corner
    sup = class_leakage(box, q, [p])
    assert sup.chain in box.deciding()
    assert math.log(corners) == pytest.approx(sup.leakage, abs=1e-12)


def test_a_single_pattern_is_not_monotone_but_the_worst_case_is():
    # beta = 1/100, record 1 redacted always when 0 and with probability 1e-6 when 1: the pattern
    # "record 1 is ⊥, record 2 shows 1" has likelihood ratio
    #   sum_y P[0,y] q1[y] P[y,1] / sum_y P[1,y] q1[y] P[y,1],
    # which is not monotone in alpha; the side's extreme ratio (what the leakage takes) is.
    beta, q1 = Fraction(1, 100), (Fraction(1), Fraction(1, 10**6))

    def ratio(alpha):
        P = [[1 - alpha, alpha], [beta, 1 - beta]]
        num = sum(P[0][y] * q1[y] * P[y][1] for y in (0, 1))
        den = sum(P[1][y] * q1[y] * P[y][1] for y in (0, 1))
        return num / den

    r = [ratio(Fraction(1, 1000)), ratio(Fraction(1, 100)), ratio(Fraction(1, 20))]
    assert r[1] > r[0] and r[1] > r[2]
    q = [[1, 1], [1, 1e-6], [0, 0]]
    L = [exact_leakage_ratio(a, 0.01, q, 0) for a in (0.001, 0.01, 0.05)]
    assert L[0] >= L[1] >= L[2]


def test_grid_and_local_maximisation_never_exceed_the_sup(rng):
    for _ in range(12):
        n = int(rng.integers(3, 9))
        p = int(rng.integers(0, n))
        q = rng.random((n, 2))
        q[rng.random((n, 2)) < 0.3] = 1.0
        q[rng.random((n, 2)) < 0.2] = 0.0
        q[p] = 1.0
        a = np.sort(rng.uniform(0.01, 0.99, 2))
        b = np.sort(rng.uniform(0.01, 0.99, 2))
        box = ChainClass.box(tuple(a), tuple(b))
        sup = class_leakage(box, q, [p]).leakage

        def neg(x):
            al, be = np.clip(x, [a[0], b[0]], [a[1], b[1]])
            return -leakage(MarkovChain(float(al), float(be)), q, p).leakage

        grid = [-neg((al, be)) for al in np.linspace(a[0], a[1], 9) for be in np.linspace(b[0], b[1], 9)]
        assert max(grid) <= sup + 1e-12
        for start in ((a.mean(), b.mean()), (a[0], b[1]), (a[1], b[0])):
            res = minimize(neg, start, method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-12})
            assert -res.fun <= sup + 1e-12


def test_degenerate_box_is_the_point_chain():
    chain = MarkovChain(0.2, 0.5)
    point = ChainClass.point(chain)
    assert point.is_point and point.deciding() == (chain,)
    a = design(chain, 6, eps=1.0, p=2)
    b = design(point, 6, eps=1.0, p=2)
    np.testing.assert_array_equal(np.asarray(a.redact_prob), np.asarray(b.redact_prob))
    assert a.utility == b.utility and a.certificate.upper_bound == b.certificate.upper_bound
    assert class_leakage(point, a.redact_prob, [2]).leakage == a.leakage


def test_deciding_chains_of_lazy_oscillating_and_straddling_boxes():
    assert ChainClass.box((0.1, 0.2), (0.3, 0.4)).deciding() == (MarkovChain(0.1, 0.3),)
    assert ChainClass.box((0.6, 0.7), (0.5, 0.8)).deciding() == (MarkovChain(0.7, 0.8),)
    assert ChainClass.box((0.3, 0.7), (0.3, 0.6)).deciding() == (MarkovChain(0.3, 0.3), MarkovChain(0.7, 0.6))
    s = ChainClass.of([MarkovChain(0.1, 0.3), MarkovChain(0.05, 0.2), MarkovChain(0.8, 0.9), MarkovChain(0.9, 0.9)])
    assert set(s.deciding()) == {MarkovChain(0.05, 0.2), MarkovChain(0.9, 0.9)}
    assert implied_by(MarkovChain(0.1, 0.3), MarkovChain(0.05, 0.2))
    assert not implied_by(MarkovChain(0.05, 0.2), MarkovChain(0.1, 0.3))


@pytest.mark.parametrize("alpha,beta", [((0.005, 0.02), (0.6, 0.9)), ((0.3, 0.7), (0.3, 0.6))])
def test_robust_design_is_private_everywhere_in_the_box(alpha, beta, rng):
    box = ChainClass.box(alpha, beta)
    n, p = 8, 2
    res = design(box, n, eps=1.0, p=p)
    q = np.asarray(res.redact_prob)
    for c in (MarkovChain(a, b) for a in alpha for b in beta):  # every corner, exactly
        assert certify_exact(c.alpha, c.beta, q.tolist(), [p], 1.0).status == "certified"
    for _ in range(1000):  # random chains of the box, float evaluator
        c = MarkovChain(float(rng.uniform(*alpha)), float(rng.uniform(*beta)))
        assert leakage(c, q, p).leakage <= 1.0 + 1e-9
    # the certificate bounds every design private for the class, measured at the deciding chain
    point = design(res.chain, n, eps=1.0, p=p)
    assert res.certificate.upper_bound >= res.utility
    assert res.certificate.upper_bound <= point.certificate.upper_bound + 1e-12


def test_robust_design_target_case():
    # issue 14: n = 10, p = 1 (CLI), alpha in [0.005, 0.02], beta in [0.6, 0.9], eps = 1: gap <= 1e-3
    box = ChainClass.box((0.005, 0.02), (0.6, 0.9))
    res = design(box, 10, eps=1.0, p=0)
    assert res.certificate.gap <= 1e-3
    # utility and bound are stated at the nominal chain (issue 24); the point optimum at the deciding corner
    assert res.chain == box.nominal == MarkovChain(0.0125, 0.75)
    (pt,) = res.info["point_optima"]
    assert (pt["alpha"], pt["beta"]) == (0.005, 0.6) and pt["upper_bound"] - pt["utility"] <= 1e-3


def test_sparse_design_over_the_occupancy_box():
    box = ChainClass.box((0.0020, 0.0048), (0.0075, 0.0178), nominal=MarkovChain(0.00312, 0.01157))
    s = design_joint_sparse(box, 3000, eps=1.0, private=[1500, 1501, 2990])
    assert s.chain_class is box and s.leakage <= 1.0
    worst = MarkovChain(0.0020, 0.0075)
    dense = np.asarray(s.redact_prob)
    assert max(leakage(worst, dense, p).leakage for p in (1500, 1501, 2990)) <= 1.0
    point = design_joint_sparse(box.nominal, 3000, eps=1.0, private=[1500, 1501, 2990])
    assert max(leakage(worst, np.asarray(point.redact_prob), p).leakage for p in (1500, 1501, 2990)) > 1.0
    assert s.chain == box.nominal and s.utility < point.utility  # robustness costs utility at the estimate


@pytest.mark.parametrize("text,err", [("0.3:0.1", "lo <= hi"), ("0:0.1", "strictly between"), ("nan", "NaN"),
                                      ("0.1:", "LO:HI"), ("0.1:0.2:0.3", "LO:HI"), ("x", "LO:HI")])
def test_bad_ranges_are_one_line_errors(text, err):
    with pytest.raises(ValueError, match=err):
        parse_range(text, "--alpha")


def test_bad_boxes_in_the_library():
    with pytest.raises(ValueError, match="lo <= hi"):
        ChainClass.box((0.3, 0.1), 0.2)
    with pytest.raises(ValueError, match="strictly between"):
        ChainClass.box((0.0, 0.1), 0.2)
    with pytest.raises(ValueError, match="finite"):
        ChainClass.box((float("nan"), 0.1), 0.2)
    with pytest.raises(ValueError, match="nominal"):
        ChainClass.box((0.1, 0.2), 0.2, nominal=MarkovChain(0.5, 0.2))


def test_cli_design_and_audit_over_a_class(run, capsys, tmp_path):
    f = tmp_path / "m.json"
    assert run(["design", "--n", "8", "--eps", "1", "--alpha", "0.005:0.02", "--beta", "0.6:0.9",
                "--format", "json", "--out", str(f)]) == 0
    d = json.loads(f.read_text())
    assert d["chain_class"]["alpha"] == [0.005, 0.02] and d["chain"] == {"alpha": 0.0125, "beta": 0.75}  # nominal
    capsys.readouterr()
    assert run(["audit", str(f), "--format", "json"]) == 0  # the file's own class
    rep = json.loads(capsys.readouterr().out)
    assert rep["passed"] and rep["worst_chain"] == {"alpha": 0.005, "beta": 0.6}
    # a wider box than the file was designed for: its far corner leaks more
    assert run(["audit", str(f), "--alpha", "0.004:0.02", "--beta", "0.6:0.9", "--format", "json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert not rep["passed"] and rep["worst_chain"] == {"alpha": 0.004, "beta": 0.6} and rep["leakage"] > 1.0
    assert run(["audit", str(f), "--eps", "2"]) == 0  # another budget for the same class
    assert run(["design", "--n", "8", "--eps", "1", "--alpha", "0.3:0.1"]) == 2
    assert "lo <= hi" in capsys.readouterr().err


def test_cli_compare_accepts_class_rows(run, capsys):
    assert run(["compare", "--n", "6", "--eps", "1", "--alpha", "0.005:0.02,0.01", "--beta", "0.6", "--format",
                "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["alpha"] for r in rows] == ["0.005:0.02", 0.01]
    box, point = rows
    # the class row is private for every chain of the box, hence for the point chain 0.01 too:
    # its optimum is at most the point row's
    assert box["optimal"] <= point["optimal"] + 1e-12
    assert box["three_region_leakage"] >= point["three_region_leakage"] - 1e-12  # worst case over the box


@pytest.mark.parametrize("alpha,beta", [((0.05, 0.2), (0.3, 0.6)), ((0.3, 0.7), (0.3, 0.6))])
def test_class_utility_and_bound_are_at_the_nominal_chain(alpha, beta):
    # issue 24: utility and upper bound of a class design are stated at the nominal chain.  Checked by
    # hand (the nominal stationary law on the design's table) and against every deterministic
    # per-value mechanism on 7 records (4^6 of them) that is private for the class: the bound at the
    # nominal chain lies above the nominal utility of each (the class decided at its deciding corners)
    box = ChainClass.box(alpha, beta)
    n, p = 7, 2
    res = design(box, n, eps=1.0, p=p)
    nom = box.nominal
    assert res.chain == nom
    q = np.asarray(res.redact_prob)
    assert res.utility == pytest.approx(float(((1.0 - q) @ nom.stationary).sum()) / n, rel=1e-12)
    assert res.certificate.upper_bound >= res.utility
    best = 0.0
    for code in range(4 ** (n - 1)):
        digits = [(code // 4 ** k) % 4 for k in range(n - 1)]
        rows = [[d & 1, d >> 1] for d in digits]
        qd = np.array(rows[:p] + [[1, 1]] + rows[p:], dtype=float)
        if all(leakage(c, qd, p).leakage <= 1.0 - 1e-9 for c in box.deciding()):
            best = max(best, float(((1.0 - qd) @ nom.stationary).sum()) / n)
    assert best <= res.certificate.upper_bound
