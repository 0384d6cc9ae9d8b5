"""One apply for every chain: ``redactopt.apply_table`` / ``apply_frame`` release a 0/1 column by default
and a categorical one (``categorical=True``, a chain on more states, ``protect``/``bins``) through the
categorical release; a two-state chain on 0/1 is the binary release however it is given."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import redactopt as r
from redactopt.model.chain import Chain
from redactopt.release.kapply import kapply_frame, kapply_table

P3 = np.array([[0.9, 0.05, 0.05], [0.1, 0.8, 0.1], [0.05, 0.15, 0.8]])


def _states(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = [0]
    for u in rng.random(n - 1):
        x.append(int(np.searchsorted(np.cumsum(P3[x[-1]]), u)))
    return pd.DataFrame({"v": np.array(["a", "b", "c"])[x], "w": np.arange(n)})


def test_categorical_frame_is_the_categorical_release():
    df = _states(1200, 1)
    out, rep = r.apply_frame(df, column="v", eps=1.0, private=[600], seed=3, categorical=True)
    ref, ref_rep = kapply_frame(df, column="v", eps=1.0, private=[600], seed=3)
    assert out.equals(ref) and rep["leakage"] == ref_rep["leakage"]
    assert rep["format"] == "redactopt.release.kapply-report/1" and rep["leakage"]["max"] <= 1.0
    # what is published is the input's value; what is not is missing
    shown = out["v"].notna().to_numpy()
    assert (out["v"][shown] == df["v"][shown]).all() and (~shown).sum() == rep["utility"]["redacted"]


def test_a_chain_on_three_states_makes_the_release_categorical(tmp_path):
    df = _states(800, 2)
    c = Chain(P3, labels=("a", "b", "c"))
    df.to_csv(tmp_path / "in.csv", index=False)
    rep = r.apply_table(tmp_path / "in.csv", tmp_path / "out.csv", column="v", eps=0.5, private=[400], seed=5,
                        chain=c)
    ref = kapply_table(tmp_path / "in.csv", tmp_path / "ref.csv", column="v", eps=0.5, private=[400], seed=5,
                       chain=c)
    assert (tmp_path / "out.csv").read_bytes() == (tmp_path / "ref.csv").read_bytes()
    assert rep["chain"]["fit_rows"]["source"] == "given" and rep["leakage"] == ref["leakage"]


def test_binary_chain_given_three_ways_is_one_release():
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"v": (rng.random(500) < 0.3).astype(int)})
    kw = dict(column="v", eps=1.0, private=[250], seed=1)
    a, ra = r.apply_frame(df, alpha=0.2, beta=0.4, **kw)
    b, rb = r.apply_frame(df, chain=r.MarkovChain(0.2, 0.4), **kw)
    c, rc = r.apply_frame(df, chain=Chain([[1 - 0.2, 0.2], [0.4, 1 - 0.4]], labels=(0, 1)), **kw)
    d, _ = r.apply_frame(df, chain=Chain([[1 - 0.2, 0.2], [0.4, 1 - 0.4]]), **kw)  # states "0", "1" by default
    assert a.equals(b) and a.equals(c) and a.equals(d)
    assert ra["leakage"] == rb["leakage"] == rc["leakage"] and ra["chain"]["alpha"] == rc["chain"]["alpha"] == 0.2


def test_binary_only_options_are_refused_in_one_line():
    df = _states(300, 3)
    c = Chain(P3, labels=("a", "b", "c"))
    for bad, needle in ((dict(robust=0.9), "robust= applies to 0/1 columns only"),
                        (dict(alpha=0.1), "alpha= applies to 0/1 columns only"),
                        (dict(report_sequences="inline"), "report_sequences= applies")):
        with pytest.raises(ValueError, match=needle):
            r.apply_frame(df, column="v", eps=1.0, private=[150], chain=c, **bad)
    with pytest.raises(ValueError, match="not both"):
        r.apply_frame(df, column="w", eps=1.0, private=[150], chain=r.MarkovChain(0.2, 0.3), alpha=0.2)
    with pytest.raises(ValueError, match="apply to categorical releases"):
        r.apply_frame(df, column="w", eps=1.0, private=[150], alpha=0.2, beta=0.3, smoothing="none")
    with pytest.raises(ValueError, match="not 0 or 1"):  # a categorical column is not guessed: asked for
        r.apply_frame(df, column="v", eps=1.0, private=[150])
