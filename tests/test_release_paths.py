"""The fast release paths give the release the old path gave: same rows, columns, values, ⊥ where drawn.

Reference (independent of the release code): the input read with pandas as text, the
redactions drawn record by record with ``bernoulli_exact`` from the dense table of the
report (read by hand, ``conftest.dense_redact_prob``) with word ``t`` of the sequence's
seeded stream — what the release promises — and the column emptied there.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import dense_redact_prob
from redactopt.judge.leakage import sample_chains
from redactopt.model.chain import MarkovChain
from redactopt.release import splice
from redactopt.release.apply import apply_table
from redactopt.release.bits import SeededBits, bernoulli_exact
from redactopt.release.data import sequence_key
from redactopt.release.frame import apply_frame

CHAIN = MarkovChain(0.1, 0.3)


def _expected_mask(values: np.ndarray, ids: np.ndarray | None, report: dict, seed: int) -> np.ndarray:
    """Which rows the release must redact: per sequence, exact draws of the dense table by position."""
    seqs = report.get("sequences") or [{"id": None, "mechanism": report["mechanism"]}]
    mask = np.zeros(values.shape[0], dtype=bool)
    for s in seqs:
        if s["mechanism"] is None:
            continue
        rows = np.arange(values.shape[0]) if ids is None else np.flatnonzero(ids == s["id"])
        q = dense_redact_prob(s["mechanism"])
        pos = np.arange(rows.shape[0])
        mask[rows] = bernoulli_exact(q[pos, values[rows]], SeededBits(seed), key=sequence_key(s["id"]),
                                     positions=pos)
    return mask


def _check_csv_release(src, out, report, *, column, seed, by=None, index_col=None, sep=","):
    a = pd.read_csv(src, dtype=str, keep_default_na=False, index_col=index_col, sep=sep)
    b = pd.read_csv(out, dtype=str, keep_default_na=False, index_col=index_col, sep=sep)
    tokens = {"1": 1, "0": 0, "true": 1, "false": 0, "1.0": 1, "0.0": 0}
    values = np.array([tokens[v.strip()] for v in a[column]], dtype=np.int64)
    ids = None if by is None else a[by].to_numpy()
    mask = _expected_mask(values, ids, report, seed)
    expected = a.copy()
    expected.loc[mask, column] = ""
    assert list(b.columns) == list(a.columns) and b.index.equals(a.index)
    pd.testing.assert_frame_equal(b, expected)
    assert report["utility"]["redacted"] == int(mask.sum())
    return mask


def _chain_values(n, seed):
    return sample_chains(CHAIN, n, 1, np.random.default_rng(seed))[0].astype(np.int64)


def _awkward_frame(n, seed):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "when": [f"2024-01-{1 + i // 1440:02d} {i // 60 % 24:02d}:{i % 60:02d}:00" for i in range(n)],
        "temp": [f"{v:.3f}" for v in 20 + rng.standard_normal(n)],  # trailing zeros kept as text
        "occ": _chain_values(n, seed),
        "note": np.where(rng.random(n) < 0.2, 'say "hi", twice', np.where(rng.random(n) < 0.1, "two\nlines", "")),
    })


@pytest.fixture(params=[None, 64, 4096])
def block(request, monkeypatch):
    """The splice's block of bytes: its default, and small ones so that lines straddle blocks."""
    if request.param is not None:
        monkeypatch.setattr(splice, "_BLOCK", request.param)
    return request.param


def _release(src, out, **kw):
    kw.setdefault("seed", 7)
    kw.setdefault("method", "dim")  # the fastest design: these tests are about the writing
    kw.setdefault("keep", "all")  # every column written: the input's layout is kept
    return apply_table(src, out, column="occ", eps=1.0, **kw)


def test_quotes_newlines_in_values_and_a_quoted_header(tmp_path, block):
    src = tmp_path / "in.csv"
    df = _awkward_frame(900, 1)
    df.to_csv(src, index=False, quoting=1 if block == 64 else 0)  # all fields quoted, or minimal quoting
    rep = _release(src, tmp_path / "out.csv", private=[450, 451, 700], alpha=0.1, beta=0.3, chunk_rows=97)
    mask = _check_csv_release(src, tmp_path / "out.csv", rep, column="occ", seed=7)
    assert mask[[450, 451, 700]].all() and mask.sum() > 3
    # the bytes of every row not redacted are the input's
    assert (tmp_path / "out.csv").read_bytes().count(b"\n") == src.read_bytes().count(b"\n")


