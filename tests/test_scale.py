"""Issue 24, scale: one private record in a long sequence is designed on its window (the cut argument).

The sparse path is checked against the dense one at moderate n: the same mechanisms where both are
defined by distances (the paper's, the exact DIM window), the same leakage re-evaluated on all n
records (and in rational arithmetic), certificates that bound each other; the text table's runs
against the dense table record by record.  No timings here: benchmarks/design_scale.py measures them.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from redactopt.engine.compare import alternatives, compare_point
from redactopt.engine.design import design
from redactopt.engine.window import covers, design_sparse, paper_sparse
from redactopt.interface.report import record_rows
from redactopt.judge.exact import certify_exact
from redactopt.judge.leakage import leakage, utility
from redactopt.model.chain import MarkovChain
from redactopt.model.influence import regions
from redactopt.paper.mechanisms import markov_quilt, theorem2_bound, three_region

CHAIN = MarkovChain(0.05, 0.2)


@pytest.mark.parametrize("p", [0, 170, 399])
@pytest.mark.parametrize("method", ["dim", "mq", "3r-calibrated", "optimal"])
def test_sparse_design_equals_the_dense_one(method, p):
    n, eps = 400, 0.7
    assert not covers(CHAIN, n, eps, p)  # the window is shorter than the sequence
    whole = design(CHAIN, n, eps=eps, p=p, method=method, whole=True, time_limit=20)
    sparse = design_sparse(CHAIN, n, eps=eps, p=p, method=method, time_limit=20)
    lo, hi = sparse.info.get("window", [0, n - 1])
    assert hi - lo + 1 < n
    q = np.asarray(sparse.redact_prob)
    # the leakage re-evaluated on all n records is the one verified on the block
    assert leakage(CHAIN, q, p).leakage == pytest.approx(sparse.leakage, rel=1e-9, abs=1e-12)
    assert sparse.passed and sparse.leakage <= eps * (1 + 1e-12) and sparse.utility == pytest.approx(utility(CHAIN, q), abs=1e-12)
    if method in ("dim", "mq"):  # defined by distances: the same mechanism
        np.testing.assert_array_equal(q, np.asarray(whole.redact_prob))
    else:  # both certified: each lies below the other's bound
        assert sparse.utility <= whole.certificate.upper_bound + 1e-12
        assert whole.utility <= sparse.certificate.upper_bound + 1e-12
    assert sparse.certificate.upper_bound >= sparse.utility


def test_long_design_is_exact_in_rational_arithmetic():
    chain, n, p = MarkovChain(0.01, 0.8), 64, 31
    s = design_sparse(chain, n, eps=1.0, p=p)
    assert s.info["window"][1] - s.info["window"][0] + 1 < n
    q = np.asarray(s.redact_prob)
    assert certify_exact(chain.alpha, chain.beta, q.tolist(), [p], 1.0).status == "certified"


@pytest.mark.parametrize("which,build", [
    ("3r", lambda ch, n, e, p: three_region(ch, n, eps=e, p=p)),
    ("3r-algorithm2", lambda ch, n, e, p: three_region(ch, n, eps=e, p=p, reading="algorithm2")),
    ("mq", lambda ch, n, e, p: markov_quilt(ch, n, eps=e, p=p)),
])
def test_the_papers_mechanisms_on_their_window_are_the_printed_ones(which, build):
    for chain in (MarkovChain(0.01, 0.8), MarkovChain(0.003, 0.012), MarkovChain(0.9, 0.6)):
        for n in (1, 2, 9, 300):
            for p in sorted({0, n // 2, n - 1}):
                for eps in (0.1, 1.0, 5.0):
                    dense = np.asarray(build(chain, n, eps, p).redact_prob)
                    np.testing.assert_array_equal(np.asarray(paper_sparse(chain, n, eps=eps, p=p, which=which)),
                                                  dense)


def test_compare_and_alternatives_at_moderate_n_equal_the_dense_computations():
    n, p, eps = 300, 150, 1.0
    row = compare_point(CHAIN, n, eps=eps, p=p, time_limit=20)
    tr, mq = three_region(CHAIN, n, eps=eps, p=p), markov_quilt(CHAIN, n, eps=eps, p=p)
    assert row["three_region"] == pytest.approx(tr.utility(), abs=1e-12)
    assert row["three_region_leakage"] == pytest.approx(tr.leakage().leakage, rel=1e-9)
    assert row["mq"] == pytest.approx(mq.utility(), abs=1e-12)
    assert row["mq_leakage"] == pytest.approx(mq.leakage().leakage, rel=1e-9, abs=1e-12)
    assert row["thm2_bound"] == theorem2_bound(CHAIN, n, eps=eps, p=p)
    dim = design(CHAIN, n, eps=eps, p=p, method="dim", whole=True)
    assert row["dim_optimal"] == pytest.approx(dim.utility, abs=1e-12)
    alts = {a["name"]: a for a in alternatives(CHAIN, n, eps=eps, p=p)}
    assert alts["MQ as printed (Algorithm 1)"]["utility"] == pytest.approx(mq.utility(), abs=1e-12)


@pytest.mark.parametrize("n,p", [(300, 150), (300, 0), (61, 30)])
def test_table_runs_are_the_dense_table(n, p):
    res = design_sparse(CHAIN, n, eps=1.0, p=p, method="dim")
    rows = list(record_rows(res))
    assert [r["position"] for r in rows] == list(range(1, n + 1))
    q = np.asarray(res.redact_prob)
    el, er = res.info.get("eps_left", None), res.info.get("eps_right", None)
    from redactopt.paper.mechanisms import default_split

    if el is None:
        el, er = default_split(n, p, 1.0)
    labels = regions(CHAIN, n, p, el, er).labels
    for t, r in enumerate(rows):
        assert (r["distance"], r["region"], r["pr_bottom_x0"], r["pr_bottom_x1"]) == (
            abs(t - p), str(labels[t]), float(q[t, 0]), float(q[t, 1]))


def test_cli_design_of_a_long_sequence_is_sparse(run, capsys, tmp_path):
    n = 10 ** 7
    out = tmp_path / "d.json"
    assert run(["design", "--n", str(n), "--eps", "1", "--private", str(n // 2), "--format", "json",
                "--out", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["n"] == n and len(d["blocks"]) == 1 and len(d["blocks"][0]["redact_prob"]) < 100
    capsys.readouterr()
    assert run(["design", "--n", str(n), "--eps", "1", "--private", str(n // 2), "--no-compare"]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = lines[3: lines.index("", 3)]
    assert table[0].split() == ["1-4999996", "4-4999999", "S", "0", "0"] and len(table) < 20
    assert table[-1].split()[0] == f"{n // 2 + 4}-{n}"
