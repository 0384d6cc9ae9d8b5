"""The Dask back-end on a real distributed cluster gives the in-memory release, row for row."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

from conftest import dense_redact_prob
from redactopt.release.apply import apply_table
from redactopt.model.chain import MarkovChain
from redactopt.judge.leakage import sample_chains

dd = pytest.importorskip("dask.dataframe", reason="the optional 'dask' extra is not installed")
distributed = pytest.importorskip("distributed", reason="the optional 'dask' extra is not installed")

from redactopt.release.dask_backend import apply_dask, apply_parquet_dask  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


def _interleaved(rng, n_seq=4, length=600):
    chain = MarkovChain(0.1, 0.3)
    labels = np.repeat(np.arange(n_seq), length)
    rng.shuffle(labels)
    df = pd.DataFrame({"sid": labels, "x": np.zeros(labels.size, dtype=np.int64),
                       "priv": np.zeros(labels.size, dtype=np.int64), "val": rng.random(labels.size)})
    for s in range(n_seq):
        rows = np.flatnonzero(labels == s)
        df.loc[rows, "x"] = sample_chains(chain, length, 1, rng)[0].astype(np.int64)
        if s != 2:
            df.loc[rows[[250]], "priv"] = 1
    return df


def test_dask_matches_in_memory_with_sequences(tmp_path, client):
    rng = np.random.default_rng(17)
    df = _interleaved(rng)
    single = tmp_path / "all.parquet"
    df.to_parquet(single)
    dataset = tmp_path / "ds"
    dd.from_pandas(df, npartitions=5).to_parquet(dataset)  # sequences span partitions
    kw = dict(column="x", eps=1.0, private_column="priv", by="sid", seed=99)
    mem = apply_table(single, tmp_path / "mem.parquet", chunk_rows=257, **kw)
    dsk = apply_parquet_dask(dataset, tmp_path / "dask_out", **kw)
    assert dsk["partitions"] == 5
    a = pd.read_parquet(tmp_path / "mem.parquet")
    b = pd.read_parquet(tmp_path / "dask_out").reset_index(drop=True)
    assert np.array_equal(a["x"].isna().to_numpy(), b["x"].isna().to_numpy())
    assert a.drop(columns="x").equals(b.drop(columns="x"))
    assert mem["utility"] == dsk["utility"]
    assert mem["chain"]["alpha"] == dsk["chain"]["alpha"] and mem["chain"]["beta"] == dsk["chain"]["beta"]
    for sm, sd in zip(mem["sequences"], dsk["sequences"]):
        assert sm["id"] == sd["id"] and sm["private"] == sd["private"]
        if sm["mechanism"] is not None:
            assert sm["mechanism"] == sd["mechanism"]
    qs = np.concatenate([dense_redact_prob(s["mechanism"]) for s in mem["sequences"] if s["mechanism"]])
    assert ((qs > 0) & (qs < 1)).any()  # the comparison covers random draws, not only 0/1


def test_dask_single_sequence_private_positions(tmp_path, client):
    rng = np.random.default_rng(2)
    x = sample_chains(MarkovChain(0.1, 0.3), 1500, 1, rng)[0].astype(np.int64)
    df = pd.DataFrame({"x": x, "t": np.arange(1500)})
    df.to_parquet(tmp_path / "one.parquet")
    dd.from_pandas(df, npartitions=3).to_parquet(tmp_path / "ds")
    kw = dict(column="x", eps=1.0, private=[740, 760], seed=5, method="dim")
    apply_table(tmp_path / "one.parquet", tmp_path / "m.parquet", chunk_rows=400, **kw)
    apply_parquet_dask(tmp_path / "ds", tmp_path / "d", **kw)
    a = pd.read_parquet(tmp_path / "m.parquet")
    b = pd.read_parquet(tmp_path / "d").reset_index(drop=True)
    assert np.array_equal(a["x"].isna().to_numpy(), b["x"].isna().to_numpy())
    assert b["x"].isna().to_numpy()[[740, 760]].all()


def test_dask_refuses_overwrite_and_leaves_nothing_on_bad_data(tmp_path, client):
    df = pd.DataFrame({"x": [0, 1, 1, 0, 3, 1, 0, 0], "t": range(8)})
    dd.from_pandas(df, npartitions=2).to_parquet(tmp_path / "ds")
    with pytest.raises(ValueError, match="column 'x': value 3"):
        apply_parquet_dask(tmp_path / "ds", tmp_path / "out", column="x", eps=1.0, private=[1],
                           alpha=0.2, beta=0.3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]
    (tmp_path / "out").mkdir()
    with pytest.raises(FileExistsError):
        apply_parquet_dask(tmp_path / "ds", tmp_path / "out", column="x", eps=1.0, private=[1])
    # the report may never be the input, not even with --force
    part = next((tmp_path / "ds").glob("*.parquet"))
    before = part.read_bytes()
    with pytest.raises(ValueError, match="report must be a different file"):
        apply_parquet_dask(tmp_path / "ds", tmp_path / "out2", column="x", eps=1.0, private=[1],
                           report=part, force=True)
    assert part.read_bytes() == before and not (tmp_path / "out2").exists()


def test_missing_extra_names_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask", None)
    with pytest.raises(ImportError) as info:
        apply_parquet_dask(tmp_path / "x", tmp_path / "y", column="x", eps=1.0, private=[1])
    assert "the Dask back-end" in str(info.value)
    assert "pip install 'redactopt[dask]'" in str(info.value)


def test_cli_backend_dask(tmp_path, client, capsys):
    from redactopt.interface.cli import main

    rng = np.random.default_rng(4)
    x = sample_chains(MarkovChain(0.2, 0.4), 800, 1, rng)[0].astype(np.int64)
    dd.from_pandas(pd.DataFrame({"x": x}), npartitions=2).to_parquet(tmp_path / "ds")
    rep = tmp_path / "r.json"
    code = main(["apply", str(tmp_path / "ds"), "--column", "x", "--private", "400", "--eps", "1", "--seed", "1",
                 "--out", str(tmp_path / "out"), "--report", str(rep), "--backend", "dask", "--method", "dim"])
    assert code == 0, capsys.readouterr().err
    b = pd.read_parquet(tmp_path / "out").reset_index(drop=True)
    assert b["x"].isna().to_numpy()[399]
    assert (tmp_path / "out" / "part.00000.parquet").exists()


def _csv_dataset(folder, df, cuts):
    folder.mkdir()
    bounds = [0] + list(cuts) + [len(df)]
    for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        df.iloc[a:b].to_csv(folder / f"part.{i}.csv", index=False)


def test_dask_reads_a_csv_dataset_like_the_file_it_was_cut_from(tmp_path, client):
    rng = np.random.default_rng(23)
    df = _interleaved(rng, n_seq=3, length=500)
    df["val"] = df["val"].round(6).astype(str) + "0"  # text kept as written
    single = tmp_path / "all.csv"
    df.to_csv(single, index=False)
    _csv_dataset(tmp_path / "ds", df, [400, 410, 1000] + list(range(1001, 1012)))  # 15 files, one of one row
    kw = dict(column="x", eps=1.0, private_column="priv", by="sid", seed=5, method="dim")
    mem = apply_table(single, tmp_path / "mem.csv", **kw)
    for source in (tmp_path / "ds", str(tmp_path / "ds" / "part.*.csv")):
        out = tmp_path / f"out{len(str(source))}"
        dsk = apply_dask(source, out, **kw)
        parts = sorted(out.iterdir(), key=lambda p: int(p.name.split(".")[1]))
        assert [p.name for p in parts] == [f"part.{i:05d}.csv" for i in range(15)] and dsk["partitions"] == 15
        # each part is its input file with fields emptied; together they are the in-memory release
        a = pd.read_csv(tmp_path / "mem.csv", dtype=str, keep_default_na=False)
        b = pd.concat([pd.read_csv(p, dtype=str, keep_default_na=False) for p in parts], ignore_index=True)
        pd.testing.assert_frame_equal(a, b)
        assert mem["utility"] == dsk["utility"]
        assert [s["mechanism"] for s in mem["sequences"]] == [s["mechanism"] for s in dsk["sequences"]]


def test_dask_partitions_parquet_by_row_group(tmp_path, client, monkeypatch):
    rng = np.random.default_rng(29)
    x = sample_chains(MarkovChain(0.1, 0.3), 3000, 1, rng)[0].astype(np.int64)
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "ds").mkdir()
    pq.write_table(pa.table({"x": x[:2000], "t": np.arange(2000)}), tmp_path / "ds" / "a.parquet", row_group_size=300)
    pq.write_table(pa.table({"x": x[2000:], "t": np.arange(2000, 3000)}), tmp_path / "ds" / "b.parquet",
                   row_group_size=300)
    (tmp_path / "ds" / "_SUCCESS").write_text("")  # marker files are not data
    pq.write_table(pa.table({"x": x, "t": np.arange(3000)}), tmp_path / "all.parquet")
    kw = dict(column="x", eps=1.0, private=[1990, 2010], seed=8, method="dim")
    apply_table(tmp_path / "all.parquet", tmp_path / "m.parquet", **kw)
    import redactopt.release.dask_backend as backend

    monkeypatch.setattr(backend, "PARTITION_ROWS", 600)  # runs of two row groups of 300
    rep = apply_dask(tmp_path / "ds", tmp_path / "out", **kw)
    assert rep["partitions"] == 4 + 2  # a: 300+300, 300+300, 300+300, 200; b: 300+300, 300+100
    a = pd.read_parquet(tmp_path / "m.parquet")
    b = pd.concat([pd.read_parquet(p) for p in sorted((tmp_path / "out").iterdir())], ignore_index=True)
    pd.testing.assert_frame_equal(a, b)
    assert b["x"].isna().to_numpy()[[1990, 2010]].all()
    (tmp_path / "ds" / "c.csv").write_text("x,t\n0,1\n")
    with pytest.raises(ValueError, match="mixes CSV and Parquet"):
        apply_dask(tmp_path / "ds", tmp_path / "out2", **kw)


def _categorical(rng, n_seq=3, length=400):
    """Sequences of a three-state chain, rows interleaved; the states appear in different orders in different
    parts of the file (so partitions meet them in other orders than the whole file)."""
    from redactopt.model.chain import Chain

    ch = Chain([[0.8, 0.15, 0.05], [0.1, 0.8, 0.1], [0.05, 0.15, 0.8]], labels=("low", "mid", "high"))
    labels = np.repeat(np.arange(n_seq), length)
    rng.shuffle(labels)
    df = pd.DataFrame({"sid": labels, "level": "", "priv": 0, "val": rng.random(labels.size).round(4)})
    for s in range(n_seq):
        rows = np.flatnonzero(labels == s)
        x = [2 - s % 3]
        for _ in range(length - 1):
            x.append(int(rng.choice(3, p=ch.transition[x[-1]])))
        df.loc[rows, "level"] = np.array(ch.labels)[x]
        if s != 1:
            df.loc[rows[[150, 300]], "priv"] = 1
    return df


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_dask_categorical_release_is_the_streamed_release(tmp_path, client, fmt):
    """A categorical column on Dask: each partition scanned in its own labels, made the dataset's when merged;
    the same fit, designs, report and redactions as the release of the whole file."""
    rng = np.random.default_rng(31)
    df = _categorical(rng)
    kw = dict(column="level", eps=1.0, private_column="priv", by="sid", seed=8, keep="all")
    if fmt == "csv":
        single = tmp_path / "all.csv"
        df.to_csv(single, index=False)
        _csv_dataset(tmp_path / "ds", df, [100, 350, 700, 1000])
    else:
        single = tmp_path / "all.parquet"
        df.to_parquet(single)
        dd.from_pandas(df, npartitions=4).to_parquet(tmp_path / "ds", write_index=False)
    mem = apply_table(single, tmp_path / f"mem.{fmt}", categorical=True, **kw)
    dsk = apply_dask(tmp_path / "ds", tmp_path / "out", categorical=True, **kw)
    assert dsk["backend"] == "dask" and dsk["partitions"] == (5 if fmt == "csv" else 4)
    skip = {"input", "output", "backend", "partitions", "input_format"}
    assert {k: v for k, v in dsk.items() if k not in skip} == {k: v for k, v in mem.items() if k not in skip}
    assert mem["chain"]["source"] == "fitted" and sorted(mem["states"]) == ["high", "low", "mid"]
    parts = sorted((tmp_path / "out").iterdir(), key=lambda p: int(p.name.split(".")[1]))
    if fmt == "csv":
        a = pd.read_csv(tmp_path / "mem.csv", dtype=str, keep_default_na=False)
        b = pd.concat([pd.read_csv(p, dtype=str, keep_default_na=False) for p in parts], ignore_index=True)
    else:
        a = pd.read_parquet(tmp_path / "mem.parquet")
        b = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    def plain(f: pd.DataFrame) -> pd.DataFrame:  # the values, whatever the string dtype's missing marker
        return f.reset_index(drop=True).astype(object).where(f.reset_index(drop=True).notna(), None)

    pd.testing.assert_frame_equal(plain(a), plain(b))
    red = (a["level"].isna() | (a["level"] == "")).to_numpy()
    assert red[df["priv"].to_numpy() == 1].all() and rep_redacted(mem) == int(red.sum())


def rep_redacted(rep: dict) -> int:
    return int(rep["utility"]["redacted"])


def test_cli_backend_dask_categorical(tmp_path, client, capsys):
    """``apply --categorical --backend dask``: the report audits, and the refusals of that path are one line."""
    from redactopt.interface.cli import main

    df = _categorical(np.random.default_rng(5), n_seq=2, length=320)
    _csv_dataset(tmp_path / "ds", df, [200])
    rep = tmp_path / "r.json"
    base = ["apply", str(tmp_path / "ds"), "--column", "level", "--categorical", "--private-column", "priv",
            "--by", "sid", "--eps", "1", "--seed", "1", "--backend", "dask", "--method", "dim"]
    assert main(base + ["--out", str(tmp_path / "out"), "--report", str(rep)]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "wrote" in out and "2 with private records" not in out  # one sequence has none
    assert main(["audit", str(rep)]) == 0, capsys.readouterr().out
    capsys.readouterr()
    assert main(base + ["--out", str(tmp_path / "o2"), "--chunk-rows", "10"]) == 2
    assert "--chunk-rows applies to --backend memory only" in capsys.readouterr().err
