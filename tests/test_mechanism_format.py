"""The sparse mechanism file format (redactopt.mechanism/2), audits and attacks on segments.

References: mechanism tables read by hand from the JSON (``conftest.dense_redact_prob``),
the dense evaluator and brute force on the whole sequence, and the attack sampling every
record (``restrict=False``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import dense_redact_prob
from redactopt.engine.joint import design_joint_sparse
from redactopt.interface.cli import main
from redactopt.io import FORMAT, FORMAT_DENSE, design_to_dict, mechanism_from_dict, mechanism_to_dict, read_mechanism
from redactopt.judge.attack import attack
from redactopt.judge.audit import WitnessRuns, as_sparse, audit, exact_audit
from redactopt.judge.certify import SparseRows
from redactopt.judge.exact import certify_exact
from redactopt.judge.leakage import leakage, leakage_bruteforce, utility
from redactopt.model.chain import MarkovChain


def _mechanism(rng, n, blocks):
    """A dense table with random blocks ``(start, length, private offsets)``; returns it and the private records."""
    q = np.zeros((n, 2))
    priv = []
    for s, m, offs in blocks:
        rows = rng.random((m, 2))
        rows[rng.random((m, 2)) < 0.2] = 0.0
        rows[~rows.any(axis=1), 1] = 0.3  # every row can be redacted: the blocks are exactly these
        for o in offs:
            rows[o] = 1.0
            priv.append(s + o)
        q[s : s + m] = np.minimum(rows, 1.0)
    return q, priv


def _run(capsys, *argv):
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_v2_lists_the_blocks_and_reads_back_without_densifying(rng, tmp_path):
    chain = MarkovChain(0.05, 0.2)
    n = 10**8
    res = design_joint_sparse(chain, n, eps=1.0, private=[10, 5 * 10**7, n - 3], method="dim")
    d = design_to_dict(res)
    assert d["format"] == FORMAT == "redactopt.mechanism/3" and d["states"] == ["0", "1"] and "redact_prob" not in d
    assert len(json.dumps(d)) < 100_000
    assert [b["start"] - 1 for b in d["blocks"]] == list(res.redact_prob.starts)
    for b, blk in zip(d["blocks"], res.redact_prob.blocks):
        assert b["redact_prob"] == blk.tolist()
    f = tmp_path / "m.json"
    f.write_text(json.dumps(d))
    mf = read_mechanism(f)
    assert isinstance(mf.redact_prob, SparseRows) and mf.n == n and mf.private == res.private
    assert mf.redact_prob.starts == res.redact_prob.starts
    # the audit holds only the blocks (a dense table would need 1.6 GB)
    rep = audit(mf.chain, mf.redact_prob, private=mf.private, eps=mf.eps)
    assert rep["passed"] and rep["leakage"] == pytest.approx(res.leakage, rel=1e-12)
    assert isinstance(rep["witness"], WitnessRuns) and len(rep["witness"]) == n


def test_v1_and_v2_files_give_identical_audits(rng, tmp_path, capsys):
    chain = MarkovChain(0.15, 0.35)
    n = 400
    q, priv = _mechanism(rng, n, [(0, 6, [0, 2]), (40, 9, [4]), (200, 12, [3, 8]), (392, 8, [7])])
    f1, f2 = tmp_path / "v1.json", tmp_path / "v2.json"
    for f, fmt in ((f1, FORMAT_DENSE), (f2, FORMAT)):
        f.write_text(json.dumps(mechanism_to_dict(chain, q, private=priv, eps=3.0, method="hand",
                                                  utility=utility(chain, q), leakage=0.0, format=fmt)))
    v2 = json.loads(f2.read_text())
    assert [b["start"] for b in v2["blocks"]] == [1, 41, 201, 393]  # 1-based first rows
    assert np.array_equal(dense_redact_prob(v2), q) and np.array_equal(dense_redact_prob(json.loads(f1.read_text())), q)
    reports = []
    for f in (f1, f2):
        code, out, err = _run(capsys, "audit", str(f), "--format", "json", "--exact")
        assert err == ""
        reports.append((code, json.loads(out)))
    (c1, r1), (c2, r2) = reports
    assert c1 == c2 and r1 == r2
    # the numbers themselves, from the dense evaluator on the whole sequence
    per = {p + 1: leakage(chain, q, p) for p in priv}
    assert {d["private"]: d["leakage"] for d in r1["per_private"]} == {p: r.leakage for p, r in per.items()}
    worst = max(per.values(), key=lambda r: r.leakage)
    assert r1["witness"] == worst.witness_output() and r1["witness_private"] == worst.p + 1
    assert r1["utility"] == pytest.approx(utility(chain, q), abs=1e-15)
    assert r1["passed"] == (worst.leakage <= 3.0) and r1["exact"]["status"] in ("certified", "violated")


def test_sparse_audit_matches_brute_force_on_the_whole_sequence(rng):
    for _ in range(40):
        chain = MarkovChain(*rng.uniform(0.05, 0.95, 2))
        n = 11
        q, priv = _mechanism(rng, n, [(int(rng.integers(0, 2)), 3, [1]), (7, 3, [int(rng.integers(0, 3))])])
        rep = audit(chain, as_sparse(q), private=priv, eps=2.0)
        bf = max((leakage_bruteforce(chain, q, p) for p in priv), key=lambda r: r.leakage)
        assert rep["leakage"] == pytest.approx(bf.leakage, rel=1e-9, abs=1e-12)
        # the witness is an output of the whole sequence attaining the leakage
        from redactopt.judge.leakage import output_log_ratio

        assert abs(output_log_ratio(chain, q, rep["witness_private"] - 1, list(rep["witness"]))) == \
            pytest.approx(bf.leakage, rel=1e-9, abs=1e-12)


def test_exact_audit_of_a_long_sequence_works_on_its_segments(rng):
    chain = MarkovChain(0.2, 0.3)
    n = 5000
    q, priv = _mechanism(rng, n, [(100, 5, [2]), (3000, 6, [1, 4])])
    L = max(leakage(chain, q, p).leakage for p in priv)
    assert exact_audit(chain, q, private=priv, eps=L * 1.001).status == "certified"
    assert exact_audit(chain, q, private=priv, eps=L * 0.999).status == "violated"
    # the segment of the worst record, cut by hand: the same exact ratio
    cert = exact_audit(chain, q, private=priv, eps=1.0)
    hand = max(certify_exact(0.2, 0.3, q[99:106].tolist(), [3], 1.0).ratio,
               certify_exact(0.2, 0.3, q[2999:3007].tolist(), [2, 5], 1.0).ratio)
    assert cert.ratio == hand
    big = q.copy()
    big[2000:2100] = 0.5
    big[2050] = 1.0
    with pytest.raises(ValueError, match="segments of 64 records; private record 2051 lies in one of 102"):
        exact_audit(chain, big, private=priv + [2050], eps=1.0)


BAD_V2 = {
    "touching": [{"start": 1, "redact_prob": [[1, 1], [0.5, 0.5]]}, {"start": 3, "redact_prob": [[0.5, 0]]}],
    "overlapping": [{"start": 1, "redact_prob": [[1, 1], [0.5, 0.5]]}, {"start": 2, "redact_prob": [[0.5, 0]]}],
    "unsorted": [{"start": 5, "redact_prob": [[0.5, 0]]}, {"start": 1, "redact_prob": [[1, 1]]}],
    "past_n": [{"start": 1, "redact_prob": [[1, 1]]}, {"start": 9, "redact_prob": [[0.5, 0], [0.5, 0.5]]}],
    "outside": [{"start": 3, "redact_prob": [[1, 1]]}],
    "not_redacted": [{"start": 1, "redact_prob": [[1, 0.5]]}],
    "bad_prob": [{"start": 1, "redact_prob": [[1, 1], [2, 0]]}],
    "not_objects": [[1, [[1, 1]]]],
    "start_zero": [{"start": 0, "redact_prob": [[1, 1]]}],
}


@pytest.mark.parametrize("name", sorted(BAD_V2))
def test_bad_v2_files_exit_2_one_line(tmp_path, capsys, name):
    d = {"format": FORMAT, "chain": {"alpha": 0.1, "beta": 0.2}, "n": 9, "private": [1], "eps": 1,
         "blocks": BAD_V2[name]}
    f = tmp_path / "m.json"
    f.write_text(json.dumps(d))
    code, out, err = _run(capsys, "audit", str(f))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    with pytest.raises(ValueError):
        mechanism_from_dict(d)


def test_unknown_format_names_every_known_one():
    d = {"format": "redactopt.mechanism/4", "chain": {"alpha": 0.1, "beta": 0.2}, "n": 1, "private": [1],
         "eps": 1, "blocks": []}
    with pytest.raises(ValueError, match="'redactopt.mechanism/3', 'redactopt.mechanism/2', "
                                         "'redactopt.kmechanism/1', 'redactopt.mechanism/1'"):
        mechanism_from_dict(d)


def test_every_earlier_format_reads_as_the_same_mechanism():
    """One mechanism written as /3, /2 and /1 by hand: the three parse to the same rows, chain and claims."""
    blocks = [{"start": 2, "redact_prob": [[0.5, 0.25], [1, 1], [0, 0.75]]}]
    dense = [[0, 0], [0.5, 0.25], [1, 1], [0, 0.75], [0, 0]]
    common = {"chain": {"alpha": 0.1, "beta": 0.2}, "n": 5, "private": [3], "eps": 1.5, "method": "m",
              "utility": 0.4, "leakage": 1.25}
    v3 = dict(common, format="redactopt.mechanism/3", states=["0", "1"], blocks=blocks)
    v2 = dict(common, format="redactopt.mechanism/2", blocks=blocks)
    v1 = dict(common, format="redactopt.mechanism/1", redact_prob=dense)
    got = [mechanism_from_dict(v) for v in (v3, v2, v1)]
    for m in got:
        assert np.array_equal(np.asarray(m.redact_prob), np.array(dense, dtype=float))
        assert m.chain == MarkovChain(0.1, 0.2) and m.private == (2,) and m.eps == 1.5
        assert (m.method, m.utility, m.leakage) == ("m", 0.4, 1.25)
    with pytest.raises(ValueError, match="'states' must list the chain's labels"):
        mechanism_from_dict(dict(v3, states=["1", "0"]))
    with pytest.raises(ValueError, match="must be \\[1, 1\\]"):
        mechanism_from_dict(dict(v3, blocks=[{"start": 2, "redact_prob": [[0.5, 0.25], [1, 0.5], [0, 0.75]]}]))


def test_old_readers_refuse_v2_by_its_format_field():
    """A /1 reader checks ``format`` first (redactopt 0.1: "field 'format' must be 'redactopt.mechanism/1'");
    a /2 object also has no ``redact_prob``, so a reader that skipped the check fails on a missing field."""
    d = design_to_dict(design_joint_sparse(MarkovChain(0.1, 0.3), 50, eps=1.0, private=[25], method="dim"))
    assert d["format"] != FORMAT_DENSE and "redact_prob" not in d
    v1 = design_to_dict(design_joint_sparse(MarkovChain(0.1, 0.3), 50, eps=1.0, private=[25], method="dim"),
                        format=FORMAT_DENSE)
    assert v1["format"] == FORMAT_DENSE and np.array_equal(np.array(v1["redact_prob"]), dense_redact_prob(d))


# --------------------------------------------------------------------------
# attacks on segments
# --------------------------------------------------------------------------
def test_restricted_attack_equals_the_attack_on_every_record(rng):
    for seed in range(6):
        chain = MarkovChain(*rng.uniform(0.1, 0.9, 2))
        n = int(rng.integers(12, 40))
        s = int(rng.integers(2, n - 8))
        q, priv = _mechanism(rng, n, [(s, 5, [2])])
        q[0] = [0.3, 0.6]  # another block beyond the cut: sampled only by the whole-sequence attack
        p = priv[0]
        whole = attack(chain, q, p=p, samples=20_000, rng=np.random.default_rng(seed), restrict=False)
        seg = attack(chain, q, p=p, samples=20_000, rng=np.random.default_rng(seed))
        sparse = attack(chain, as_sparse(q), p=p, samples=20_000, rng=np.random.default_rng(seed))
        assert seg == sparse
        assert seg.lower_bound == pytest.approx(whole.lower_bound, abs=1e-9)
        assert seg.max_observed == pytest.approx(whole.max_observed, abs=1e-9)
        assert (seg.event_prob_favoured, seg.event_prob_other) == (whole.event_prob_favoured, whole.event_prob_other)
        assert seg.lower_bound <= leakage(chain, q, p).leakage + 1e-12


def test_attack_on_a_long_sparse_mechanism_samples_only_the_block():
    chain = MarkovChain(0.003, 0.012)
    n = 10**8
    res = design_joint_sparse(chain, n, eps=1.0, private=[n // 2], method="dim")
    a = attack(chain, res.redact_prob, p=n // 2, samples=2000, rng=np.random.default_rng(1))
    assert a.max_observed <= res.leakage + 1e-9


def test_a_markov_chain_given_as_a_matrix_is_written_as_the_markov_chain():
    """``Chain([[1 - A, A], [B, 1 - B]], labels=(0, 1))`` (Fractions) is MarkovChain(a, b): the same file
    object in every format (alpha/beta, the old formats too); the k-state writer writes both as a matrix."""
    from fractions import Fraction

    from redactopt.kio import kmechanism_to_dict
    from redactopt.model.chain import Chain

    A, B = Fraction(0.1), Fraction(0.3)
    binary = MarkovChain(0.1, 0.3)
    matrix = Chain([[1 - A, A], [B, 1 - B]], labels=(0, 1))
    q = np.zeros((5, 2))
    q[1], q[2] = 0.5, 1.0
    for fmt in (FORMAT, FORMAT_DENSE):
        want = mechanism_to_dict(binary, q, private=[2], eps=1.0, method="m", utility=None, leakage=None, format=fmt)
        got = mechanism_to_dict(matrix, q, private=[2], eps=1.0, method="m", utility=None, leakage=None, format=fmt)
        assert json.dumps(got) == json.dumps(want) and want["chain"] == {"alpha": 0.1, "beta": 0.3}
        assert mechanism_from_dict(json.loads(json.dumps(got))).chain == matrix
    k_binary = kmechanism_to_dict(binary, q, private=[2], eps=1.0, method="m")
    assert json.dumps(kmechanism_to_dict(matrix, q, private=[2], eps=1.0, method="m")) == json.dumps(k_binary)
    assert set(k_binary["chain"]) == {"labels", "transition"}
