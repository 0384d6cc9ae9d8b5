"""One design for every chain: the solver table (engine/registry.py) and the two ways to give a binary chain."""

from __future__ import annotations

import numpy as np
import pytest

from redactopt.engine.design import design
from redactopt.errors import PrivacyCheckError
from redactopt.engine.registry import SOLVERS, portfolio, solver_for
from redactopt.judge.leakage import leakage_bruteforce
from redactopt.model.chain import Chain, MarkovChain
from redactopt.solvers.base import Problem

K3 = Chain([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]])


def _methods(problem: Problem) -> list[str]:
    return [s.method for s, _ in portfolio(problem)]


def test_portfolio_follows_the_chain():
    b = MarkovChain(0.1, 0.2)
    assert _methods(Problem(b, 10, 1.0, 0)) == ["frontier", "dim", "3r-calibrated", "global"]
    assert _methods(Problem(b, 100, 1.0, 50)) == ["frontier", "dim", "3r-calibrated"]
    assert _methods(Problem(b, 100, 1.0, 50, certify_time=3.0)) == ["frontier", "dim", "3r-calibrated", "global"]
    assert _methods(Problem(K3, 100, 1.0, 50)) == ["dim", "local"]
    assert _methods(Problem(K3, 4, 1.0, 3)) == ["dim", "multistart", "global"]
    # beyond the k-state SCIP model's range (10 nats) it is left out and the local search runs alone
    assert _methods(Problem(K3, 4, 11.0, 3)) == ["dim", "local"]


def test_first_accepting_solver_serves_a_method():
    b, k = Problem(MarkovChain(0.1, 0.2), 10, 1.0, 3), Problem(K3, 10, 1.0, 3)
    assert solver_for("dim", b).module.endswith(".dim") and solver_for("dim", k).module.endswith(".dim")
    assert solver_for("global", b).module.endswith("scip_global") and solver_for("global", k).module.endswith("kscip")
    for m in ("frontier", "sgp", "dim-milp", "3r-calibrated"):
        with pytest.raises(ValueError, match="two-state chain.*3 states"):
            solver_for(m, k)
    with pytest.raises(ValueError, match="beyond the global model's range"):
        solver_for("global", Problem(K3, 10, 11.0, 3))
    with pytest.raises(ValueError, match="method must be one of"):
        solver_for("nope", b)
    assert all(s.accepts(k) for s in SOLVERS if not s.two_state and s.max_eps > 1.0)


@pytest.mark.parametrize("method", ["optimal", "frontier", "dim", "3r-calibrated", "3r", "mq", "local"])
@pytest.mark.parametrize("n,p,a,b,eps", [(6, 2, 0.1, 0.3, 1.0), (10, 0, 0.01, 0.8, 0.5), (9, 8, 0.4, 0.05, 2.0)])
def test_binary_as_a_matrix_gives_identical_numbers(method, n, p, a, b, eps):
    """The same chain given as MarkovChain(alpha, beta) and as its 2x2 matrix: the same design, to the bit."""
    m = MarkovChain(a, b)
    c = Chain([[1 - a, a], [b, 1 - b]])
    assert c.binary

    def run(chain):
        try:
            return design(chain, n, eps=eps, p=p, method=method)
        except PrivacyCheckError as exc:  # the paper's 3R / MQ as printed may leak more than eps
            return str(exc)

    rm, rc = run(m), run(c)
    if isinstance(rm, str) or isinstance(rc, str):
        assert rm == rc and method in ("3r", "mq")
        return
    assert np.array_equal(rm.redact_prob, rc.redact_prob)
    assert rm.utility == rc.utility and rm.leakage == rc.leakage
    assert rm.certificate.upper_bound == rc.certificate.upper_bound


def test_kstate_design_checked_by_enumeration():
    """A 3-state design through the one design(): its leakage recomputed over all 4^5 outputs."""
    res = design(K3, 5, eps=1.0, p=2)
    brute = leakage_bruteforce(K3, res.redact_prob, 2).leakage
    assert brute <= 1.0 + 1e-12 and brute == pytest.approx(res.leakage, rel=1e-9)
    assert res.certificate.upper_bound >= res.utility
    for m in ("3r", "mq"):
        with pytest.raises(ValueError, match="paper's mechanism for a binary chain"):
            design(K3, 5, eps=1.0, p=2, method=m)


