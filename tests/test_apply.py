"""Applying mechanisms: exact Bernoulli draws, randomness, streaming, the CLI and its safety rules."""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2

from conftest import counts_outside, dense_redact_prob
from redactopt.release.bits import SecureBits, SeededBits, bernoulli_exact, exact_thresholds
from redactopt.interface.options import parse_positions
from redactopt.release.report import NOT_FOR_RELEASE
from redactopt.judge.audit import audit
from redactopt.model.chain import MarkovChain
from redactopt.io import mechanism_from_dict
from redactopt.judge.leakage import leakage, sample_chains


# --------------------------------------------------------------------------
# exact Bernoulli draws
# --------------------------------------------------------------------------
class Rigged:
    """A bit source returning fixed words and fixed tie bits (a function of the width asked)."""

    secure = False
    description = "rigged"

    def __init__(self, word: int, tie=lambda nbits: 0) -> None:
        self.word, self.tie, self.tie_calls = word, tie, []

    def words(self, key, positions):
        return np.full(len(positions), self.word, dtype=np.uint64)

    def tie_bits(self, key, position, nbits):
        self.tie_calls.append(nbits)
        return self.tie(nbits)


def test_thresholds_are_exact(rng):
    qs = np.concatenate([
        [0.0, 1.0, 0.5, 0.3, 1 - 2**-53, 2.0**-53, 2.0**-54, 2.0**-60, 5e-324, 2.2250738585072014e-308],
        rng.random(300),
        10.0 ** rng.uniform(-320, 0, 300),
    ])
    Q, k, T = exact_thresholds(qs)
    for q, a, b, c in zip(qs.tolist(), Q.tolist(), k.tolist(), T.tolist()):
        assert Fraction(q) * 2**53 == Fraction(a) + Fraction(c, 2**b)
        assert 0 <= c < 2**b or (b == 0 and c == 0)


def test_q_zero_never_and_q_one_always_whatever_the_bits():
    for word in (0, 1 << 11, (1 << 64) - 1):
        src = Rigged(word, tie=lambda nbits: 0)
        assert not bernoulli_exact(np.zeros(50), src).any()
        assert bernoulli_exact(np.ones(50), src).all()
        assert src.tie_calls == []


def test_tiny_q_goes_through_the_tie_path():
    # q = 2^-60: V < q iff the first 53 bits are all 0 (U = 0) and the next 7 bits are 0 too.
    q = np.array([2.0**-60])
    src = Rigged(0, tie=lambda nbits: (1 << (nbits - 7)) - 1)  # next 7 bits zero, the rest ones
    assert bernoulli_exact(q, src).tolist() == [True]
    assert len(src.tie_calls) == 1
    src = Rigged(0, tie=lambda nbits: 1 << (nbits - 7))  # the 7th further bit is one: V >= q
    assert bernoulli_exact(q, src).tolist() == [False]
    src = Rigged(1 << 11, tie=lambda nbits: 0)  # U = 1 > 0: keep, no further bits
    assert bernoulli_exact(q, src).tolist() == [False]
    assert src.tie_calls == []


def test_comparison_at_the_threshold_of_an_ordinary_q():
    q = 0.3
    exact = Fraction(q) * 2**53  # Q + 1/2: the 54th bit decides a tie
    Q = int(exact)
    assert exact - Q == Fraction(1, 2)
    assert bernoulli_exact([q], Rigged((Q - 1) << 11)).tolist() == [True]
    assert bernoulli_exact([q], Rigged((Q + 1) << 11)).tolist() == [False]
    assert bernoulli_exact([q], Rigged(Q << 11, tie=lambda nb: 0)).tolist() == [True]
    assert bernoulli_exact([q], Rigged(Q << 11, tie=lambda nb: 1)).tolist() == [False]


