"""One private record of a long sequence on its window, for chains of any number of states."""

from __future__ import annotations

import numpy as np
import pytest

from redactopt.engine.design import design
from redactopt.engine.window import covers, design_sparse, window_radius
from redactopt.judge.leakage import leakage, leakage_bruteforce
from redactopt.judge.lemma2 import lemma2_upper_bound
from redactopt.model.chain import Chain

K3 = Chain([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]])


def test_window_design_is_exact_for_the_whole_sequence():
    """The window design embedded in n = 2000 records: its leakage recomputed on all n rows equals the
    window's own, it is private, it publishes everything outside, and it is as good as the whole design."""
    n, p = 2000, 1000
    assert not covers(K3, n, 1.0, p) and window_radius(K3, 1.0) < n // 2
    res = design(K3, n, eps=1.0, p=p)
    lo, hi = res.info["window"]
    q = np.asarray(res.redact_prob)
    assert not q[:lo].any() and not q[hi + 1:].any() and hi - lo + 1 < n
    assert leakage(K3, q, p).leakage == pytest.approx(res.leakage, rel=1e-12) and res.leakage <= 1.0
    whole = design(K3, n, eps=1.0, p=p, whole=True)
    assert res.utility >= whole.utility - 1e-12
    assert res.certificate.upper_bound >= res.utility
    assert res.certificate.upper_bound <= lemma2_upper_bound(K3, n, eps=1.0, private=[p]) + 1e-15


def test_window_design_against_enumeration_on_a_short_cut():
    """The embedding is exact by the cut: on a 7-record copy of the design around p (rows beyond its
    block published), enumeration of all 4^6 outputs gives the design's leakage."""
    n, p = 500, 250
    res = design(K3, n, eps=0.8, p=p)
    q = np.asarray(res.redact_prob)
    live = np.flatnonzero(q.any(axis=1))
    a, b = max(0, live.min() - 1), min(n - 1, live.max() + 1)
    assert b - a + 1 <= 8
    brute = leakage_bruteforce(K3, q[a: b + 1], p - a).leakage
    assert brute == pytest.approx(res.leakage, rel=1e-9) and brute <= 0.8 + 1e-12


@pytest.mark.parametrize("n", [10**6, 10**8])
def test_long_kstate_sequences_never_build_n_rows(n):
    res = design_sparse(K3, n, eps=1.0, p=n // 2)
    lo, hi = res.info["window"]
    assert hi - lo + 1 <= 4 * window_radius(K3, 1.0) + 1
    assert res.leakage <= 1.0 and res.certificate.upper_bound >= res.utility
    # utility by its definition: 1 - (expected redacted records) / n, the blocks' rows weighted by pi
    rows = res.redact_prob
    mass = sum(float((np.asarray(b) @ K3.stationary).sum()) for b in rows.blocks)
    assert res.utility == pytest.approx(1.0 - mass / n, rel=1e-12)


def test_several_private_records_on_a_kstate_chain_by_enumeration():
    """Footnote 1 for k = 3: the elementwise maximum of the per-record designs, private about each record
    (checked by enumerating all 4^7 outputs), never below any record's own design."""
    from redactopt.engine.joint import design_joint_sparse

    n, priv, eps = 7, [1, 5], 1.0
    res = design_joint_sparse(K3, n, eps=eps, private=priv, method="optimal")
    q = np.asarray(res.redact_prob)
    for p in priv:
        assert leakage_bruteforce(K3, q, p).leakage <= eps + 1e-12
        own = np.asarray(design(K3, n, eps=eps, p=p).redact_prob)
        assert np.all(q >= own - 1e-15)
    assert res.certificate.upper_bound >= res.utility
    with pytest.raises(ValueError, match="has no form for 3-state chains"):
        design_joint_sparse(K3, n, eps=eps, private=priv, method="3r")


def test_cli_design_several_private_records_kstate(run, capsys):
    import json

    assert run(["design", "--transition", "0.6,0.3,0.1;0.2,0.5,0.3;0.3,0.3,0.4", "--n", "30", "--eps", "1",
                "--private", "5,20", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["private"] == [5, 20] and d["leakage"] <= 1.0
    q = np.zeros((30, 3))
    for b in d["blocks"]:
        q[b["start"] - 1: b["start"] - 1 + len(b["redact_prob"])] = b["redact_prob"]
    for p in (4, 19):
        assert leakage(K3, q, p).leakage <= 1.0 and np.all(q[p] == 1.0)


def test_cli_compare_transition(run, capsys):
    """compare --transition: on 3 states the optimum is never below the methods it could have chosen, its
    bound never below it, every leakage within eps; a 2x2 matrix compares exactly as its alpha/beta."""
    import json

    assert run(["compare", "--transition", "0.6,0.3,0.1;0.2,0.5,0.3;0.3,0.3,0.4", "--n", "10,60",
                "--eps", "0.5,1", "--private", "4", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 4
    for r in rows:
        assert r["optimal"] >= max(r["dim"], r["local"]) - 1e-12
        assert r["optimal_upper_bound"] >= r["optimal"]
        assert max(r["optimal_leakage"], r["dim_leakage"], r["local_leakage"]) <= r["eps"]
    outs = []
    for chain in (["--transition", "0.75,0.25;0.5,0.5"], ["--alpha", "0.25", "--beta", "0.5"]):
        assert run(["compare", *chain, "--n", "8", "--eps", "1", "--format", "json"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0] == outs[1]
    assert run(["compare", "--transition", "0.6,0.3,0.1;0.2,0.5,0.3;0.3,0.3,0.4", "--n", "5", "--eps", "1",
                "--plot", "x.png"]) == 2
    assert "--plot" in capsys.readouterr().err
