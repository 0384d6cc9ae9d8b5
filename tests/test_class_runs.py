"""Scans of a run of private records (issue 34, item 4; docs/mathematics.md §7d).

Every number a test asserts is derived independently of the code under test: the leakage about each record
of the run by enumerating every record tuple and every stopping distance of both sides in rationals
(``tests/exact_refs.py``: :func:`enum_ratio`, :func:`enum_utility`, with the run's scan law written here),
the local leakage by the brute-force evaluator over all outputs, and a lower bound on the run-scan optimum
by enumerating a discretised family of scans (every relevant stop probability in {0, 1/2, 1}) with the same
enumeration.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from exact_refs import ZERO, enum_ratio, enum_utility, leq_exp, stationary, tuple_prob

from redactopt.classes_io import audit_dict, mechanism_from_dict
from redactopt.engine.classes_design import compare_classes, design_class
from redactopt.judge.leakage import leakage_bruteforce
from redactopt.judge.scan import verify_mechanism
from redactopt.model.chain import MarkovChain
from redactopt.model.mechanism_classes import RunScanMechanism, as_kchain, local_as_run_scan


# ---------------------------------------------------------------------------
# the run's scan law, from the definition (independent of the library)
# ---------------------------------------------------------------------------
def run_scan_law(left, right, n: int, first: int, last: int):
    """A run scan from its stop tables S[d-1][c][x] (d from the run, c the side's first record): each side stops
    once, independently, and publishes from there on; the run is redacted."""
    def side_law(x: tuple, S, pos: list[int]) -> list:
        if S is None:
            return [((), Fraction(1))]
        c = x[pos[0]]
        alive, out = Fraction(1), []
        for d, t in enumerate(pos):
            s = Fraction(float(S[d][c][x[t]])) if d < len(S) else Fraction(1)
            out.append((tuple(pos[d:]), alive * s))
            alive *= 1 - s
        out.append(((), alive))
        return out

    lpos, rpos = list(range(first - 1, -1, -1)), list(range(last + 1, n))

    def law(x: tuple) -> dict:
        out: dict = {}
        for (pl, wl), (pr, wr) in itertools.product(side_law(x, left, lpos), side_law(x, right, rpos)):
            shown = set(pl) | set(pr)
            o = tuple(x[t] if t in shown else None for t in range(n))
            out[o] = out.get(o, ZERO) + wl * wr
        return out

    return law


def exact_P(chain: MarkovChain) -> list[list[Fraction]]:
    a, b = Fraction(chain.alpha), Fraction(chain.beta)
    return [[1 - a, a], [b, 1 - b]]


def enum_run(mech: RunScanMechanism) -> tuple[list[Fraction | None], Fraction]:
    """Every record's worst ratio (``None``: infinite) and the utility, by enumeration in rationals."""
    P = [[Fraction(v) for v in row] for row in mech.chain.exact_transition()]
    law = run_scan_law(mech.left, mech.right, mech.n, mech.first, mech.last)
    per = [enum_ratio(P, mech.n, j, law) for j in range(mech.first, mech.last + 1)]
    return per, enum_utility(P, mech.n, law)


def random_table(rng: np.random.Generator, m: int) -> np.ndarray | None:
    if m == 0:
        return None
    L = int(rng.integers(1, m + 1))
    S = rng.uniform(0, 1, (L, 2, 2))
    S[rng.uniform(size=S.shape) < 0.25] = 0.0
    S[rng.uniform(size=S.shape) < 0.1] = 1.0
    if L < m:
        S[-1] = 1.0
    return S


# ---------------------------------------------------------------------------
# the judge against enumeration
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(12))
def test_judge_matches_enumeration_about_every_record(seed):
    rng = np.random.default_rng(seed)
    a, b = (float(v) for v in rng.uniform(0.05, 0.95, 2))  # lazy and oscillating chains alike
    n = int(rng.integers(4, 8))
    r = int(rng.integers(2, 4))
    first = int(rng.integers(0, n - r + 1))
    last = first + r - 1
    mech = RunScanMechanism(as_kchain(MarkovChain(a, b)), n, first, last, random_table(rng, first),
                            random_table(rng, n - 1 - last))
    per, util = enum_run(mech)
    status, res = verify_mechanism(mech, 50.0)
    assert res.per_record is not None and len(res.per_record) == r
    for got, want in zip(res.per_record, per):
        assert want is not None
        assert got == pytest.approx(math.log(want), abs=1e-12)
    worst = max(per)
    assert res.leakage == pytest.approx(math.log(worst), abs=1e-12)
    assert per[res.record - first] == worst
    assert mech.utility() == pytest.approx(float(util), abs=1e-14)
    # the verdict at budgets just above and below the exact worst ratio (decided in rationals where needed)
    above, below = math.log(worst) * (1 + 1e-9) + 1e-12, math.log(worst) * (1 - 1e-9) - 1e-12
    if below > 0:
        assert leq_exp(worst, above) and not leq_exp(worst, below)
        assert verify_mechanism(mech, above)[0] == "certified"
        assert verify_mechanism(mech, below)[0] == "violated"