def test_top_level_api_designs_writes_and_reads_every_chain(tmp_path):
    """The top level: one Chain, design, leakage and the file round trip, for 3 states and for binary."""
    import json

    import redactopt as r

    for chain, n, p in ((r.Chain(K3.to_dict()["transition"], labels=("a", "b", "c")), 5, 2),
                        (r.MarkovChain(0.1, 0.3), 6, 2)):
        res = r.design(chain, n, eps=1.0, p=p)
        f = tmp_path / "m.json"
        f.write_text(json.dumps(r.design_to_dict(res)))
        back = r.read_mechanism(f)
        assert back.chain == chain and back.private == (p,)
        assert np.array_equal(np.asarray(back.redact_prob), np.asarray(res.redact_prob))
        assert r.leakage(chain, np.asarray(back.redact_prob), p).leakage == pytest.approx(res.leakage, rel=1e-12)
    assert not [name for name in r.__all__ if name.startswith("k")]  # no k-prefixed public name
    assert {"Chain", "design", "leakage", "audit", "apply_table", "apply_frame", "read_mechanism"} <= set(r.__all__)


@pytest.mark.parametrize("a,b", [(0.1, 0.3), (0.01, 0.8), (0.45, 0.45)])
def test_binary_as_a_matrix_judges_identically(a, b):
    """Leakage (with its witness), utility and the attack of one mechanism on MarkovChain(a, b) and on its
    2x2 matrix: the same numbers, to the bit (the two-state kernels serve both)."""
    from redactopt.judge.attack import attack
    from redactopt.judge.leakage import leakage, utility

    m, c = MarkovChain(a, b), Chain([[1 - a, a], [b, 1 - b]])
    rng = np.random.default_rng(4)
    q = rng.random((9, 2)) * (rng.random((9, 2)) < 0.7)
    q[4] = 1.0
    lm, lc = leakage(m, q, 4), leakage(c, q, 4)
    assert lm.leakage == lc.leakage and np.array_equal(lm.witness, lc.witness) and lm.pair == lc.pair
    assert utility(m, q) == utility(c, q)
    am = attack(m, q, p=4, samples=2000, rng=np.random.default_rng(1))
    ac = attack(c, q, p=4, samples=2000, rng=np.random.default_rng(1))
    assert (am.lower_bound, am.max_observed, am.favoured) == (ac.lower_bound, ac.max_observed, ac.favoured)


def test_one_audit_for_every_chain():
    """redactopt.audit on a 3-state design: the exact leakage of the design, recomputed by enumeration."""
    import redactopt as r

    res = r.design(K3, 6, eps=1.0, p=2)
    rep = r.audit(K3, res.redact_prob, private=[2], eps=1.0)
    assert rep["passed"] and rep["leakage"] == pytest.approx(leakage_bruteforce(K3, res.redact_prob, 2).leakage,
                                                             rel=1e-9)
    assert rep["states"] == ["0", "1", "2"] and len(rep["pair"]) == 2
    bad = r.audit(K3, res.redact_prob, private=[2], eps=0.5)
    assert not bad["passed"]


def test_one_fit_binary_is_the_two_category_fit():
    """redactopt.fit: 0/1 data give the binary fit; the same data as two categories give the same
    maximum-likelihood chain (alpha = n01 / n0., beta = n10 / n1., counted by hand here)."""
    import redactopt as r

    x = [0, 0, 1, 1, 1, 0, 1, 0, 0, 0, 1, 1]
    pairs = list(zip(x[:-1], x[1:]))
    n0 = sum(1 for a, _ in pairs if a == 0)
    n1 = len(pairs) - n0
    alpha = sum(1 for a, b in pairs if (a, b) == (0, 1)) / n0
    beta = sum(1 for a, b in pairs if (a, b) == (1, 0)) / n1
    binary = r.fit(x)
    assert (binary.chain.alpha, binary.chain.beta) == pytest.approx((alpha, beta), abs=1e-15)
    two = r.fit(x, states=[0, 1], smoothing="none")
    assert two.chain.k == 2 and two.chain.transition[0, 1] == pytest.approx(alpha, abs=1e-15)
    assert two.chain.transition[1, 0] == pytest.approx(beta, abs=1e-15)
    cat = r.fit(["a", "b", "b", "c", "a", "a", "b", "c", "c", "a"], smoothing="none")
    assert cat.chain.k == 3 and cat.chain.labels == ("a", "b", "c")
    assert cat.chain.transition[0].tolist() == pytest.approx([1 / 3, 2 / 3, 0.0])  # a->a once, a->b twice
    assert r.fit([[0, 1, 1, 0], [1, 1, 0, 0]]).chain == r.fit_chain([[0, 1, 1, 0], [1, 1, 0, 0]]).chain
