"""Exact composition of independent local redactions (issue 39, docs/mathematics.md §14).

The numbers are derived here, independently of the library: every output of two or three independent
local redactions of a short sequence is enumerated in exact fractions (a depth-first walk over the
records carrying the forward vectors Pr(y_1..t, X_t = ., X_p = c)), and compared with the library's
exact leakage of the product mechanism.  All probabilities are dyadic, so the doubles the library
reads, and their products, are exactly the fractions used here.
"""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction as F
from itertools import product as cartesian

import numpy as np
import pytest

from redactopt import MarkovChain
from redactopt.judge.compose import compose_audit, product_rows
from redactopt.judge.leakage import leakage
from redactopt.model.chain import Chain

DYADIC = [F(0), F(1), F(1, 2), F(1, 4), F(3, 4), F(1, 8), F(5, 8), F(7, 8)]


def stationary(P: list[list[F]]) -> list[F]:
    """The stationary law of a small irreducible matrix, by Gaussian elimination in fractions."""
    k = len(P)
    # (P^T - I) pi = 0 with the last equation replaced by sum(pi) = 1
    A = [[P[j][i] - (1 if i == j else 0) for j in range(k)] for i in range(k)]
    A[-1] = [F(1)] * k
    b = [F(0)] * (k - 1) + [F(1)]
    for c in range(k):
        r = next(r for r in range(c, k) if A[r][c] != 0)
        A[c], A[r], b[c], b[r] = A[r], A[c], b[r], b[c]
        for r in range(k):
            if r != c and A[r][c] != 0:
                f = A[r][c] / A[c][c]
                A[r] = [x - f * y for x, y in zip(A[r], A[c])]
                b[r] -= f * b[c]
    return [b[i] / A[i][i] for i in range(k)]


def enumerate_outputs(P: list[list[F]], symbols, p: int, n: int) -> dict:
    """Every output of positive probability: ``y -> [Pr(y, X_p = c) for c]`` (fractions).

    ``symbols(t)`` lists the pairs ``(symbol, e)`` of record ``t``, ``e[x] = Pr(symbol | X_t = x)``.
    """
    k = len(P)
    pi = stationary(P)
    out: dict = {}

    def walk(t: int, prefix: tuple, f: list[list[F]]) -> None:
        # f[c][x] = Pr(y_1..t, X_t = x, X_p = c)
        if t == n:
            lik = [sum(fc) for fc in f]
            if any(lik):
                out[prefix] = lik
            return
        for sym, e in symbols(t):
            if not any(e):
                continue
            if t == 0:
                g = [[pi[x] * e[x] for x in range(k)] for _ in range(k)]
            else:
                g = [[sum(fc[a] * P[a][x] for a in range(k)) * e[x] for x in range(k)] for fc in f]
            if t == p:
                g = [[g[c][x] if x == c else F(0) for x in range(k)] for c in range(k)]
            if any(any(row) for row in g):
                walk(t + 1, prefix + (sym,), g)

    walk(0, (), [])
    return out


def max_ratio(outs: dict, pi_p: list[F]) -> float:
    """Definition 1 from enumerated likelihoods: log of the largest Pr(y|c)/Pr(y|c') (inf if unbounded)."""
    best = F(1)
    for lik in outs.values():
        cond = [l / w for l, w in zip(lik, pi_p)]
        for a, b in cartesian(range(len(cond)), repeat=2):
            if a != b and cond[a] > 0:
                if cond[b] == 0:
                    return math.inf
                best = max(best, cond[a] / cond[b])
    return math.log(best)


def joint_symbols(tables: list[list[list[F]]], k: int):
    """The symbols of the tuple of releases: ``None`` (every release redacts) or ``(S, v)`` (the releases in S
    publish the value v, the others redact it)."""
    m = len(tables)

    def symbols(t: int):
        yield None, [math.prod((tb[t][x] for tb in tables), start=F(1)) for x in range(k)]
        for mask in range(1, 2 ** m):
            S = frozenset(i for i in range(m) if mask >> i & 1)
            for v in range(k):
                e = [F(0)] * k
                e[v] = math.prod(((1 - tables[i][t][v]) if i in S else tables[i][t][v] for i in range(m)), start=F(1))
                yield (S, v), e
    return symbols


def local_symbols(table: list[list[F]], k: int):
    def symbols(t: int):
        yield None, [table[t][x] for x in range(k)]
        for v in range(k):
            e = [F(0)] * k
            e[v] = 1 - table[t][v]
            yield v, e
    return symbols