@pytest.mark.parametrize("layout", ["crlf", "bom", "row-id", "tsv", "trailing-empty-lines", "gzip", "text-values"])
def test_layouts(tmp_path, block, layout):
    n = 600
    x = _chain_values(n, 2)
    df = pd.DataFrame({"t": np.arange(n).astype(str), "occ": x.astype(str), "v": np.round(np.linspace(0, 1, n), 4)})
    name, sep, index_col = "in.csv", ",", None
    if layout == "text-values":
        df["occ"] = np.where(x == 1, "true", "false")
    if layout == "tsv":
        name, sep = "in.tsv", "\t"
    text = df.to_csv(index=False, sep=sep, lineterminator="\r\n" if layout == "crlf" else "\n")
    if layout == "row-id":  # the header names one column fewer than the rows have fields
        lines = text.splitlines()
        text = "\n".join([lines[0]] + [f"{i + 1},{line}" for i, line in enumerate(lines[1:])]) + "\n"
        index_col = 0
    if layout == "trailing-empty-lines":
        text += "\n\n"
    data = (b"\xef\xbb\xbf" if layout == "bom" else b"") + text.encode()
    if layout == "gzip":
        name, data = "in.csv.gz", gzip.compress(data)
    src = tmp_path / name
    src.write_bytes(data)
    out = tmp_path / ("out" + name[2:])
    rep = _release(src, out, private=[300, 301], chunk_rows=128)
    mask = _check_csv_release(src, out, rep, column="occ", seed=7, index_col=index_col, sep=sep)
    assert mask[[300, 301]].all()
    raw_in = gzip.decompress(data) if layout == "gzip" else data
    raw_out = gzip.decompress(out.read_bytes()) if layout == "gzip" else out.read_bytes()
    assert raw_out.startswith(raw_in.split(b"\n", 1)[0])  # the header line, byte for byte (BOM included)
    if layout in ("crlf", "trailing-empty-lines"):
        assert raw_out.endswith(raw_in[-4:])


@pytest.mark.parametrize("oddity", [b'7,1,5" tall\n', b"\n"])
def test_files_whose_rows_are_not_their_lines_are_released_from_parsed_rows(tmp_path, oddity):
    """A stray quote inside an unquoted field, an empty line in the middle: same content, from Arrow batches."""
    lines = ["t,occ,v"] + [f"{i},{x},{i % 7}" for i, x in enumerate(_chain_values(400, 3))]
    data = ("\n".join(lines[:200]) + "\n").encode() + oddity + ("\n".join(lines[200:]) + "\n").encode()
    src = tmp_path / "in.csv"
    src.write_bytes(data)
    # (the odd row's t goes back in time: the file's order is accepted as the time order, issue 36)
    rep = _release(src, tmp_path / "out.csv", private=[250], alpha=0.1, beta=0.3, accept_model=True)
    assert ("MODEL ACCEPTED (--accept-model): rows out of time order" in rep["notice"]) == oddity.startswith(b"7,")
    _check_csv_release(src, tmp_path / "out.csv", rep, column="occ", seed=7)


def test_sequences_interleaved_with_an_id_column_first(tmp_path, block):
    rng = np.random.default_rng(5)
    labels = np.repeat(["a", "b", "c"], 300)
    rng.shuffle(labels)
    x = np.zeros(900, dtype=np.int64)
    priv = np.zeros(900, dtype=np.int64)
    for s in "abc":
        rows = np.flatnonzero(labels == s)
        x[rows] = _chain_values(300, ord(s))
        if s != "b":
            priv[rows[[120, 121]]] = 1
    src = tmp_path / "in.csv"
    pd.DataFrame({"sid": labels, "occ": x, "priv": priv, "w": rng.random(900).round(5)}).to_csv(src, index=False)
    rep = _release(src, tmp_path / "out.csv", private_column="priv", by="sid", chunk_rows=101, keep=["all", "priv"])
    mask = _check_csv_release(src, tmp_path / "out.csv", rep, column="occ", seed=7, by="sid")
    assert mask[priv == 1].all() and not mask[labels == "b"].any()


