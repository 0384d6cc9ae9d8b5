"""The worked example of docs/occupancy.md on the UCI office-occupancy data shipped with redactopt.

Nothing here may skip: the data are package data (``redactopt.datasets``), and ``.ci/run``
fails when these tests do not run and pass.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import counts_outside
from redactopt import datasets
from redactopt.judge.audit import audit
from redactopt.io import mechanism_from_dict
from redactopt.judge.leakage import leakage

DATA = datasets.path("occupancy")
PRIVATE = "1120-1179"  # 2015-02-05, 12:30-13:29: someone's lunch hour (1-based rows)


def _occupancy() -> np.ndarray:
    # the header names 7 columns, the rows carry 8 fields: the first is a row id
    return pd.read_csv(DATA, index_col=0)["Occupancy"].to_numpy()


def test_fit_on_occupancy(run, capsys):
    x = _occupancy()
    n00 = int(((x[:-1] == 0) & (x[1:] == 0)).sum())
    n01 = int(((x[:-1] == 0) & (x[1:] == 1)).sum())
    n10 = int(((x[:-1] == 1) & (x[1:] == 0)).sum())
    n11 = int(((x[:-1] == 1) & (x[1:] == 1)).sum())
    assert run(["fit", str(DATA), "--column", "Occupancy", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["counts"] == {"00": n00, "01": n01, "10": n10, "11": n11}
    assert d["alpha"] == pytest.approx(n01 / (n00 + n01), rel=1e-12)
    assert d["beta"] == pytest.approx(n10 / (n10 + n11), rel=1e-12)
    assert 0.002 < d["alpha"] < 0.005 and 0.008 < d["beta"] < 0.02  # "alpha ~ 0.003, beta ~ 0.012"
    assert d["records"] == 8143 and d["transitions"] == 8142


def _best_threshold(x: np.ndarray, y: np.ndarray) -> float:
    """Accuracy of the best rule 'one value below a threshold, one at or above', by trying every threshold."""
    best = max(np.bincount(y).max(), 0)
    for t in np.unique(x)[1:]:
        lo, hi = y[x < t], y[x >= t]
        best = max(best, np.bincount(lo, minlength=2).max() + np.bincount(hi, minlength=2).max())
    return best / y.size


def test_lunch_hour_release(tmp_path, run, capsys):
    out, rep = tmp_path / "released.csv", tmp_path / "report.json"
    code = run(["apply", str(DATA), "--column", "Occupancy", "--private", PRIVATE, "--eps", "1",
                "--seed", "2015", "--out", str(out), "--report", str(rep)])
    assert code == 0, capsys.readouterr().err
    # by default the release holds the protected column only: one value (or "") per row
    a = pd.read_csv(DATA, index_col=0, dtype=str, keep_default_na=False)
    b = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(b.columns) == ["Occupancy"] and len(b) == len(a)
    red = (b["Occupancy"] == "").to_numpy()
    assert red[1119:1179].all()
    assert np.array_equal(a["Occupancy"].to_numpy()[~red], b["Occupancy"].to_numpy()[~red])

    r = json.loads(rep.read_text())
    mech = mechanism_from_dict(r["mechanism"])
    assert mech.private == tuple(range(1119, 1179))
    result = audit(mech.chain, mech.redact_prob, private=mech.private, eps=1.0)
    assert result["passed"] and result["leakage"] <= 1.0
    # the exact leakage about every private minute, recomputed here
    worst = max(leakage(mech.chain, mech.redact_prob, p).leakage for p in mech.private)
    assert worst == pytest.approx(r["leakage"]["max"], abs=1e-12)
    # the joint design redacts less than the paper's footnote (max of per-minute designs)
    cands = r["design_info"]["candidates"]
    assert cands["joint-dim"] > cands["max-dim"]
    assert r["utility"]["expected"] >= cands["joint-dim"]
    assert r["utility"]["realised"] == pytest.approx(1 - red.mean())
    # the chain: fitted on the rows farther than the reported radius from every private minute, all
    # of which the release publishes with certainty (counted here by hand)
    x = _occupancy()
    priv = np.zeros(x.size, dtype=bool)
    priv[1119:1179] = True
    where = r["chain"]["fit_rows"]
    C, rows = counts_outside(x, priv, where["radius"])
    assert r["chain"]["fit"]["counts"] == {"00": C[0, 0], "01": C[0, 1], "10": C[1, 0], "11": C[1, 1]}
    assert r["chain"]["alpha"] == pytest.approx(C[0, 1] / C[0].sum(), rel=1e-12)
    assert where["rows"] == rows and rows > 7000
    (lo, hi), = r["blocks"]
    assert max(1120 - lo, hi - 1179) <= where["radius"]
    # the audit command reads the report itself and agrees
    capsys.readouterr()
    assert run(["audit", str(rep)]) == 0
    text = capsys.readouterr().out
    assert "PASS" in text and "private=1120-1179 (60 positions)" in text
    assert f"({len(a)} records; --format json lists each)" in text

    # --keep-all: the input's bytes — the header (no name for the id column, quoted names) and every
    # line but the redacted ones — with the same draws
    full = tmp_path / "full.csv"
    assert run(["apply", str(DATA), "--column", "Occupancy", "--private", PRIVATE, "--eps", "1",
                "--seed", "2015", "--out", str(full), "--keep-all"]) == 0
    c = pd.read_csv(full, index_col=0, dtype=str, keep_default_na=False)
    assert a.index.equals(c.index) and list(a.columns) == list(c.columns)
    assert a.drop(columns="Occupancy").equals(c.drop(columns="Occupancy"))
    assert np.array_equal((c["Occupancy"] == "").to_numpy(), red)
    lines_in, lines_out = DATA.read_text().splitlines(), full.read_text().splitlines()
    assert lines_out[0] == lines_in[0] and len(lines_out) == len(lines_in)
    kept = np.flatnonzero(~red) + 1
    assert [lines_out[i] for i in kept] == [lines_in[i] for i in kept]
    assert all(lines_out[i] == lines_in[i].rsplit(",", 1)[0] + "," for i in np.flatnonzero(red) + 1)


def test_kept_light_is_named_as_not_covered_with_its_figure(tmp_path, run, capsys):
    out, rep = tmp_path / "released.csv", tmp_path / "report.json"
    assert run(["apply", str(DATA), "--column", "Occupancy", "--private", PRIVATE, "--eps", "1", "--seed", "2015",
                "--out", str(out), "--report", str(rep), "--keep", "Light"]) == 0
    text = capsys.readouterr().out
    b = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(b.columns) == ["Light", "Occupancy"]
    r = json.loads(rep.read_text())
    (fig,) = r["columns"]["not_covered"]
    assert fig["column"] == "Light" and fig["role"] == "kept" and fig["covered"] is False
    # the figure, recomputed: the best threshold on Light over the rows whose Occupancy is published
    pub = b["Occupancy"] != ""
    light = b["Light"][pub].astype(float).to_numpy()
    occ = b["Occupancy"][pub].astype(int).to_numpy()
    assert fig["rows"] == int(pub.sum())
    assert fig["accuracy"] == pytest.approx(_best_threshold(light, occ), abs=1e-12)
    assert fig["majority"] == pytest.approx(np.bincount(occ).max() / occ.size, abs=1e-12)
    assert fig["accuracy"] > 0.95 > fig["majority"]
    assert "NOT covered: Light (kept): accuracy" in text
    assert "Light" in r["summary"] and "Not covered" in r["summary"]


def test_malformed_row_is_named_with_the_row_id_layout(tmp_path, run, capsys):
    bad = tmp_path / "bad.txt"
    lines = DATA.read_text().splitlines()
    fields = lines[5].split(",")
    fields[-1] = "2"
    lines[5] = ",".join(fields)
    bad.write_text("\n".join(lines) + "\n")
    out = tmp_path / "o.csv"
    assert run(["apply", str(bad), "--column", "Occupancy", "--private", "10", "--eps", "1",
                "--out", str(out)]) == 2
    assert "row 5, column 'Occupancy': value '2' is not 0 or 1" in capsys.readouterr().err
    assert not out.exists()