def composed(y: tuple) -> tuple:
    """The composed output of a joint output: the value where any release published it, else ⊥."""
    return tuple(None if s is None else s[1] for s in y)


PARTIAL = [F(1, 2), F(3, 4), F(7, 8), F(5, 8), F(1, 4)]


def random_tables(rng: random.Random, m: int, n: int, k: int, p: int) -> list[list[list[F]]]:
    """``m`` random dyadic tables.  Within two records of ``p`` a row never publishes every value (a record
    that can show either value already gives away its whole influence, whatever the probabilities, so the
    composition would add nothing there): some values get a partial probability, the others 1.  Farther
    rows take any dyadic probabilities, 0 (published with certainty) included."""
    tables = []
    for _ in range(m):
        tb = []
        for t in range(n):
            if abs(t - p) <= 2:
                shown = set(rng.sample(range(k), rng.randrange(k)))
                tb.append([rng.choice(PARTIAL) if x in shown else F(1) for x in range(k)])
            else:
                tb.append([rng.choice(DYADIC) for _ in range(k)])
        tb[p] = [F(1)] * k
        tables.append(tb)
    return tables


CHAIN2 = [[F(3, 4), F(1, 4)], [F(3, 8), F(5, 8)]]
CHAIN3 = [[F(1, 2), F(1, 4), F(1, 4)], [F(1, 8), F(3, 4), F(1, 8)], [F(1, 4), F(1, 4), F(1, 2)]]


def lib_chain(P):
    if len(P) == 2:
        return MarkovChain(float(P[0][1]), float(P[1][0]))
    return Chain([[float(v) for v in row] for row in P], labels=tuple(range(len(P))))


CASES = [  # (chain, releases, n, p, seed, whether the composition leaks more than every release alone)
    (CHAIN2, 2, 5, 2, 4, True), (CHAIN2, 2, 6, 3, 5, True), (CHAIN2, 2, 6, 3, 6, True),
    (CHAIN2, 2, 6, 0, 22, False), (CHAIN2, 3, 4, 1, 9, True), (CHAIN2, 3, 5, 2, 20, True),
    (CHAIN3, 2, 4, 1, 5, True), (CHAIN3, 2, 5, 2, 20, True), (CHAIN3, 2, 4, 1, 7, False),
    (CHAIN3, 3, 3, 1, 10, True),
]


@pytest.mark.parametrize("P, m, n, p, seed, grows", CASES)
def test_composition_is_the_product_mechanism(P, m, n, p, seed, grows):
    k = len(P)
    rng = random.Random(seed)
    tables = random_tables(rng, m, n, k, p)
    pi = stationary(P)
    joint = enumerate_outputs(P, joint_symbols(tables, k), p, n)
    prod_table = [[math.prod((tb[t][x] for tb in tables), start=F(1)) for x in range(k)] for t in range(n)]
    comp = enumerate_outputs(P, local_symbols(prod_table, k), p, n)
    # the post-processing identity: every joint output's likelihood ratios are its composed output's
    for y, lik in joint.items():
        z = comp[composed(y)]
        for a, b in cartesian(range(k), repeat=2):
            assert (lik[a] == 0) == (z[a] == 0)
            if a != b and lik[b] != 0:
                assert lik[a] / lik[b] == z[a] / z[b]
    cumulative = max_ratio(joint, pi)
    assert cumulative == max_ratio(comp, pi)
    # the library's exact leakage of the product mechanism (the doubles are the dyadic fractions)
    chain = lib_chain(P)
    q = [np.array([[float(v) for v in row] for row in tb]) for tb in tables]
    prod = np.asarray(product_rows(q, k=k))
    assert np.array_equal(prod, np.array([[float(v) for v in row] for row in prod_table]))
    lib = leakage(chain, prod, p).leakage
    ca = compose_audit([(chain, t) for t in q], [p], eps=None)
    if math.isinf(cumulative):
        assert math.isinf(lib) and math.isinf(ca.cumulative[p])
        return
    assert lib == pytest.approx(cumulative, abs=1e-9)
    assert ca.cumulative[p] == pytest.approx(cumulative, abs=1e-9)
    assert ca.allowance[p] == 0.0  # dyadic products are exact
    alone = [max_ratio(enumerate_outputs(P, local_symbols(tb, k), p, n), pi) for tb in tables]
    for i, a in enumerate(alone):  # each release alone, by enumeration, and never above the composition
        assert ca.alone[i][p] == pytest.approx(a, abs=1e-9)
        assert a <= cumulative + 1e-12
    assert (cumulative > max(alone) + 1e-9) == grows


