"""Releases private for a class of chains (issue 14): ``apply --robust LEVEL`` and ``--alpha/--beta LO:HI``.

Independent checks: the box is the Wilson interval of the transition counts at level
1 - (1 - LEVEL)/2 (recomputed here from the raw column, on the rows the report says the fit read); every private record's leakage is
re-evaluated on the mechanism read back from the report at the box's corners and at random
chains inside it (no use of the monotonicity theorem); the point release is shown to leak
more than eps somewhere in the box (so the check can fail).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from conftest import counts_outside
from redactopt.datasets import path as dataset_path
from redactopt.io import read_mechanisms
from redactopt.judge.leakage import leakage
from redactopt.model.chain import MarkovChain
from redactopt.release.apply import apply_table

PRIVATE = list(range(1119, 1179))  # 0-based: the walk-through's lunch hour (1-based 1120-1179)


def _wilson(k: int, m: int, level: float) -> tuple[float, float]:
    z = float(norm.ppf(0.5 + level / 2))
    ph = k / m
    centre = (ph + z * z / (2 * m)) / (1 + z * z / m)
    half = z / (1 + z * z / m) * math.sqrt(ph * (1 - ph) / m + z * z / (4 * m * m))
    return centre - half, centre + half


def _dense(mf) -> np.ndarray:
    return np.asarray(mf.redact_prob.rows(0, mf.n)) if not isinstance(mf.redact_prob, np.ndarray) else mf.redact_prob


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    d = tmp_path_factory.mktemp("robust")
    data = dataset_path()
    robust = apply_table(data, d / "robust.csv", column="Occupancy", eps=1.0, private=PRIVATE, seed=1,
                         report=d / "robust.json", robust=0.9)
    nominal = robust["chain"]["class"]["nominal"]  # the point release of the robust one's estimate
    point = apply_table(data, d / "point.csv", column="Occupancy", eps=1.0, private=PRIVATE, seed=1,
                        report=d / "point.json", alpha=nominal["alpha"], beta=nominal["beta"])
    return d, robust, point, data


def test_box_is_the_bonferroni_wilson_box_of_the_counts(releases):
    _, rep, _, data = releases
    x = pd.read_csv(data)["Occupancy"].to_numpy()
    priv = np.zeros(x.size, dtype=bool)
    priv[PRIVATE] = True
    # the transitions of the rows farther than the reported radius from the private records
    C, _ = counts_outside(x, priv, rep["chain"]["fit_rows"]["radius"])
    assert rep["chain"]["fit_rows"]["transitions"] == C.sum() and C.sum() > 4000
    k01, m0 = int(C[0, 1]), int(C[0].sum())
    k10, m1 = int(C[1, 0]), int(C[1].sum())
    box = rep["chain"]["class"]
    assert box["alpha"] == pytest.approx(_wilson(k01, m0, 0.95), rel=1e-9)  # 1 - (1 - 0.9) / 2
    assert box["beta"] == pytest.approx(_wilson(k10, m1, 0.95), rel=1e-9)
    assert box["nominal"] == {"alpha": pytest.approx(k01 / m0), "beta": pytest.approx(k10 / m1)}


def test_every_chain_of_the_box_is_protected(releases, rng):
    d, rep, _, _ = releases
    mf = read_mechanisms(d / "robust.json")[0][1]
    assert mf.chain_class is not None  # audited for the class by default
    q = _dense(mf)
    (alo, ahi), (blo, bhi) = rep["chain"]["class"]["alpha"], rep["chain"]["class"]["beta"]
    chains = [MarkovChain(a, b) for a in (alo, ahi) for b in (blo, bhi)]
    chains += [MarkovChain(rng.uniform(alo, ahi), rng.uniform(blo, bhi)) for _ in range(6)]
    worst = 0.0
    for c in chains:
        for p in (PRIVATE[0], PRIVATE[29], PRIVATE[-1]):
            worst = max(worst, leakage(c, q, p).leakage)
    assert worst <= 1.0 * (1 + 1e-9)
    assert rep["leakage"]["max"] <= 1.0 * (1 + 1e-12)
    # the reported worst case is attained inside the box (the deciding corner), not only bounded
    corner = MarkovChain(alo, blo)
    assert max(leakage(corner, q, p).leakage for p in PRIVATE) == pytest.approx(rep["leakage"]["max"], rel=1e-9)


def test_point_release_leaks_in_the_box_and_robustness_has_a_price(releases):
    d, rep, point, _ = releases
    q = _dense(read_mechanisms(d / "point.json")[0][1])
    (alo, _), (blo, _) = rep["chain"]["class"]["alpha"], rep["chain"]["class"]["beta"]
    assert max(leakage(MarkovChain(alo, blo), q, p).leakage for p in PRIVATE) > 1.2
    rob = rep["chain"]["robustness"]
    pi = MarkovChain(**rep["chain"]["class"]["nominal"]).stationary
    q_rob = _dense(read_mechanisms(d / "robust.json")[0][1])
    assert rob["expected_redacted_robust"] == pytest.approx(float((q_rob @ pi).sum()), rel=1e-9)
    assert rob["expected_redacted_point"] == pytest.approx(float((q @ pi).sum()), rel=1e-9)
    assert rob["expected_redacted_robust"] > rob["expected_redacted_point"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "redactopt", *args], capture_output=True, text=True)


def test_cli_box_and_degenerate_box(tmp_path):
    data = str(dataset_path())
    common = ["apply", data, "--column", "Occupancy", "--private", "1120-1179", "--eps", "1", "--seed", "3"]
    r = _cli(*common, "--alpha", "0.002:0.005", "--beta", "0.0075:0.018", "--out", str(tmp_path / "a.csv"),
             "--report", str(tmp_path / "a.json"), "--format", "json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["chain"]["class"]["alpha"] == [0.002, 0.005] and s["chain"]["source"] == "given"
    audit = _cli("audit", str(tmp_path / "a.json"))
    assert audit.returncode == 0 and "PASS" in audit.stdout
    # a degenerate box is the point chain: the same release, byte for byte
    r1 = _cli(*common, "--alpha", "0.003:0.003", "--beta", "0.012", "--out", str(tmp_path / "b.csv"))
    r2 = _cli(*common, "--alpha", "0.003", "--beta", "0.012", "--out", str(tmp_path / "c.csv"))
    assert r1.returncode == 0 and r2.returncode == 0, r1.stderr + r2.stderr
    assert (tmp_path / "b.csv").read_bytes() == (tmp_path / "c.csv").read_bytes()


@pytest.mark.parametrize("extra, words", [
    (["--robust", "0.95", "--alpha", "0.003", "--beta", "0.012"], "--robust"),
    (["--robust", "1.5"], "--robust"),
    (["--alpha", "0.005:0.002", "--beta", "0.01"], "--alpha"),
])
def test_cli_refuses_bad_robust_options(tmp_path, extra, words):
    r = _cli("apply", str(dataset_path()), "--column", "Occupancy", "--private", "5", "--eps", "1",
             "--out", str(tmp_path / "o.csv"), *extra)
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "o.csv").exists()