def test_judge_decides_a_budget_on_the_ratio_in_rationals():
    """A scan whose worst ratio is exactly e^eps for eps = log(ratio) rounded: the enclosure cannot decide, the
    rationals do, and agree with the enumeration's exact ratio."""
    chain = MarkovChain(0.25, 0.5)
    S = np.zeros((1, 2, 2))
    S[0, 0, 0] = 1.0  # the left neighbour published when it is 0
    mech = RunScanMechanism(as_kchain(chain), 3, 1, 2, S, None)
    per, _ = enum_run(mech)
    worst = max(per)
    eps = math.log(float(worst))
    status, res = verify_mechanism(mech, eps)
    assert status == ("certified" if leq_exp(worst, eps) else "violated")
    assert res.exact_ratio == worst


def test_local_completion_has_the_local_leakage_about_every_record():
    chain = MarkovChain(0.2, 0.3)
    n, first, last = 6, 2, 3
    rng = np.random.default_rng(3)
    q = rng.uniform(0.2, 1.0, (n, 2))
    q[first:last + 1] = 1.0
    comp = local_as_run_scan(chain, q, first, last)
    _, res = verify_mechanism(comp, 50.0)
    for j, got in zip(range(first, last + 1), res.per_record):
        assert got == pytest.approx(leakage_bruteforce(chain, q, j).leakage, abs=1e-12)
    # the completion publishes everything beyond its first release: at least the local design's count
    pi = chain.stationary
    local_u = float(((1 - q) @ pi).sum()) / n
    assert comp.utility() >= local_u - 1e-15


# ---------------------------------------------------------------------------
# designs: verified, bounded, at least local, at least a brute-force family
# ---------------------------------------------------------------------------
def _family_best(chain: MarkovChain, n: int, first: int, last: int, eps: float) -> float:
    """The most useful scan of a discretised family: each stop probability a side's rule reads (distance 1:
    only S[0][c][c]; farther: every S[d][c][x]) in {0, 1/2, 1}; a member counts if its leakage about every record
    of the run, by enumerating every record tuple and both sides' outputs (floats), is at most eps - 1e-9 (the
    float error is below 1e-14, so it is private)."""
    P = [[float(v) for v in row] for row in exact_P(chain)]
    pi = [float(v) for v in stationary(exact_P(chain))]
    tuples = list(itertools.product(range(2), repeat=n))
    prob = np.array([pi[x[0]] * math.prod(P[a][b] for a, b in zip(x, x[1:])) for x in tuples])

    def side_laws(m: int, pos: list[int]):
        """Per table of the family: the (tuples x side outputs) probabilities and each output's published count."""
        if m == 0:
            yield np.ones((len(tuples), 1)), np.zeros(1)
            return
        cells = [(0, c, c) for c in range(2)] + [(d, c, x) for d in range(1, m) for c in range(2) for x in range(2)]
        outs = {}
        for x in tuples:
            for d in range(m + 1):
                outs.setdefault(tuple(x[t] for t in pos[d:]) + (d,), len(outs))
        counts = np.array([m - k[-1] if k[-1] < m else 0 for k in outs])
        for vals in itertools.product((0.0, 0.5, 1.0), repeat=len(cells)):
            S = np.zeros((m, 2, 2))
            for (d, c, xv), v in zip(cells, vals):
                S[d, c, xv] = v
            W = np.zeros((len(tuples), len(outs)))
            for i, x in enumerate(tuples):
                c, alive = x[pos[0]], 1.0
                for d, t in enumerate(pos):
                    W[i, outs[tuple(x[u] for u in pos[d:]) + (d,)]] += alive * S[d, c, x[t]]
                    alive *= 1.0 - S[d, c, x[t]]
                W[i, outs[(m,)]] += alive
            yield W, counts

    lefts = list(side_laws(first, list(range(first - 1, -1, -1))))
    rights = list(side_laws(n - 1 - last, list(range(last + 1, n))))
    weights = [[prob * np.array([x[j] == v for x in tuples]) / pi[v] for v in range(2)] for j in range(first, last + 1)]
    best = 0.0
    for Wl, cl in lefts:
        for Wr, cr in rights:
            ok = True
            for w0, w1 in weights:
                g0, g1 = Wl.T @ (w0[:, None] * Wr), Wl.T @ (w1[:, None] * Wr)
                if np.any((g0 > 0) != (g1 > 0)):
                    ok = False
                    break
                pos_ = g1 > 0
                if np.any(np.abs(np.log(g0[pos_] / g1[pos_])) > eps - 1e-9):
                    ok = False
                    break
            if ok:
                u = float(prob @ (Wl @ cl) + prob @ (Wr @ cr)) / n
                best = max(best, u)
    return best