def test_the_verdict_is_proven_against_eps():
    h, q_ = 0.5, 0.25
    q1 = np.array([[0, 0], [h, q_], [1, 1], [q_, h], [0, 0]], dtype=float)
    q2 = np.array([[0, 0], [q_, h], [1, 1], [h, q_], [0, 0]], dtype=float)
    releases = [(lib_chain(CHAIN2), q1), (lib_chain(CHAIN2), q2)]
    L = compose_audit(releases, [2]).cumulative[2]
    assert math.isfinite(L) and L > 0
    assert compose_audit(releases, [2], eps=L * 1.001).passed is True
    assert compose_audit(releases, [2], eps=L * 0.999).passed is False


def test_blocks_outside_a_release_are_published_with_certainty():
    from redactopt.judge.certify import SparseRows

    n = 12
    a = SparseRows(n, (2, 8), (np.array([[0.5, 1.0], [1.0, 1.0], [0.25, 0.5]]), np.array([[1.0, 1.0], [0.5, 0.5]])))
    b = SparseRows(n, (3, 9), (np.array([[1.0, 1.0], [0.5, 1.0], [1.0, 1.0]]), np.array([[0.5, 0.0]])))
    want = np.asarray(a) * np.asarray(b)  # by hand: the elementwise product of the dense tables
    got = product_rows([a, b])
    assert np.array_equal(np.asarray(got), want)
    # blocks: rows 4-5 (1-based) and row 10, where both releases can redact
    assert got.starts == (3, 9) and [blk.shape[0] for blk in got.blocks] == [2, 1]


def test_the_rounding_of_the_product_is_allowed_for():
    q1 = np.array([[0.0, 0.0], [0.1, 0.3], [1.0, 1.0], [0.7, 0.2], [0.0, 0.0]])
    q2 = np.array([[0.0, 0.0], [0.3, 0.9], [1.0, 1.0], [0.9, 0.6], [0.0, 0.0]])
    ca = compose_audit([(MarkovChain(0.2, 0.3), q1), (MarkovChain(0.2, 0.3), q2)], [2])
    assert 0.0 < ca.allowance[2] < 1e-13  # 0.1*0.3 etc. are not doubles: a few ulps, no more


def test_chains_that_differ_are_each_judged():
    q = np.array([[0.0, 0.0], [0.5, 0.25], [1.0, 1.0], [0.25, 0.5], [0.0, 0.0]])
    c1, c2 = MarkovChain(0.25, 0.375), MarkovChain(0.125, 0.25)
    ca = compose_audit([(c1, q), (c2, q)], [2])
    prod = q * q
    want = [leakage(c, prod, 2).leakage for c in (c1, c2)]
    assert [u[2] for u in ca.under] == pytest.approx(want, abs=1e-12)
    assert ca.cumulative[2] == max(want)
    assert ca.alone[0][2] == pytest.approx(leakage(c1, q, 2).leakage, abs=1e-12)
    assert ca.alone[1][2] == pytest.approx(leakage(c2, q, 2).leakage, abs=1e-12)


def test_for_owner_mechanisms_the_sum_of_leakages_is_not_a_bound():
    """Why a scan/owner/holder release is refused: two redaction mechanisms of correlated records whose
    joint leakage exceeds the sum of theirs (docs/mathematics.md §14), by enumeration in fractions.

    Symmetric chain a = 2/5 (λ = 1/5), records 1..4, X_1 private.  M1 publishes X_4 iff X_2 = X_3 (an owner
    mechanism of the block 2..4: it reads X_2, X_3 but never publishes them); M2 publishes X_3.  Each alone
    leaks the influence at distance 2; together they tell X_2 (distance 1)."""
    a = F(2, 5)
    P = [[1 - a, a], [a, 1 - a]]

    def lik(f) -> dict:
        out: dict = {}
        for x in cartesian((0, 1), repeat=4):
            pr = P[x[0]][x[1]] * P[x[1]][x[2]] * P[x[2]][x[3]]
            out.setdefault(f(x), [F(0), F(0)])[x[0]] += pr
        return out

    m1 = lambda x: x[3] if x[1] == x[2] else None  # noqa: E731
    m2 = lambda x: x[2]  # noqa: E731
    leak = lambda f: max_ratio(lik(f), [F(1), F(1)])  # noqa: E731  (likelihoods given X_1 already)
    l1, l2, l12 = leak(m1), leak(m2), leak(lambda x: (m1(x), m2(x)))
    lam = 1 - 2 * a
    assert l1 == pytest.approx(math.log((1 + lam**2) / (1 - lam**2)))
    assert l2 == pytest.approx(math.log((1 + lam**2) / (1 - lam**2)))
    assert l12 == pytest.approx(math.log((1 + lam) / (1 - lam)))
    assert l12 > l1 + l2