def test_csv_to_parquet_and_parquet_to_csv(tmp_path):
    src = tmp_path / "in.csv"
    _awkward_frame(500, 4).to_csv(src, index=False)
    rep = _release(src, tmp_path / "out.parquet", private=[250], chunk_rows=64)
    t = pq.read_table(tmp_path / "out.parquet")
    assert t.schema.field("occ").type == pa.int8() and t.schema.field("temp").type == pa.string()
    a = pd.read_csv(src, dtype=str, keep_default_na=False)
    mask = _expected_mask(a["occ"].astype(int).to_numpy(), None, rep, 7)
    got = t.column("occ").to_pandas()
    assert np.array_equal(got.isna().to_numpy(), mask)
    assert np.array_equal(got[~mask].astype(int).to_numpy(), a["occ"].astype(int).to_numpy()[~mask])
    assert t.drop_columns(["occ"]).to_pandas().equals(a.drop(columns="occ"))
    # and back: Parquet to CSV
    src2 = tmp_path / "in.parquet"
    pq.write_table(pa.table({"t": np.arange(500), "occ": a["occ"].astype(np.int64).to_numpy(),
                             "flag": np.arange(500) % 3 == 0}), src2, row_group_size=77)
    rep2 = _release(src2, tmp_path / "out2.csv", private=[250], chunk_rows=64)
    b = pd.read_csv(tmp_path / "out2.csv", keep_default_na=False, dtype=str)
    mask2 = _expected_mask(a["occ"].astype(int).to_numpy(), None, rep2, 7)
    assert np.array_equal((b["occ"] == "").to_numpy(), mask2)
    assert b["t"].astype(int).tolist() == list(range(500))
    assert b["flag"].str.lower().tolist() == ["true" if i % 3 == 0 else "false" for i in range(500)]


def test_parquet_needs_no_scan_when_the_chain_and_positions_are_given(tmp_path, monkeypatch):
    src = tmp_path / "in.parquet"
    x = _chain_values(3000, 6)
    pq.write_table(pa.table({"occ": x, "t": np.arange(3000)}), src, row_group_size=500)
    import redactopt.release.passes as apply_mod  # the scan pass (issue 35 moved it out of apply.py)

    def no_scan(*a, **k):
        raise AssertionError("scanned")

    monkeypatch.setattr(apply_mod, "scan", no_scan)
    rep = _release(src, tmp_path / "o.parquet", private=[1500], alpha=0.1, beta=0.3, chunk_rows=700)
    got = pq.read_table(tmp_path / "o.parquet").column("occ").to_numpy(zero_copy_only=False)
    mask = _expected_mask(x, None, rep, 7)
    assert np.array_equal(np.isnan(got), mask)
    bad = x.copy()
    bad[2222] = 5
    pq.write_table(pa.table({"occ": bad}), tmp_path / "bad.parquet", row_group_size=500)
    with pytest.raises(ValueError, match="row 2223, column 'occ': value 5 is not 0 or 1"):
        _release(tmp_path / "bad.parquet", tmp_path / "o2.parquet", private=[10], alpha=0.1, beta=0.3)
    assert not (tmp_path / "o2.parquet").exists()


# --------------------------------------------------------------------------
# in memory
# --------------------------------------------------------------------------
def test_apply_frame_draws_as_the_file_path(tmp_path):
    n = 2000
    df = pd.DataFrame({"t": np.arange(n), "occ": _chain_values(n, 8), "w": np.linspace(0, 1, n)},
                      index=pd.RangeIndex(100, 100 + n))
    before = df.copy()
    src = tmp_path / "in.parquet"
    df.to_parquet(src, index=False)
    kw = dict(column="occ", eps=1.0, private=[1000, 1001], seed=11, method="dim", keep="all")
    rep_file = apply_table(src, tmp_path / "o.parquet", chunk_rows=300, **kw)
    from_file = pq.read_table(tmp_path / "o.parquet").column("occ").to_pandas().isna().to_numpy()
    released, rep = apply_frame(df, chunk_rows=256, **kw)
    assert df.equals(before)  # the input is not modified
    assert released.index.equals(df.index) and list(released.columns) == list(df.columns)
    assert str(released["occ"].dtype) == "Int64"
    assert np.array_equal(released["occ"].isna().to_numpy(), from_file)
    assert np.array_equal(released["occ"].isna().to_numpy(), _expected_mask(df["occ"].to_numpy(), None, rep, 11))
    assert released.drop(columns="occ").equals(df.drop(columns="occ"))
    assert rep["utility"] == rep_file["utility"] and rep["input"] is None
    table = pa.Table.from_pandas(df, preserve_index=False)
    released_t, rep_t = apply_frame(table, **kw)
    assert isinstance(released_t, pa.Table) and released_t.schema.field("occ").nullable
    assert np.array_equal(released_t.column("occ").is_null().to_numpy(zero_copy_only=False), from_file)
    assert released_t.column("w").chunks[0].buffers()[1].address == table.column("w").chunks[0].buffers()[1].address


