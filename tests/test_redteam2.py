"""Red-team round 2 on the streamed categorical release (issue 25): reproducers that failed on f4baba4.

A Parquet dictionary column (a pandas categorical written to Parquet) keeps its unused categories:
``TextStates.codes`` passes the dictionary through ``pc.dictionary_encode`` unchanged and adds every
dictionary entry to the column's labels, used or not.  So (1) a fitted chain's states depend on the
format (the 0/1 and False/True alphabets are lost) and (2) an unused numeric category with a
fractional part makes the column "continuous", naming a row that does not hold it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from redactopt.model.chain import Chain
from redactopt.release.apply import apply_table
from redactopt.release.frame import apply_frame


def _same(a, b):
    skip = {"input", "output", "input_format", "backend", "partitions"}
    return {k: v for k, v in a.items() if k not in skip} == {k: v for k, v in b.items() if k not in skip}


def _table(values, categories):
    rng = np.random.default_rng(0)
    rows = []
    for s in range(30):
        for t in range(8):
            v = values[0] if (s == 0 and t == 0) else values[int(rng.integers(len(values)))]
            rows.append({"s": f"q{s}", "v": v, "f": int(s == 0 and t == 3)})
    df = pd.DataFrame(rows)
    df["v"] = pd.Categorical(df["v"], categories=categories)
    return df


@pytest.mark.parametrize("values, categories", [(["1", "0"], ["0", "1", "2"]),
                                                (["True", "False"], ["True", "False", "x"])])
def test_unused_category_in_parquet_changes_the_fitted_chain(tmp_path, values, categories):
    """Same rows as CSV, DataFrame and Parquet: CSV and DataFrame give states ['0', '1'] (['False', 'True']);
    Parquet gives ['1', '0'] (['True', 'False']) because the unused category defeats the fixed alphabet."""
    df = _table(values, categories)
    kw = dict(column="v", categorical=True, eps=1.0, by="s", private_column="f", seed=1, keep=["all", "f"], workers=1)
    df.to_csv(tmp_path / "in.csv", index=False)
    df.to_parquet(tmp_path / "in.parquet", index=False)
    r_csv = apply_table(tmp_path / "in.csv", tmp_path / "out.csv", **kw)
    r_pq = apply_table(tmp_path / "in.parquet", tmp_path / "out.parquet", **kw)
    _, r_df = apply_frame(df, **kw)
    assert r_csv["chain"]["labels"] == r_df["chain"]["labels"]
    assert r_csv["chain"]["labels"] == r_pq["chain"]["labels"]
    assert _same(r_csv, r_pq)


@pytest.mark.parametrize("chain", [None, Chain([[0.6, 0.4], [0.3, 0.7]], labels=("1", "2"))])
def test_unused_fractional_category_is_not_a_continuous_column(tmp_path, chain):
    """Values '1', '2' only, with an unused category '1.5': CSV releases with a given chain; Parquet refuses
    the column as continuous 'row 1: 1.5' although no row holds 1.5."""
    df = pd.DataFrame({"v": pd.Categorical(["1", "2", "1", "2", "2", "1"], categories=["1", "2", "1.5"])})
    df.to_parquet(tmp_path / "in.parquet")
    try:
        apply_table(tmp_path / "in.parquet", tmp_path / "out.csv", column="v", categorical=True, eps=1.0,
                    private=[2], seed=1, chain=chain)
    except ValueError as err:
        assert "continuous" not in str(err), str(err)