# --- the command on real reports ---------------------------------------------------------------------------


def _run(capsys, *args: str) -> tuple[int, str, str]:
    """The command in this process (the package is imported once): exit status, standard output and error."""
    from redactopt.interface.cli import main

    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _dense(mech: dict) -> np.ndarray:
    """A report's mechanism object read by hand: its blocks placed in an (n, 2) table."""
    q = np.zeros((mech["n"], 2))
    for b in mech["blocks"]:
        rows = np.array(b["redact_prob"], dtype=float)
        q[b["start"] - 1:b["start"] - 1 + rows.shape[0]] = rows
    return q


@pytest.fixture()
def two_releases(tmp_path, capsys):
    """Two releases of the same generated table (two homes, one opt-out window each): two seeds, two eps."""
    from homes import make_homes

    df = make_homes(39, homes=2, days=1, optout_homes=(0, 1), window=3, shuffle=False)
    df[["home", "ts", "occupied", "optout"]].to_csv(tmp_path / "homes.csv", index=False)
    reports = []
    for seed, eps in ((1, 1.0), (2, 0.75)):
        rep = tmp_path / f"r{seed}.json"
        code, _, err = _run(capsys, "apply", str(tmp_path / "homes.csv"), "--column", "occupied", "--by", "home",
                            "--order-by", "ts", "--private-column", "optout", "--eps", str(eps), "--seed", str(seed),
                            "--alpha", "0.01", "--beta", "0.02", "--method", "dim", "--out",
                            str(tmp_path / f"r{seed}.csv"), "--report", str(rep), "--quiet")
        assert code == 0, err
        reports.append(rep)
    return tmp_path, reports


def test_audit_compose_on_two_real_reports(two_releases, capsys):
    d, (r1, r2) = two_releases
    code, stdout, err = _run(capsys, "audit", "--compose", str(r1), str(r2), "--format", "json")
    assert code == 0, err
    out = json.loads(stdout)
    chain = MarkovChain(0.01, 0.02)
    reps = [json.loads(r.read_text()) for r in (r1, r2)]
    by_seq = [{s["id"]: s for s in rep["sequences"]} for rep in reps]
    checked = 0
    grew = False
    for rec in out["records"]:
        qs = [_dense(b[rec["sequence"]]["mechanism"]) for b in by_seq]
        p = rec["private"] - 1
        want = leakage(chain, qs[0] * qs[1], p).leakage  # the product mechanism, computed here
        assert rec["cumulative"] == pytest.approx(want, rel=1e-12, abs=1e-12)
        alone = [leakage(chain, q, p).leakage for q in qs]
        assert rec["alone"] == pytest.approx(alone, rel=1e-12, abs=1e-12)
        assert rec["cumulative"] >= max(alone) - 1e-12
        grew |= rec["cumulative"] > max(alone) + 1e-6
        checked += 1
    assert checked == sum(len(s["private"]) for s in reps[0]["sequences"]) == 6
    assert grew  # the second release adds leakage: it is not hidden by the first
    worst = max(r["cumulative"] for r in out["records"])
    assert _run(capsys, "audit", "--compose", str(r1), str(r2), "--eps", str(worst * 1.01))[0] == 0
    code, stdout, _ = _run(capsys, "audit", "--compose", str(r1), str(r2), "--eps", str(worst * 0.99))
    assert code == 1 and "FAIL" in stdout


def test_audit_compose_refuses_what_it_cannot_compose(two_releases, capsys):
    d, (r1, r2) = two_releases

    def refused(*paths) -> str:
        code, _, err = _run(capsys, "audit", "--compose", *map(str, paths))
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        return err

    assert "same seed" in refused(r1, r1)
    rep = json.loads(r2.read_text())
    rep["rows"] += 1
    (d / "other.json").write_text(json.dumps(rep))
    assert "not the same rows" in refused(r1, d / "other.json")
    rep = json.loads(r2.read_text())
    seq = next(s for s in rep["sequences"] if s["private"])
    seq["mechanism"]["private"] = seq["private"] = seq["private"][:-1]  # the dropped record stays redacted: valid
    (d / "moved.json").write_text(json.dumps(rep))
    assert "private records" in refused(r1, d / "moved.json")
    (d / "class.json").write_text(json.dumps({"format": "redactopt.class-release/1"}))
    assert "scan/owner/holder" in refused(r1, d / "class.json")