def test_apply_frame_with_sequences_and_missing_values(tmp_path):
    rng = np.random.default_rng(9)
    labels = np.repeat([10, 20], 400)
    rng.shuffle(labels)
    x = np.zeros(800, dtype=np.int64)
    for s in (10, 20):
        x[labels == s] = _chain_values(400, s)
    priv = np.zeros(800, dtype=bool)
    priv[np.flatnonzero(labels == 10)[200]] = True
    df = pd.DataFrame({"sid": labels, "occ": x, "priv": priv})
    released, rep = apply_frame(df, column="occ", eps=1.0, private_column="priv", by="sid", seed=3, method="dim")
    mask = _expected_mask(x, labels, {"sequences": [{"id": s["id"], "mechanism": s["mechanism"]}
                                                    for s in rep["sequences"]]}, 3)
    assert np.array_equal(released["occ"].isna().to_numpy(), mask) and mask[priv].all()
    gap = df.assign(occ=df["occ"].astype("Int64").mask(np.arange(800) == 5))
    with pytest.raises(ValueError, match="row 6, column 'occ': missing value"):
        apply_frame(gap, column="occ", eps=1.0, private_column="priv", by="sid")


def test_apply_frame_polars():
    pl = pytest.importorskip("polars", reason="polars is optional (used through Arrow where installed)")
    n = 500
    df = pl.DataFrame({"occ": _chain_values(n, 12), "t": np.arange(n)})
    released, rep = apply_frame(df, column="occ", eps=1.0, private=[250], seed=2)
    assert isinstance(released, pl.DataFrame)
    mask = _expected_mask(df["occ"].to_numpy(), None, rep, 2)
    assert np.array_equal(released["occ"].is_null().to_numpy(), mask)


# --------------------------------------------------------------------------
# interrupted releases leave nothing behind
# --------------------------------------------------------------------------
@pytest.mark.parametrize("out", ["out.csv", "out.parquet", "-"])
def test_an_interrupted_release_leaves_nothing_behind(tmp_path, tmp_path_factory, monkeypatch, out):
    src = tmp_path / "in.csv"
    _awkward_frame(3000, 5).to_csv(src, index=False)
    from redactopt.release import redactor

    real = redactor.Redactor.redact

    def interrupted(self, *a, **k):
        real(self, *a, **k)
        raise KeyboardInterrupt

    monkeypatch.setattr(redactor.Redactor, "redact", interrupted)
    system_tmp = tmp_path_factory.mktemp("system-tmp")  # where standard output is staged
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
    with pytest.raises(KeyboardInterrupt):
        _release(src, tmp_path / out if out != "-" else "-", private=[1500], report=tmp_path / "r.json",
                 chunk_rows=500)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]
    assert os.listdir(system_tmp) == []


def test_the_report_grows_with_the_blocks_not_the_rows(tmp_path):
    sizes = []
    for n in (2_000, 200_000):
        src = tmp_path / f"in{n}.parquet"
        pq.write_table(pa.table({"occ": _chain_values(n, 1)}), src)
        rep = tmp_path / f"r{n}.json"
        _release(src, tmp_path / f"o{n}.parquet", private=[n // 2], alpha=0.1, beta=0.3, report=rep)
        sizes.append(rep.stat().st_size)
        assert json.loads(rep.read_text())["format"] == "redactopt.release.apply-report/3"
    assert abs(sizes[1] - sizes[0]) < 200  # a few digits of n, nothing per row


def test_stdout_release_equals_the_file_release(tmp_path, monkeypatch, capsysbinary):
    src = tmp_path / "in.csv"
    _awkward_frame(700, 6).to_csv(src, index=False)
    _release(src, tmp_path / "o.csv", private=[300], alpha=0.1, beta=0.3)
    capsysbinary.readouterr()
    _release(src, "-", private=[300], alpha=0.1, beta=0.3)
    assert capsysbinary.readouterr().out == (tmp_path / "o.csv").read_bytes()
