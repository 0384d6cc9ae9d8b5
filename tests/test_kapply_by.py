"""k-state releases of several sequences (``--by``) with private rows flagged by a column (issue 17).

Privacy is checked by brute force: every sequence's mechanism, read back from the report, is
judged by :func:`redactopt.judge.kleakage.kleakage_bruteforce` (all ``(k+1)^n`` outputs), which
shares no code with the designer or the segment evaluator.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from redactopt.judge.leakage import leakage_bruteforce
from redactopt.kio import kmechanisms_of
from redactopt.model.chain import Chain
from redactopt.release.kapply import kapply_frame

#: a chain with a zero entry (still irreducible and aperiodic)
CHAIN = Chain([[0.7, 0.3, 0.0], [0.2, 0.6, 0.2], [0.1, 0.3, 0.6]], labels=("home", "work", "shop"))


def _table(rng, lengths: dict[str, int], private: dict[str, list[int]]) -> pd.DataFrame:
    """Sequences sampled from CHAIN, rows interleaved at random (each sequence keeps its order)."""
    rows = []
    for pid, n in lengths.items():
        x = int(rng.choice(3, p=CHAIN.stationary))
        for t in range(n):
            rows.append({"person": pid, "t": t, "place": CHAIN.labels[x], "hide": int(t in private.get(pid, []))})
            x = int(rng.choice(3, p=CHAIN.transition[x]))
    # interleave the sequences at random; each keeps its time order (t is distinct within a person)
    df = pd.DataFrame(rows).sample(frac=1.0, random_state=int(rng.integers(1 << 30)))
    return df.sort_values("t", kind="stable").reset_index(drop=True)


def _dense(mech: dict) -> np.ndarray:
    q = np.zeros((mech["n"], len(mech["states"])))
    for b in mech["blocks"]:
        q[b["start"] - 1 : b["start"] - 1 + len(b["redact_prob"])] = b["redact_prob"]
    return q


LENGTHS = {"ann": 6, "bob": 6, "cy": 5, "dee": 7, "eve": 6}
PRIVATE = {"ann": [2], "bob": [2], "cy": [], "dee": [1, 5], "eve": [4]}


@pytest.mark.parametrize("method", ["dim", "auto"])
def test_each_sequence_private_by_brute_force(rng, method):
    df = _table(rng, LENGTHS, PRIVATE)
    out, rep = kapply_frame(df, column="place", eps=1.0, private_column="hide", by="person", chain=CHAIN,
                            method=method, seed=11, keep=["all", "hide"])
    seqs = {s["id"]: s for s in rep["sequences"]}
    assert set(seqs) == set(LENGTHS) and rep["by"] == "person"
    # ann and bob: same length, same private position -> one shared design; the others their own
    assert seqs["ann"]["design"] == seqs["bob"]["design"] is not None
    assert seqs["cy"]["design"] is None and seqs["cy"]["redacted"] == 0
    assert len({seqs[p]["design"] for p in ("ann", "dee", "eve")}) == 3 and len(rep["designs"]) == 3
    worst = 0.0
    for pid, s in seqs.items():
        assert s["rows"] == LENGTHS[pid] and s["private"] == [p + 1 for p in PRIVATE[pid]]
        if s["design"] is None:
            continue
        mech = rep["designs"][s["design"]]
        q = _dense(mech)
        assert mech["n"] == LENGTHS[pid] and mech["private"] == s["private"]
        for p in PRIVATE[pid]:
            assert np.all(q[p] == 1.0)
            brute = leakage_bruteforce(CHAIN, q, p).leakage
            assert brute <= 1.0 + 1e-12  # independent enumeration of every output
            worst = max(worst, brute)
    assert rep["leakage"]["max"] == pytest.approx(worst, rel=1e-9, abs=1e-12)
    # the released table: same rows and order, only the column changed, redactions only where q allows
    assert out.drop(columns="place").equals(df.drop(columns="place"))
    red = out["place"].isna().to_numpy()
    assert (out["place"][~red] == df["place"][~red]).all()
    for pid, s in seqs.items():
        rows = np.flatnonzero(df["person"].to_numpy() == pid)
        assert list(df["t"].to_numpy()[rows]) == list(range(LENGTHS[pid]))
        if s["design"] is None:
            assert not red[rows].any()  # no private record: released unchanged
            continue
        q = _dense(rep["designs"][s["design"]])
        codes = np.array([CHAIN.labels.index(v) for v in df["place"].to_numpy()[rows]])
        allowed = q[np.arange(len(rows)), codes] > 0.0
        assert not (red[rows] & ~allowed).any()  # a value published with certainty is never redacted
        assert red[rows][PRIVATE[pid]].all()
        assert s["redacted"] == int(red[rows].sum())
    assert rep["utility"]["redacted"] == int(red.sum())
    # expected utility: rows of undesigned sequences count 1, the others their design's utility
    u = sum(LENGTHS[p] * (1.0 if s["design"] is None else rep["designs"][s["design"]]["utility"])
            for p, s in seqs.items())
    assert rep["utility"]["expected"] == pytest.approx(u / sum(LENGTHS.values()), rel=1e-12)


def test_draws_are_keyed_by_sequence_not_by_row_order(rng):
    df = _table(rng, LENGTHS, PRIVATE)
    out, _ = kapply_frame(df, column="place", eps=1.0, private_column="hide", by="person", chain=CHAIN,
                          method="dim", seed=5, keep=["t"])
    shuffled = df.sample(frac=1.0, random_state=3).sort_values(["person", "t"], kind="stable")
    out2, _ = kapply_frame(shuffled, column="place", eps=1.0, private_column="hide", by="person", chain=CHAIN,
                           method="dim", seed=5, keep=["t"])
    a = out.set_index(["person", "t"])["place"].sort_index()
    b = out2.set_index(["person", "t"])["place"].sort_index()
    assert a.isna().equals(b.isna())  # each sequence draws the same bits wherever its rows sit
    out3, _ = kapply_frame(df, column="place", eps=1.0, private_column="hide", by="person", chain=CHAIN,
                           method="dim", seed=6)
    assert out3["place"].isna().sum() > 0


def test_fit_counts_transitions_within_sequences_only():
    # interleaved rows: in file order the column reads a b b a a b, but per person it is a-a-b / b-b-a
    df = pd.DataFrame({"who": ["x", "y", "y", "x", "x", "y"], "v": ["a", "b", "b", "a", "b", "a"],
                       "hide": [0, 0, 1, 0, 0, 0]})
    # fitted on the table itself given as a public one (six rows are too few to fit on published rows only)
    _, rep = kapply_frame(df, column="v", eps=3.0, private_column="hide", by="who", method="dim", seed=1, fit_on=df)
    counts = rep["chain"]["fit"]["counts"]
    # x: a->a, a->b ; y: b->b, b->a  (labels in order of first appearance: a, b)
    assert rep["states"] == ["a", "b"] and counts == [[1, 1], [1, 1]]
    seqs = {s["id"]: s for s in rep["sequences"]}
    assert seqs["y"]["private"] == [2] and seqs["x"]["design"] is None


def test_audit_reads_every_design_and_fails_a_tampered_one(run, tmp_path, capsys, rng):
    df = _table(rng, LENGTHS, PRIVATE)
    src = tmp_path / "places.csv"
    df.to_csv(src, index=False)
    rep_path = tmp_path / "rep.json"
    chain_file = tmp_path / "chain.json"
    chain_file.write_text(json.dumps(CHAIN.to_dict()))
    assert run(["apply", str(src), "--column", "place", "--transition", str(chain_file),
                "--by", "person", "--private-column", "hide", "--eps", "1", "--method", "dim", "--seed", "2",
                "--out", str(tmp_path / "out.csv"), "--report", str(rep_path)]) == 0
    out = capsys.readouterr().out
    assert "sequences : 5 (by 'person'), 4 with private records, 3 distinct design(s)" in out
    d = json.loads(rep_path.read_text())
    tags = [tag for tag, _ in kmechanisms_of(d, "rep")]
    assert sorted(map(sorted, tags)) == sorted([["ann", "bob"], ["dee"], ["eve"]])
    assert run(["audit", str(rep_path)]) == 0
    text = capsys.readouterr().out
    assert text.count("result    : PASS") == 3 and "overall   : PASS (3 of 3 designs pass)" in text
    assert run(["audit", str(rep_path), "--format", "json"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["passed"] and len(js["designs"]) == 3
    # publish everything next to dee's private records: that design must fail the audit
    j = next(s["design"] for s in d["sequences"] if s["id"] == "dee")
    mech = d["designs"][j]
    mech["blocks"] = [{"start": p, "redact_prob": [[1.0, 1.0, 1.0]]} for p in mech["private"]]
    rep_path.write_text(json.dumps(d))
    assert run(["audit", str(rep_path)]) == 1
    assert "overall   : FAIL (2 of 3 designs pass)" in capsys.readouterr().out


@pytest.mark.parametrize("kwargs, msg", [
    (dict(private=[1], by="person"), "single sequence"),
    (dict(private=[1], private_column="hide"), "exactly one"),
    (dict(private_column="nope", by="person"), "'nope' not found"),
    (dict(private_column="hide", by="nope"), "'nope' not found"),
    (dict(private_column="bad", by="person"), "row 2, column 'bad'"),
    (dict(private_column="none", by="person"), "marks no row private"),
])
def test_errors(kwargs, msg):
    df = pd.DataFrame({"person": ["a", "a", "b", "b"], "place": ["home", "work", "home", "shop"],
                       "hide": [0, 1, 0, 0], "bad": ["0", "2", "0", "0"], "none": [0, 0, 0, 0]})
    with pytest.raises(ValueError, match=msg):
        kapply_frame(df, column="place", eps=1.0, chain=CHAIN, method="dim", **kwargs)


def test_missing_sequence_id_is_an_error():
    df = pd.DataFrame({"person": ["a", None, "b"], "place": ["home", "work", "home"], "hide": [1, 0, 0]})
    with pytest.raises(ValueError, match="row 2: column 'person' has a missing value"):
        kapply_frame(df, column="place", eps=1.0, private_column="hide", by="person", chain=CHAIN, method="dim")


# --------------------------------------------------------------------------
# review findings: reports that contradict their mechanisms, file layouts, ids
# --------------------------------------------------------------------------
def _honest_report(tmp_path, rng) -> tuple[dict, object]:
    df = _table(rng, LENGTHS, PRIVATE)
    _, rep = kapply_frame(df, column="place", eps=1.0, private_column="hide", by="person", chain=CHAIN,
                          method="dim", seed=4)
    return json.loads(json.dumps(rep)), df


def _dee(d: dict) -> dict:
    return next(s for s in d["sequences"] if s["id"] == "dee")


@pytest.mark.parametrize("tamper, msg", [
    (lambda d: d["designs"][_dee(d)["design"]].update(private=[2]), "private records"),
    (lambda d: _dee(d).update(design=next(s["design"] for s in d["sequences"] if s["id"] == "ann")), "rows"),
    (lambda d: _dee(d).update(design=None), "no design"),
    (lambda d: d.update(eps=2.0), "eps"),
    (lambda d: d["designs"][0]["chain"].update(transition=[[1 / 3] * 3] * 3), "chain"),
    (lambda d: d["designs"][0].update(n=d["designs"][0]["n"] + 1), "rows"),
    # red-team: a sequence dropped, emptied of its private records, or listed twice
    (lambda d: d["sequences"].remove(_dee(d)), "the sequences hold 23 rows and 3 private records, the report "
                                               "says 30 rows and 5 private records"),
    (lambda d: _dee(d).update(private=[], design=None), "hold 30 rows and 3 private records"),
    (lambda d: d["sequences"].append(dict(_dee(d))), "'dee' appears more than once"),
])
def test_audit_refuses_reports_that_contradict_their_mechanisms(tmp_path, rng, tamper, msg):
    d, _ = _honest_report(tmp_path, rng)
    assert len(kmechanisms_of(d, "rep")) == 3  # the honest report reads
    tamper(d)
    with pytest.raises(ValueError, match=msg):
        kmechanisms_of(d, "rep")


def test_one_sequence_report_is_checked_too(rng):
    df = pd.DataFrame({"place": ["home", "work", "shop", "home", "work", "home"]})
    _, rep = kapply_frame(df, column="place", eps=1.0, private=[2], chain=CHAIN, method="dim", seed=1)
    d = json.loads(json.dumps(rep))
    assert kmechanisms_of(d, "rep")[0][0] is None
    d["private"] = [2]
    with pytest.raises(ValueError, match="private records"):
        kmechanisms_of(d, "rep")


def test_parquet_index_and_csv_header_are_kept(tmp_path):
    from redactopt.release.kapply import kapply_table

    df = pd.DataFrame({"rid": ["r7", "r3", "r9", "r1", "r2", "r5"], "person": [1, 2, 1, 2, 1, 2],
                       "v": list("ABCABC"), "flag": [1, 0, 0, 0, 0, 1]})
    chain = Chain([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.3, 0.2, 0.5]], labels=("A", "B", "C"))
    df.set_index("rid").to_parquet(tmp_path / "idx.parquet")
    kapply_table(tmp_path / "idx.parquet", tmp_path / "o.parquet", column="v", eps=1.0, private_column="flag",
                 by="person", chain=chain, method="dim", seed=1, keep=["all", "flag"])
    back = pd.read_parquet(tmp_path / "o.parquet")
    assert back.index.name == "rid" and list(back.index) == list(df["rid"]) and list(back.columns) == ["person", "v",
                                                                                                       "flag"]
    # the stored index is a column the release can group by
    kapply_table(tmp_path / "idx.parquet", tmp_path / "o2.parquet", column="v", eps=1.0, private_column="flag",
                 by="rid", chain=chain, method="dim", seed=1)
    # a CSV header with a blank and a repeated name is written back as it was
    src = tmp_path / "blank.csv"
    src.write_text(",person,v,v2,flag\n10,1,A,x,1\n11,2,B,y,0\n12,1,C,z,0\n13,1,A,w,0\n".replace("v2", "v"))
    kapply_table(src, tmp_path / "o.csv", column="v", eps=1.0, private_column="flag", by="person", chain=chain,
                 method="dim", seed=1, keep=["all", "flag"])
    lines = (tmp_path / "o.csv").read_text().splitlines()
    assert lines[0] == ",person,v,v,flag" and lines[1].startswith("10,1,") and lines[1].endswith(",x,1")


def test_ids_with_the_same_text_are_refused():
    df = pd.DataFrame({"person": [1, "1", 1, "1"], "v": ["home"] * 4, "flag": [1, 0, 0, 1]})
    with pytest.raises(ValueError, match="same text '1'"):
        kapply_frame(df, column="v", eps=1.0, private_column="flag", by="person", chain=CHAIN, method="dim")


def test_single_design_by_report_audit_prints_overall(run, tmp_path, capsys):
    src = tmp_path / "t.csv"
    pd.DataFrame({"person": ["a"] * 5 + ["b"] * 5, "place": ["home", "work", "shop", "home", "home"] * 2,
                  "hide": [0, 0, 1, 0, 0] * 2}).to_csv(src, index=False)
    chain_file = tmp_path / "chain.json"
    chain_file.write_text(json.dumps(CHAIN.to_dict()))
    assert run(["apply", str(src), "--column", "place", "--transition", str(chain_file), "--by", "person",
                "--private-column", "hide", "--eps", "1", "--method", "dim", "--seed", "1",
                "--out", str(tmp_path / "o.csv"), "--report", str(tmp_path / "r.json")]) == 0
    capsys.readouterr()
    assert run(["audit", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "design 1 of 1 (sequences: a, b)" in out and "overall   : PASS (1 of 1 designs pass)" in out


def test_workers_change_nothing_but_the_time(rng):
    df = _table(rng, LENGTHS, PRIVATE)
    kw = dict(column="place", eps=1.0, private_column="hide", by="person", chain=CHAIN, method="auto", seed=9)
    out1, rep1 = kapply_frame(df, workers=1, **kw)
    out2, rep2 = kapply_frame(df, workers=2, **kw)  # the three distinct designs shared out to a second process
    assert out1.equals(out2) and rep1 == rep2


# --------------------------------------------------------------------------
# second review: exact chains, caller-defined classes, Parquet indexes, ids, dtypes, large eps
# --------------------------------------------------------------------------
def test_exact_fraction_chain_applies_and_audits(run, tmp_path, capsys):
    chain_file = tmp_path / "chain.json"
    chain_file.write_text(json.dumps({"labels": ["x", "y", "z"],
                                      "transition": [["3/10", "3/10", "2/5"], ["1/3", "1/3", "1/3"],
                                                     ["1/7", "2/7", "4/7"]]}))
    src = tmp_path / "t.csv"
    pd.DataFrame({"id": ["a"] * 5 + ["b"] * 4, "val": list("xyzxyzxyz"),
                  "flag": [0, 0, 1, 0, 0, 0, 1, 0, 0]}).to_csv(src, index=False)
    for extra in (["--by", "id", "--private-column", "flag"], ["--private", "3"]):
        rep = tmp_path / f"r{len(extra)}.json"
        assert run(["apply", str(src), "--column", "val", "--transition", str(chain_file), *extra, "--eps", "1",
                    "--method", "dim", "--seed", "3", "--out", str(tmp_path / f"o{len(extra)}.csv"),
                    "--report", str(rep)]) == 0
        assert run(["audit", str(rep)]) == 0, capsys.readouterr().err
    capsys.readouterr()


def test_caller_defined_chain_class_and_labels_reach_the_workers(rng):
    import enum

    class Place(enum.Enum):  # local classes cannot be pickled: only plain data may go to a worker
        HOME = "home"
        WORK = "work"
        SHOP = "shop"

    class MyChain(Chain):
        pass

    chain = MyChain(CHAIN.transition.tolist(), labels=tuple(Place))
    df = _table(rng, LENGTHS, PRIVATE)
    df["place"] = df["place"].map({"home": Place.HOME, "work": Place.WORK, "shop": Place.SHOP}).map(str)
    kw = dict(column="place", eps=1.0, private_column="hide", by="person", chain=chain, method="dim", seed=2)
    out1, rep1 = kapply_frame(df, workers=1, **kw)
    out2, rep2 = kapply_frame(df, workers=2, **kw)
    assert out1.equals(out2) and rep1 == rep2 and rep1["states"] == [str(p) for p in Place]


def test_parquet_index_named_like_a_column_and_stored_integer_index(tmp_path):
    import pyarrow.parquet as pq

    from redactopt.release.kapply import kapply_table

    chain = Chain([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.3, 0.2, 0.5]], labels=("A", "B", "C"))
    base = pd.DataFrame({"person": [1, 2, 1, 2, 1, 2], "val": list("ABCABC"), "flag": [1, 0, 0, 0, 0, 1]})
    kw = dict(column="val", eps=1.0, private_column="flag", chain=chain, method="dim", seed=1, workers=1,
              keep=["all", "flag"])
    d = base.copy()
    d.index = pd.Index(list("xyzxyz"), name="val")  # named like a column: stays the index
    d.to_parquet(tmp_path / "a.parquet")
    kapply_table(tmp_path / "a.parquet", tmp_path / "ao.parquet", by="person", **kw)
    back = pd.read_parquet(tmp_path / "ao.parquet")
    assert back.index.name == "val" and list(back.index) == list("xyzxyz")
    d = base.copy()
    d.index = pd.Index([0, 2, 4, 6, 8, 10], name="rowid")  # a stored column, not range metadata
    d.to_parquet(tmp_path / "b.parquet")
    kapply_table(tmp_path / "b.parquet", tmp_path / "bo.parquet", by="person", **kw)
    assert "rowid" in pq.read_schema(tmp_path / "bo.parquet").names  # other readers still see it
    assert list(pd.read_parquet(tmp_path / "bo.parquet").index) == [0, 2, 4, 6, 8, 10]


def test_ids_equal_but_written_differently_and_categorical_dtype():
    chain = Chain([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.3, 0.2, 0.5]], labels=("A", "B", "C"))
    df = pd.DataFrame({"p": pd.Series([1, 1.0, 1, 1.0], dtype=object), "v": list("ABCA"), "f": [1, 0, 0, 1]})
    with pytest.raises(ValueError, match="equal but written differently"):
        kapply_frame(df, column="v", eps=1.0, private_column="f", by="p", chain=chain, method="dim", workers=1)
    df = pd.DataFrame({"p": [1, 2, 1, 2], "v": pd.Categorical(list("ABCA")), "f": [1, 0, 0, 1]})
    out, _ = kapply_frame(df, column="v", eps=1.0, private_column="f", by="p", chain=chain, method="dim", seed=1,
                          workers=1)
    assert isinstance(out["v"].dtype, pd.CategoricalDtype) and out["v"].isna().tolist()[0]


def test_large_eps_is_the_problem_at_the_leakage_ceiling():
    """eps = 50 is far beyond the SCIP model's range (10), but no mechanism on this chain leaks more
    than publishing both neighbours of p does (log(0.5/0.2) per side, about 1.83 in all), so the
    problem is the one at that ceiling: everything but p is published (utility 2/3 exactly) and
    every method, ``global`` included, finds it.  Beyond the model's range *after* the ceiling
    the solver still refuses (tests/test_kdesign.py::test_no_scip_bound_beyond_its_numerical_range)."""
    from redactopt.engine.kdesign import kdesign

    chain = Chain([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.3, 0.2, 0.5]])
    for method in ("optimal", "global", "dim"):
        res = kdesign(chain, 3, eps=50.0, p=1, method=method)
        assert res.leakage <= 50.0 and res.utility == pytest.approx(2 / 3, abs=1e-12)
        assert res.certificate.upper_bound >= res.utility