class RiggedSecure(SecureBits):
    """The secure source's byte-first path with prepared bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = bytearray(data)

    def random_bytes(self, m: int) -> bytes:
        out, self.data = bytes(self.data[:m]), self.data[m:]
        assert len(out) == m
        return out


def test_secure_byte_first_path_is_exact():
    # q = 0.3: 256 q = 76.8 (as doubles: 76.79999999999999715...), so the first byte decides
    # unless it is 76; then the fraction 0.79999999999999715... is drawn with a 53-bit word.
    q = np.array([0.3])
    assert bernoulli_exact(q, RiggedSecure(bytes([75]))).tolist() == [True]
    assert bernoulli_exact(q, RiggedSecure(bytes([77]))).tolist() == [False]
    frac = Fraction(0.3) * 256 - 76
    Q = int(frac * 2**53)  # an integer: 76.8 as a double has 46 fraction bits
    below = ((Q - 1) << 11).to_bytes(8, "little")
    above = ((Q + 1) << 11).to_bytes(8, "little")
    assert bernoulli_exact(q, RiggedSecure(bytes([76]) + below)).tolist() == [True]
    assert bernoulli_exact(q, RiggedSecure(bytes([76]) + above)).tolist() == [False]
    # q = 2^-60: byte 0 ties (floor(256 q) = 0), then 2^-52 needs U < 2 among 53 bits
    tiny = np.array([2.0**-60])
    assert bernoulli_exact(tiny, RiggedSecure(bytes([0]) + (1 << 11).to_bytes(8, "little"))).tolist() == [True]
    assert bernoulli_exact(tiny, RiggedSecure(bytes([0]) + (2 << 11).to_bytes(8, "little"))).tolist() == [False]
    assert bernoulli_exact(tiny, RiggedSecure(bytes([1]))).tolist() == [False]


@pytest.mark.parametrize("source", ["seeded", "secure"])
def test_empirical_frequencies_chi_square(source):
    qs = np.array([1e-3, 0.1, 0.3, 0.5, 0.77, 0.999])
    m = 200_000
    src = SeededBits(12345) if source == "seeded" else SecureBits()
    stat = 0.0
    for i, q in enumerate(qs):
        draws = bernoulli_exact(np.full(m, q), src, key=i)
        hits = int(draws.sum())
        stat += (hits - m * q) ** 2 / (m * q * (1 - q))
    # sum of squared binomial z-scores ~ chi-square with 6 degrees of freedom
    assert chi2.sf(stat, len(qs)) > 1e-6


def test_seeded_words_are_indexed_by_position():
    src = SeededBits(7)
    full = src.words(99, np.arange(20))
    assert np.array_equal(src.words(99, np.array([5, 6, 7])), full[5:8])
    assert np.array_equal(src.words(99, np.array([17, 3])), full[[17, 3]])
    far = src.words(99, np.array([3, 10_000_000]))
    assert far[0] == full[3]
    assert not np.array_equal(src.words(98, np.arange(20)), full)
    assert np.array_equal(SeededBits(7).words(99, np.arange(20)), full)


def test_parse_positions():
    assert parse_positions("5,7-9,5") == [4, 6, 7, 8]
    for bad in ("", "a", "3-1", "0", "2-x"):
        with pytest.raises(ValueError, match="--private"):
            parse_positions(bad)
    with pytest.raises(ValueError, match="outside"):
        parse_positions("11", n=10)


# --------------------------------------------------------------------------
# apply end to end
# --------------------------------------------------------------------------
def _make_csv(path, n=2500, seed=4, chain=MarkovChain(0.1, 0.3)):
    rng = np.random.default_rng(seed)
    x = sample_chains(chain, n, 1, rng)[0]
    df = pd.DataFrame({
        "time": [f"2024-01-01 {i // 60:02d}:{i % 60:02d}" for i in range(n)],
        "temp": np.round(20 + rng.standard_normal(n), 3).astype(str),
        "occ": x,
        "note": np.where(rng.random(n) < 0.1, 'say "hi", twice', ""),
    })
    df.to_csv(path, index=False)
    return df


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_apply_csv_end_to_end(tmp_path, run, capsys):
    src = tmp_path / "in.csv"
    _make_csv(src)
    before = _sha(src)
    out, rep = tmp_path / "out.csv", tmp_path / "rep.json"
    code = run(["apply", str(src), "--column", "occ", "--private", "1000-1010,1500", "--eps", "1",
                "--seed", "3", "--out", str(out), "--report", str(rep)])
    assert code == 0, capsys.readouterr().err
    assert _sha(src) == before
    a = pd.read_csv(src, dtype=str, keep_default_na=False)
    b = pd.read_csv(out, dtype=str, keep_default_na=False)
    # by default only the protected column is written: one row per input row (⊥ written as "")
    assert b.shape == (a.shape[0], 1) and list(b.columns) == ["occ"]
    red = (b["occ"] == "").to_numpy()
    assert np.array_equal(b["occ"][~red], a["occ"][~red])
    private0 = list(range(999, 1010)) + [1499]
    assert red[private0].all()
    r = json.loads(rep.read_text())
    assert r["seed"] == 3 and r["label"] == NOT_FOR_RELEASE
    assert r["randomness"]["secure"] is False
    assert r["utility"]["redacted"] == int(red.sum())
    assert r["utility"]["realised"] == pytest.approx(1 - red.mean())
    assert r["chain"]["source"] == "fitted"
    assert r["chain"]["fit"]["alpha_ci"][0] < r["chain"]["alpha"] < r["chain"]["fit"]["alpha_ci"][1]
    mech = mechanism_from_dict(r["mechanism"])
    assert mech.n == 2500
    assert [p + 1 for p in mech.private] == [p + 1 for p in private0]
    q = dense_redact_prob(r["mechanism"])
    assert np.array_equal(np.asarray(mech.redact_prob), q)
    assert not red[~q.any(axis=1)].any()  # never redacted where q = 0
    rep_audit = audit(mech.chain, q, private=mech.private, eps=mech.eps)
    assert rep_audit["passed"]
    per = {d["private"]: d["leakage"] for d in r["leakage"]["per_private"]}
    assert set(per) == {p + 1 for p in private0}
    for p in private0:
        assert per[p + 1] == pytest.approx(leakage(mech.chain, q, p).leakage, abs=1e-12)
        assert per[p + 1] <= 1.0
    assert r["mechanism"]["leakage"] <= 1.0
    assert r["columns"]["written"] == ["occ"] and r["columns"]["dropped"] == ["time", "temp", "note"]
    # --keep-all: every other column passes through, with the same draws
    out2 = tmp_path / "all.csv"
    assert run(["apply", str(src), "--column", "occ", "--private", "1000-1010,1500", "--eps", "1",
                "--seed", "3", "--out", str(out2), "--keep-all"]) == 0, capsys.readouterr().err
    c = pd.read_csv(out2, dtype=str, keep_default_na=False)
    assert list(c.columns) == list(a.columns) and a.drop(columns="occ").equals(c.drop(columns="occ"))
    assert np.array_equal((c["occ"] == "").to_numpy(), red)


def test_apply_refuses_overwrite_and_force(tmp_path, run, capsys):
    src = tmp_path / "in.csv"
    _make_csv(src, n=400)
    out = tmp_path / "out.csv"
    out.write_text("precious\n")
    args = ["apply", str(src), "--column", "occ", "--private", "100", "--eps", "1", "--out", str(out)]
    assert run(args) == 2
    assert "exists" in capsys.readouterr().err
    assert out.read_text() == "precious\n"
    assert run(args + ["--force"]) == 0
    assert pd.read_csv(out).shape[0] == 400
    assert run(["apply", str(src), "--column", "occ", "--private", "100", "--eps", "1", "--out", str(src),
                "--force"]) == 2
    assert "input" in capsys.readouterr().err


def test_apply_malformed_row_leaves_no_output(tmp_path, run, capsys):
    src = tmp_path / "in.csv"
    df = _make_csv(src, n=600)
    df.loc[450, "occ"] = 7
    df.to_csv(src, index=False)
    out = tmp_path / "out.csv"
    before = sorted(p.name for p in tmp_path.iterdir())
    code = run(["apply", str(src), "--column", "occ", "--private", "100", "--eps", "1", "--out", str(out),
                "--chunk-rows", "100"])
    assert code == 2
    err = capsys.readouterr().err
    assert "row 451, column 'occ': value '7' is not 0 or 1" in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no output, no temporary file


def test_apply_usage_errors(tmp_path, run, capsys):
    src = tmp_path / "in.csv"
    _make_csv(src, n=300)
    out = tmp_path / "o.csv"
    base = ["apply", str(src), "--column", "occ", "--eps", "1", "--out", str(out)]
    assert run(base + ["--private", "301"]) == 2
    assert "outside" in capsys.readouterr().err
    assert run(base + ["--private", "3", "--by", "note"]) == 2
    assert "--private-column" in capsys.readouterr().err
    assert run(base + ["--private", "3", "--alpha", "0.1"]) == 2
    assert "--beta" in capsys.readouterr().err
    assert run(base + ["--private-column", "occ", "--private", "3"]) == 2
    capsys.readouterr()
    assert run(base + ["--private", "3", "--eps", "-1"]) == 2
    assert "eps" in capsys.readouterr().err
    assert not out.exists()


def test_apply_privacy_check_failure_exits_1(tmp_path, run, capsys):
    # The paper's 3R leaks 0.6545 > 0.5 at alpha=0.01, beta=0.8, n=10, p=1 (README, "Notes on the paper").
    src = tmp_path / "in.csv"
    pd.DataFrame({"v": [0, 0, 1, 0, 0, 0, 1, 1, 0, 0]}).to_csv(src, index=False)
    out = tmp_path / "o.csv"
    code = run(["apply", str(src), "--column", "v", "--private", "1", "--eps", "0.5", "--alpha", "0.01",
                "--beta", "0.8", "--method", "3r", "--out", str(out)])
    assert code == 1
    assert "privacy check failed" in capsys.readouterr().err
    assert not out.exists()


def test_apply_is_independent_of_chunking_and_uses_exact_q(tmp_path, run, capsys):
    src = tmp_path / "in.csv"
    _make_csv(src, n=3000, seed=8)
    outs = []
    for chunk in ("97", "100000"):
        out, rep = tmp_path / f"o{chunk}.csv", tmp_path / f"r{chunk}.json"
        assert run(["apply", str(src), "--column", "occ", "--private", "1500,1502", "--eps", "1", "--seed", "21",
                    "--out", str(out), "--report", str(rep), "--chunk-rows", chunk]) == 0
        outs.append((out.read_bytes(), json.loads(rep.read_text())))
    assert outs[0][0] == outs[1][0]
    q = dense_redact_prob(outs[0][1]["mechanism"])
    assert ((q > 0) & (q < 1)).any()  # some draws really were random


def test_apply_secure_source_by_default(tmp_path, run, capsys):
    src = tmp_path / "in.csv"
    _make_csv(src, n=300)
    rep = tmp_path / "r.json"
    assert run(["apply", str(src), "--column", "occ", "--private", "150", "--eps", "2", "--alpha", "0.1",
                "--beta", "0.3", "--out", str(tmp_path / "o.csv"), "--report", str(rep)]) == 0
    r = json.loads(rep.read_text())
    assert r["seed"] is None and "label" not in r
    assert r["randomness"]["secure"] is True and "urandom" in r["randomness"]["source"]
    assert r["chain"] == {"alpha": 0.1, "beta": 0.3, "source": "given", "fit_rows": {"source": "given"}}


def test_apply_parquet_with_sequences(tmp_path, run, capsys):
    rng = np.random.default_rng(11)
    chain = MarkovChain(0.1, 0.3)
    labels = np.repeat([f"s{i}" for i in range(4)], 500)
    rng.shuffle(labels)  # sequences interleaved, each in its own order
    df = pd.DataFrame({"sid": labels, "x": np.zeros(2000, dtype=np.int64), "priv": np.zeros(2000, dtype=np.int64),
                       "val": rng.random(2000)})
    for i in range(4):
        rows = np.flatnonzero(labels == f"s{i}")
        df.loc[rows, "x"] = sample_chains(chain, 500, 1, rng)[0].astype(np.int64)
        if i != 1:
            df.loc[rows[[100, 300]], "priv"] = 1
    src = tmp_path / "in.parquet"
    df.to_parquet(src)
    out, rep = tmp_path / "out.parquet", tmp_path / "rep.json"
    assert run(["apply", str(src), "--column", "x", "--private-column", "priv", "--by", "sid", "--eps", "1",
                "--seed", "5", "--out", str(out), "--report", str(rep), "--chunk-rows", "333", "--method", "dim"]) == 0
    b = pd.read_parquet(out)
    import pyarrow as pa
    import pyarrow.parquet as pq

    assert pq.read_schema(out).field("x").type == pa.int64()  # the type is kept; ⊥ is null
    assert list(b.columns) == ["sid", "x"]  # the private flag and 'val' are not written
    assert b["sid"].equals(df["sid"])
    red = b["x"].isna().to_numpy()
    assert np.array_equal(b["x"][~red].astype(np.int64).to_numpy(), df["x"][~red].to_numpy())
    assert red[df["priv"].to_numpy() == 1].all()
    assert not red[(df["sid"] == "s1").to_numpy()].any()  # no private record: released as is
    r = json.loads(rep.read_text())
    assert r["chain"]["fit"]["sequences"] == 4
    # the chain is fitted on the rows farther than the reported radius from every private record
    # (sequence s1 has none: all of it), counted here by hand
    where = r["chain"]["fit_rows"]
    order = np.argsort(df["sid"].to_numpy(), kind="stable")
    C, rows = counts_outside(df["x"].to_numpy()[order], df["priv"].to_numpy()[order], where["radius"],
                             df["sid"].to_numpy()[order])
    assert r["chain"]["fit"]["counts"] == {"00": C[0, 0], "01": C[0, 1], "10": C[1, 0], "11": C[1, 1]}
    assert where["rows"] == rows and rows >= 500 and where["transitions"] == C.sum()
    # every row the fit read is published with certainty
    for s in r["sequences"]:
        for a, z in s["blocks"]:
            assert all(min(abs(t - p) for p in s["private"]) <= where["radius"] for t in range(a, z + 1))
    seqs = {s["id"]: s for s in r["sequences"]}
    assert seqs["s1"]["mechanism"] is None
    for sid in ("s0", "s2", "s3"):
        s = seqs[sid]
        assert s["private"] == [101, 301]
        rows = np.flatnonzero((df["sid"] == sid).to_numpy())
        assert s["redacted"] == int(red[rows].sum())
        assert all(d["leakage"] <= 1.0 for d in s["leakage"])
        m = mechanism_from_dict(s["mechanism"])
        assert audit(m.chain, m.redact_prob, private=m.private, eps=1.0)["passed"]
        for p in m.private:
            assert leakage(m.chain, dense_redact_prob(s["mechanism"]), p).leakage <= 1.0


def test_parquet_read_row_group_by_row_group(tmp_path):
    """Many small row groups and chunks that straddle them: same release as one row group; errors name the row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from redactopt.release.apply import apply_table

    rng = np.random.default_rng(31)
    x = sample_chains(MarkovChain(0.05, 0.1), 1000, 1, rng)[0].astype(np.int64)
    table = pa.table({"t": np.arange(1000), "occ": x})
    one, many = tmp_path / "one.parquet", tmp_path / "many.parquet"
    pq.write_table(table, one)
    pq.write_table(table, many, row_group_size=137)
    assert pq.ParquetFile(many).metadata.num_row_groups == 8
    from redactopt.release.tables import TableReader

    # chunks gather batches across row groups: 8 groups of 137 rows, chunks of 300
    sizes = [len(c) for c in TableReader(many, chunk_rows=300).chunks()]
    assert sizes == [300, 300, 300, 100]
    firsts = [c.first_row for c in TableReader(many, chunk_rows=300).chunks(["occ"])]
    assert firsts == [1, 301, 601, 901]
    got_all = np.concatenate([c.column("occ").to_numpy() for c in TableReader(many, chunk_rows=300).chunks()])
    assert np.array_equal(got_all, x)
    outs = []
    for src, chunk in ((one, 1000), (many, 50)):
        dst = tmp_path / f"out_{src.stem}.parquet"
        rep = apply_table(src, dst, column="occ", eps=1.0, private=[499, 500], alpha=0.05, beta=0.1, seed=4,
                          chunk_rows=chunk)
        outs.append((pq.read_table(dst), rep["utility"]["redacted"]))
    assert outs[0][0].equals(outs[1][0]) and outs[0][1] == outs[1][1]
    got = outs[1][0].column("occ").to_numpy(zero_copy_only=False)
    keep = ~np.isnan(got)
    assert np.array_equal(got[keep], x[keep]) and np.isnan(got[[499, 500]]).all()
    bad = x.copy()
    bad[700] = 2  # row 701, in the sixth row group
    pq.write_table(pa.table({"t": np.arange(1000), "occ": bad}), tmp_path / "bad.parquet", row_group_size=137)
    with pytest.raises(ValueError, match="row 701"):
        apply_table(tmp_path / "bad.parquet", tmp_path / "o.parquet", column="occ", eps=1.0, private=[10],
                    alpha=0.05, beta=0.1, chunk_rows=50)
    assert not (tmp_path / "o.parquet").exists()
