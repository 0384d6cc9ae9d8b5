"""The categorical release of a file streams through the binary release's passes (issue 25).

One categorical column is scanned, tallied, drawn and written chunk by chunk
(:mod:`redactopt.release.states`, :mod:`redactopt.release.codec`).  Checked here against things
derived independently: every designed sequence's mechanism, read back from the report, is judged by
brute-force enumeration of all outputs (:func:`kleakage_bruteforce`); a CSV release is the input's
bytes with exactly the redacted fields emptied (compared line by line with Python's csv module);
the chunk size changes nothing; and the in-memory release of the same rows (pandas, a separate
reader and writer) gives the same report and the same values.
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pandas as pd
import pytest

from redactopt.judge.leakage import leakage_bruteforce
from redactopt.model.chain import Chain
from redactopt.release.apply import apply_table
from redactopt.release.kapply import kapply_frame, kapply_table

from test_kapply_by import CHAIN, LENGTHS, PRIVATE, _dense, _table  # noqa: E402  (the same sampled tables)


def _same_report(a: dict, b: dict) -> None:
    """Two reports equal but for the file names."""
    skip = {"input", "output"}
    assert {k: v for k, v in a.items() if k not in skip} == {k: v for k, v in b.items() if k not in skip}


@pytest.mark.parametrize("chunk_rows", [1, 4, 1000])
def test_each_sequence_private_by_brute_force_and_bytes_kept(tmp_path, rng, chunk_rows):
    df = _table(rng, LENGTHS, PRIVATE)
    src = tmp_path / "in.csv"
    df.to_csv(src, index=False)
    out = tmp_path / "out.csv"
    rep = apply_table(src, out, column="place", eps=1.0, private_column="hide", by="person", chain=CHAIN,
                      method="dim", seed=11, keep=["all", "hide"], chunk_rows=chunk_rows)
    seqs = {s["id"]: s for s in rep["sequences"]}
    worst = 0.0
    for pid, s in seqs.items():
        assert s["rows"] == LENGTHS[pid] and s["private"] == [p + 1 for p in PRIVATE[pid]]
        if s["design"] is None:
            continue
        q = _dense(rep["designs"][s["design"]])
        for p in PRIVATE[pid]:
            brute = leakage_bruteforce(CHAIN, q, p).leakage  # every output enumerated
            assert brute <= 1.0 + 1e-12
            worst = max(worst, brute)
    assert rep["leakage"]["max"] == pytest.approx(worst, rel=1e-9, abs=1e-12)
    # the file: the input's lines, with exactly the redacted fields emptied (read with the csv module)
    before = list(csv.reader(io.StringIO(src.read_text())))
    after = list(csv.reader(io.StringIO(out.read_text())))
    assert after[0] == before[0] and len(after) == len(before)
    col = before[0].index("place")
    red = np.zeros(len(df), dtype=bool)
    for i, (b, a) in enumerate(zip(before[1:], after[1:])):
        assert a[:col] + a[col + 1 :] == b[:col] + b[col + 1 :]
        assert a[col] in ("", b[col])
        red[i] = a[col] == ""
    for pid, s in seqs.items():
        rows = np.flatnonzero(df["person"].to_numpy() == pid)
        assert s["redacted"] == int(red[rows].sum())
        if s["design"] is None:
            assert not red[rows].any()
            continue
        q = _dense(rep["designs"][s["design"]])
        codes = np.array([CHAIN.labels.index(v) for v in df["place"].to_numpy()[rows]])
        assert not (red[rows] & (q[np.arange(rows.size), codes] == 0.0)).any()
        assert red[rows][PRIVATE[pid]].all()  # q = 1 at a private record here
    assert rep["utility"]["redacted"] == int(red.sum())
    assert rep["private"] == [int(i) + 1 for i in np.flatnonzero(df["hide"].to_numpy())]
    # the same rows released in memory (pandas): the same report, the same redactions
    mem, rep_mem = kapply_frame(df, column="place", eps=1.0, private_column="hide", by="person", chain=CHAIN,
                                method="dim", seed=11, keep=["all", "hide"])
    _same_report({k: v for k, v in rep.items() if k != "input_format"}, rep_mem)
    assert np.array_equal(mem["place"].isna().to_numpy(), red)


def test_chunk_size_and_format_change_nothing(tmp_path, rng):
    """The fitted release (zones, fit, designs, draws) of a CSV and of the same rows as Parquet, at three
    chunk sizes: one report, one set of redactions."""
    P = Chain([[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.1, 0.2, 0.7]], labels=("lo", "mid", "hi"))
    x = [0]
    for _ in range(2999):
        x.append(int(rng.choice(3, p=P.transition[x[-1]])))
    df = pd.DataFrame({"t": np.arange(3000), "v": np.array(P.labels)[x]})
    df.to_csv(tmp_path / "in.csv", index=False)
    df.to_parquet(tmp_path / "in.parquet")
    reports, masks = [], []
    for name in ("in.csv", "in.parquet"):
        for chunk in (7, 500, 100_000):
            out = tmp_path / f"o{chunk}.{name}"
            reports.append(apply_table(tmp_path / name, out, column="v", eps=1.0, private=[700, 2100], seed=4,
                                       categorical=True, chunk_rows=chunk, keep="all"))
            back = pd.read_csv(out, dtype=str, keep_default_na=False) if name.endswith("csv") else pd.read_parquet(out)
            masks.append((back["v"].isna() | (back["v"] == "")).to_numpy())
    assert reports[0]["chain"]["source"] == "fitted" and reports[0]["chain"]["fit_rows"]["source"] == "published rows"
    for r, m in zip(reports[1:], masks[1:]):
        _same_report({k: v for k, v in r.items() if k != "input_format"},
                     {k: v for k, v in reports[0].items() if k != "input_format"})
        assert np.array_equal(m, masks[0])
    assert masks[0][[700, 2100]].all()
    # and the in-memory release of the same file
    ref = kapply_table(tmp_path / "in.csv", tmp_path / "ref.csv", column="v", eps=1.0, private=[700, 2100], seed=4,
                       keep="all")
    _same_report(ref, reports[0])
    assert (tmp_path / "ref.csv").read_bytes() == (tmp_path / "o7.in.csv").read_bytes()


def test_a_value_outside_the_chain(tmp_path):
    """In a sequence with private records: an error naming its row, nothing written.  In a sequence without
    any: published as it is (the sequence is released unchanged)."""
    df = pd.DataFrame({"s": ["a"] * 6 + ["b"] * 4, "v": ["home", "work", "home", "mars", "home", "home",
                                                          "home", "mars", "work", "home"],
                       "p": [0, 1, 0, 0, 0, 0, 0, 0, 0, 0]})
    df.to_csv(tmp_path / "in.csv", index=False)
    out = tmp_path / "out.csv"
    with pytest.raises(ValueError, match=r"row 4, column 'v': value 'mars' is not a state of the chain"):
        apply_table(tmp_path / "in.csv", out, column="v", eps=1.0, private_column="p", by="s", chain=CHAIN, seed=1)
    assert not out.exists()
    df["p"] = [0] * 6 + [1, 0, 0, 0]
    df.loc[7, "v"] = "work"
    df.loc[3, "v"] = "mars"  # in sequence a, which has no private record now
    df.to_csv(tmp_path / "in.csv", index=False)
    rep = apply_table(tmp_path / "in.csv", out, column="v", eps=1.0, private_column="p", by="s", chain=CHAIN,
                      seed=1, keep="all")
    assert pd.read_csv(out, dtype=str, keep_default_na=False)["v"][3] == "mars"
    assert rep["sequences"][0]["design"] is None


def test_quoted_values_with_the_delimiter(tmp_path, rng):
    """Values holding the delimiter and quotes: the splice finds each field's state from its bytes as the
    scan read it."""
    labels = ('a,b', 'say "hi"', "plain")
    ch = Chain([[0.6, 0.2, 0.2], [0.3, 0.4, 0.3], [0.25, 0.25, 0.5]], labels=labels)
    x = [0]
    for _ in range(59):
        x.append(int(rng.choice(3, p=ch.transition[x[-1]])))
    df = pd.DataFrame({"t": range(60), "v": [labels[i] for i in x]})
    df.to_csv(tmp_path / "in.csv", index=False)
    rep = apply_table(tmp_path / "in.csv", tmp_path / "out.csv", column="v", eps=0.5, private=[30], chain=ch,
                      seed=2, keep="all")
    back = pd.read_csv(tmp_path / "out.csv", dtype=str, keep_default_na=False)
    red = back["v"] == ""
    assert red[30] and int(red.sum()) == rep["utility"]["redacted"]
    assert (back["v"][~red] == df["v"][~red]).all() and back["t"].equals(df["t"].astype(str))


def test_too_many_values_is_one_message(tmp_path):
    pd.DataFrame({"v": [f"x{i}" for i in range(100)]}).to_csv(tmp_path / "in.csv", index=False)
    with pytest.raises(ValueError, match=r"row 65, column 'v': more than 64 distinct values"):
        apply_table(tmp_path / "in.csv", tmp_path / "o.csv", column="v", eps=1.0, private=[3], categorical=True)


def test_cli_streams_with_chunk_rows_and_standard_output(run, tmp_path, capsys, rng):
    df = _table(rng, LENGTHS, PRIVATE)
    df.to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "P.json").write_text(json.dumps(CHAIN.to_dict()))
    base = ["apply", str(tmp_path / "in.csv"), "--column", "place", "--transition", str(tmp_path / "P.json"),
            "--private-column", "hide", "--by", "person", "--eps", "1", "--seed", "3", "--method", "dim", "--quiet"]
    assert run(base + ["--chunk-rows", "3", "--out", str(tmp_path / "a.csv"), "--keep-all"]) == 0
    capsys.readouterr()
    assert run(base[:-1] + ["--out", "-", "--keep-all"]) == 0
    streamed = capsys.readouterr()
    assert streamed.out.encode() == (tmp_path / "a.csv").read_bytes()
    assert "wrote" in streamed.err  # the summary goes to standard error then


def test_binary_release_to_another_delimiter_is_rewritten(tmp_path):
    """A regression: a CSV release to a .tsv copied the input's bytes, commas and all."""
    rng = np.random.default_rng(0)
    pd.DataFrame({"t": range(300), "x": (rng.random(300) < 0.3).astype(int)}).to_csv(tmp_path / "b.csv", index=False)
    apply_table(tmp_path / "b.csv", tmp_path / "b.tsv", column="x", eps=1.0, private=[100], alpha=0.2, beta=0.3,
                seed=1, keep="all")
    lines = (tmp_path / "b.tsv").read_text().splitlines()
    assert lines[0] == "t\tx" and all(line.count("\t") == 1 and "," not in line for line in lines)