@pytest.mark.parametrize("alpha,beta,n,first,last,eps", [
    (0.2, 0.3, 5, 1, 2, 1.0),
    (0.2, 0.3, 6, 1, 3, 1.0),   # a run of three
    (0.1, 0.1, 5, 1, 2, 1.5),   # slowly mixing: local publishes nothing, the family 0.11
    (0.3, 0.1, 6, 1, 3, 2.0),
    (0.1, 0.1, 5, 2, 3, 0.5),
    (0.6, 0.7, 5, 1, 2, 1.0),   # oscillating: the run's determinant is negative for a run of two
])
def test_design_verified_bounded_and_above_local_and_family(alpha, beta, n, first, last, eps):
    chain = MarkovChain(alpha, beta)
    local, scan = compare_classes(chain, n, eps=eps, p=list(range(first, last + 1)), classes=("local", "scan"),
                                  time_limit=30.0)
    mech = scan.mechanism
    assert isinstance(mech, RunScanMechanism) and (mech.first, mech.last) == (first, last)
    per, util = enum_run(mech)
    assert all(leq_exp(r, eps) for r in per)          # private about every record, by enumeration
    assert scan.utility == pytest.approx(float(util), abs=1e-13)
    assert scan.utility <= scan.certificate.upper_bound
    assert local.utility <= scan.utility               # monotone: the local design's completion is a candidate
    assert local.run == scan.run == (first, last)
    best = _family_best(chain, n, first, last, eps)
    assert best <= scan.certificate.upper_bound + 1e-12   # the bound holds for the whole family
    assert scan.utility >= best - 1e-7                    # and the design is at least as good


def test_design_beats_local_where_local_publishes_little():
    """A slowly mixing chain: Lemma 2 forbids every local release near the run, a scan stops later and publishes."""
    chain = MarkovChain(0.05, 0.05)
    n, first, last = 8, 3, 4
    local, scan = compare_classes(chain, n, eps=0.5, p=[first, last], classes=("local", "scan"), time_limit=30.0)
    per, util = enum_run(scan.mechanism)
    assert all(leq_exp(r, 0.5) for r in per)
    assert scan.utility == pytest.approx(float(util), abs=1e-13)
    assert scan.utility > local.utility + 0.05
    assert scan.utility <= scan.certificate.upper_bound
    assert scan.certificate.gap < 1e-3


@pytest.mark.parametrize("first,last,n", [(0, 1, 5), (3, 4, 5), (0, 4, 5)])
def test_runs_at_the_ends(first, last, n):
    chain = MarkovChain(0.2, 0.3)
    d = design_class(chain, n, eps=1.0, p=list(range(first, last + 1)), cls="scan", time_limit=20.0)
    per, util = enum_run(d.mechanism)
    assert all(leq_exp(r, 1.0) for r in per)
    assert d.utility == pytest.approx(float(util), abs=1e-13)
    assert d.utility <= d.certificate.upper_bound
    if last - first + 1 == n:
        assert d.utility == 0.0 and d.certificate.upper_bound == 0.0


def test_bound_is_never_above_the_trivial_and_run_records_count_nothing():
    chain = MarkovChain(0.3, 0.4)
    n = 7
    d = design_class(chain, n, eps=3.0, p=[2, 3, 4], cls="scan", time_limit=20.0)
    assert d.certificate.upper_bound <= math.nextafter((n - 3) / n, math.inf)
    assert d.utility <= (n - 3) / n


def test_other_classes_refuse_a_run():
    chain = MarkovChain(0.2, 0.3)
    for cls in ("owner", "holder"):
        with pytest.raises(ValueError, match="run of private records"):
            design_class(chain, 6, eps=1.0, p=[2, 3], cls=cls, time_limit=5.0)
    with pytest.raises(ValueError, match="one run of adjacent"):
        design_class(chain, 6, eps=1.0, p=[1, 3], cls="scan", time_limit=5.0)


# ---------------------------------------------------------------------------
# files and the command line
# ---------------------------------------------------------------------------
def test_file_round_trip_and_audit(tmp_path):
    chain = MarkovChain(0.2, 0.3)
    d = design_class(chain, 6, eps=1.0, p=[2, 3], cls="scan", time_limit=20.0)
    obj = d.to_dict()
    assert obj["private"] == [3, 4] and obj["class"] == "scan"
    mech, claims = mechanism_from_dict(json.loads(json.dumps(obj)))
    assert isinstance(mech, RunScanMechanism) and (mech.first, mech.last) == (2, 3)
    rep = audit_dict(obj)
    assert rep["passed"] and rep["utility"] == pytest.approx(d.utility, abs=1e-15)
    bad = dict(obj, private=[3, 5])
    with pytest.raises(ValueError, match="one run of adjacent"):
        mechanism_from_dict(bad)
    with pytest.raises(ValueError, match="holder"):
        mechanism_from_dict(dict(obj, holder=True))


def test_cli_design_class_scan_with_a_run(tmp_path):
    out = tmp_path / "run.json"
    cmd = [sys.executable, "-m", "redactopt", "design", "--class", "scan", "--n", "8", "--private", "4-5",
           "--eps", "1", "--alpha", "0.2", "--beta", "0.3", "--time-limit", "20", "--out", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "private=4-5 (a run)" in p.stdout and "upper bound" in p.stdout
    obj = json.loads(out.read_text())
    mech, _ = mechanism_from_dict(obj)
    per, _ = enum_run(mech)
    assert all(leq_exp(r, 1.0) for r in per)
    bad = subprocess.run([sys.executable, "-m", "redactopt", "design", "--class", "owner", "--n", "8", "--private",
                          "4-5", "--eps", "1"], capture_output=True, text=True)
    assert bad.returncode == 2 and "run of adjacent records" in bad.stderr


def test_apply_class_scan_releases_a_run():
    """A release with the run's scan: the run redacted, each side redacted only next to the run (it stops once and
    publishes from there on), every published value the input's, and the report's mechanism private about every
    record of the run by enumeration."""
    pd = pytest.importorskip("pandas")
    from redactopt.release.class_apply import class_apply_frame
    from redactopt.release.class_audit import audit_report

    chain = as_kchain(MarkovChain(0.1, 0.1))
    values = [0, 0, 1, 1, 1, 0, 0, 0]
    table = pd.DataFrame({"occ": values})
    run = [3, 4]
    for seed in range(4):
        out, rep = class_apply_frame(table, cls="scan", eps=1.0, column="occ", binary=True, private=run,
                                     chain=chain, seed=seed, time_limit=20.0)
        shown = [None if pd.isna(v) or v == "" else int(v) for v in out["occ"]]
        assert all(shown[p] is None for p in run)
        for t, v in enumerate(shown):
            assert v is None or v == values[t]
        for side in (list(range(run[0] - 1, -1, -1)), list(range(run[-1] + 1, len(values)))):
            hidden = [shown[t] is None for t in side]
            assert hidden == sorted(hidden, reverse=True)  # a prefix of the side (next to the run) is redacted
    mech, _ = mechanism_from_dict(rep["designs"][0]["mechanisms"][0])
    assert isinstance(mech, RunScanMechanism) and (mech.first, mech.last) == (3, 4)
    per, _ = enum_run(mech)
    assert all(leq_exp(r, 1.0) for r in per)
    aud = audit_report(json.loads(json.dumps(rep)))
    assert aud["passed"] and not aud["problems"]


@pytest.mark.slow
def test_an_optimum_on_the_domain_edge_is_designed():
    """The run's optimum gives one side a budget of 0 (a 0-private rule, exact only in rationals): the sides are
    designed at the split moved into the domain, and the verified design meets the certified bound (a proof)
    within 1e-5, far above the local design, which Lemma 2 leaves at 0."""
    chain = MarkovChain(0.0025, 0.005)
    local, scan = compare_classes(chain, 24, eps=1.0, p=list(range(8, 16)), classes=("local", "scan"),
                                  time_limit=60.0)
    assert scan.verdict == "certified"
    assert scan.certificate.gap <= 1e-5
    assert scan.utility >= local.utility + 0.02
