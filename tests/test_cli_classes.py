"""Mechanism classes on the command line (issue 26): design/compare/apply --class and audit of class files.

Every number is derived here independently of the code under test: Example 1 of the paper in
closed form and, for every class at n = 2, the linear program of Definition 1 written out by hand
(four variables); the Fig. 3 point (0.8716, computed outside the project, issue 26); leakage and
utility of a scan file by enumerating every sequence of its side straight from the file format's
definition; a tampered stop probability's leakage from the chain's transition ratios.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

FIG3 = (0.01, 0.8)
K3 = "0.6,0.3,0.1;0.2,0.5,0.3;0.3,0.3,0.4"


def _one_line_error(err: str, command: str, needle: str) -> None:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"redactopt {command}: error: "), err
    assert needle in err, err


def _binary(alpha: float, beta: float) -> tuple[list[list[float]], list[float]]:
    return [[1 - alpha, alpha], [beta, 1 - beta]], [beta / (alpha + beta), alpha / (alpha + beta)]


def _right_side(P: list[list[float]], S: list, m: int) -> dict:
    """Pr(event | X_p = x) of a scan's right side, by enumerating every sequence of its m records:
    event (d, v) = first release at distance d on value v, "none" = all redacted (file format:
    S[d-1][c][v], c the side's first record; a shorter S ends in a row of ones)."""
    k = len(P)
    ev: dict = {}
    for x in range(k):
        for seq in itertools.product(range(k), repeat=m):
            pr = P[x][seq[0]] * math.prod(P[a][b] for a, b in zip(seq, seq[1:]))
            alive = 1.0
            for d in range(min(m, len(S))):
                s = S[d][seq[0]][seq[d]]
                ev.setdefault((d + 1, seq[d]), [0.0] * k)[x] += pr * alive * s
                alive *= 1.0 - s
            ev.setdefault("none", [0.0] * k)[x] += pr * alive
    return ev


def _leakage_and_utility(P: list[list[float]], pi: list[float], S: list, n: int) -> tuple[float, float]:
    """Definition 1 and 2 of a scan whose private record is the first (only a right side of n - 1 records)."""
    m = n - 1
    ev = _right_side(P, S, m)
    worst = 0.0
    for probs in ev.values():
        if max(probs) > 0:
            worst = max(worst, math.inf if min(probs) == 0 else math.log(max(probs) / min(probs)))
    published = sum(pi[x] * pr[x] * (m - key[0] + 1) for key, pr in ev.items() if key != "none"
                    for x in range(len(pi)))
    return worst, published / n


def _lp_n2(alpha: float, beta: float, eps: float, holder: bool) -> float:
    """The best mechanism at n = 2, private record 1, by its linear program written out: q[x][v] =
    Pr(publish X_2 | X_1 = x, X_2 = v); outputs 'X_2 = v' (probability P(x,v) q[x][v]) and ⊥.  Without
    the holder's reading of X_1, q[0][v] = q[1][v] (at n = 2 every owner mechanism is local)."""
    from scipy.optimize import linprog

    P, pi = _binary(alpha, beta)
    E = math.exp(eps)
    idx = {(x, v): 2 * x + v for x in range(2) for v in range(2)}
    c = np.zeros(4)
    for (x, v), i in idx.items():
        c[i] = -pi[x] * P[x][v] / 2
    A, b = [], []
    for x, y in ((0, 1), (1, 0)):
        for v in range(2):  # Pr(v | x) <= E Pr(v | y)
            row = np.zeros(4)
            row[idx[x, v]] += P[x][v]
            row[idx[y, v]] -= E * P[y][v]
            A.append(row)
            b.append(0.0)
        row = np.zeros(4)  # Pr(⊥ | x) <= E Pr(⊥ | y), Pr(⊥ | x) = 1 - sum_v P(x,v) q[x][v]
        for v in range(2):
            row[idx[x, v]] -= P[x][v]
            row[idx[y, v]] += E * P[y][v]
        A.append(row)
        b.append(E - 1.0)
    eq = None if holder else [[1, 0, -1, 0], [0, 1, 0, -1]]
    res = linprog(c, A_ub=A, b_ub=b, A_eq=eq, b_eq=None if holder else [0, 0], bounds=[(0, 1)] * 4,
                  method="highs")
    assert res.status == 0
    return -res.fun


def _json(capsys: pytest.CaptureFixture) -> object:
    return json.loads(capsys.readouterr().out)


# --------------------------------------------------------------------------
# compare --class: Example 1 (n = 2) and the order of the classes at the Fig. 3 point
# --------------------------------------------------------------------------
def test_example1_every_class_at_n2(run, capsys):
    # Example 1 of the paper (n = 2, alpha = 0.25, beta = 0.5, eps = 0.5), closed form: the all-⊥
    # constraint holds with equality, p2 = Pr(⊥ | X_2 = 0), X_2 = 1 always redacted
    a = math.exp(-0.5)
    p2 = (0.5 * a - 0.25) / (0.75 - 0.5 * a)
    want = (1.0 - p2) * (2.0 / 3.0) / 2.0
    assert want == pytest.approx(0.2936, abs=1e-4)
    assert _lp_n2(0.25, 0.5, 0.5, holder=False) == pytest.approx(want, abs=1e-9)
    holder = _lp_n2(0.25, 0.5, 0.5, holder=True)
    assert holder > want + 0.1
    assert run(["compare", "--class", "holder,local,scan,owner", "--n", "2", "--alpha", "0.25", "--beta", "0.5",
                "--eps", "0.5", "--format", "json"]) == 0
    rows = {r["class"]: r for r in _json(capsys)}
    assert list(rows) == ["local", "scan", "owner", "holder"]  # the order of the classes, whatever was typed
    for cls, r in rows.items():
        assert (r["n"], r["private"], r["eps"], r["alpha"], r["beta"]) == (2, 1, 0.5, 0.25, 0.5)
        assert r["leakage"] <= 0.5 + 1e-12
        assert r["upper_bound"] >= r["utility"] - 1e-12
        assert r["utility"] == pytest.approx(holder if cls == "holder" else want, abs=1e-6)
        assert r["upper_bound"] == pytest.approx(holder if cls == "holder" else want, abs=1e-6)


def test_compare_text_table(run, capsys):
    assert run(["compare", "--class", "local,scan", "--n", "2", "--alpha", "0.25", "--beta", "0.5",
                "--eps", "0.5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "n=2  p=1  eps=0.5  alpha=0.25  beta=0.5"
    assert lines[1].split()[:3] == ["class", "utility", "upper"]
    assert [ln.split()[0] for ln in lines[2:]] == ["local", "scan"]
    assert [round(float(ln.split()[1]), 4) for ln in lines[2:]] == [0.2936, 0.2936]


def test_compare_class_plot_draws_each_class_against_eps(run, capsys, tmp_path):
    # Example 1's chain at two budgets: the verified utilities on the figure are the table's
    fig = tmp_path / "classes.svg"
    assert run(["compare", "--class", "local,scan", "--n", "2", "--alpha", "0.25", "--beta", "0.5",
                "--eps", "0.5,1", "--format", "json", "--out", str(tmp_path / "rows.json"), "--plot", str(fig)]) == 0
    rows = json.loads((tmp_path / "rows.json").read_text())
    svg = fig.read_text()
    assert 'id="class-local"' in svg and 'id="class-scan"' in svg and 'id="class-band-scan"' in svg
    a = math.exp(-0.5)
    p2 = (0.5 * a - 0.25) / (0.75 - 0.5 * a)
    assert [round(r["utility"], 4) for r in rows if r["eps"] == 0.5] == [round((1.0 - p2) / 3.0, 4)] * 2
    # several settings cannot share one figure: refused before any design, nothing written
    assert run(["compare", "--class", "scan", "--n", "2,3", "--eps", "0.5", "--plot", str(tmp_path / "x.png")]) == 2
    _one_line_error(capsys.readouterr().err, "compare", "one --n")
    assert not (tmp_path / "x.png").exists()


def test_classes_grow_along_the_chain_at_the_fig3_point(run, capsys):
    # n = 10, p = 1, alpha = 0.01, beta = 0.8, eps = 0.5: local 0.7384 (the paper's setting, certified),
    # scan 0.8716 (issue 26, computed outside the project), owner 0.8734
    assert run(["compare", "--class", "local,scan,owner", "--n", "10", "--eps", "0.5", "--format", "json"]) == 0
    rows = {r["class"]: r for r in _json(capsys)}
    assert [round(rows[c]["utility"], 4) for c in ("local", "scan", "owner")] == [0.7384, 0.8716, 0.8734]
    assert rows["local"]["utility"] <= rows["scan"]["utility"] <= rows["owner"]["utility"]
    for r in rows.values():
        assert r["leakage"] <= 0.5 + 1e-12 and r["gap"] <= 1e-6
        assert r["upper_bound"] >= r["utility"]
    # each bound covers its class only: the local optimum's bound lies below the scan design
    assert rows["local"]["upper_bound"] < rows["scan"]["utility"] < rows["owner"]["upper_bound"] + 1e-12


# --------------------------------------------------------------------------
# design --class
# --------------------------------------------------------------------------
def test_design_scan_fig3_point_file_judged_by_enumeration(run, capsys, tmp_path):
    out = tmp_path / "scan.json"
    assert run(["design", "--class", "scan", "--n", "10", "--eps", "0.5", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("design: class=scan  n=10  p=1  eps=0.5")
    shown = next(ln for ln in text.splitlines() if ln.startswith("utility"))
    assert round(float(shown.split(":")[1]), 4) == 0.8716 and text.rstrip().endswith(f"wrote {out}")
    d = json.loads(out.read_text())
    assert d["format"] == "redactopt.class-mechanism/1" and d["class"] == "scan" and d["holder"] is False
    assert d["sides"]["left"] is None and d["n"] == 10 and d["private"] == [1] and d["eps"] == 0.5
    S = d["sides"]["right"]["stop"]
    assert np.array(S).shape[1:] == (2, 2)
    P, pi = _binary(*FIG3)
    leak, util = _leakage_and_utility(P, pi, S, 10)
    assert round(util, 4) == 0.8716
    assert util == pytest.approx(d["utility"], abs=1e-12)
    assert leak == pytest.approx(d["leakage"], abs=1e-9) and leak <= 0.5 + 1e-12
    assert d["certificate"]["upper_bound"] >= d["utility"] and d["certificate"]["gap"] <= 1e-6
    # --format json prints the same file
    assert run(["design", "--class", "scan", "--n", "10", "--eps", "0.5", "--format", "json"]) == 0
    assert _json(capsys)["sides"] == d["sides"]


def test_audit_of_a_class_file_passes_and_a_tampered_one_fails(run, capsys, tmp_path):
    out = tmp_path / "scan.json"
    assert run(["design", "--class", "scan", "--n", "10", "--eps", "0.5", "--format", "json", "--out", str(out)]) == 0
    capsys.readouterr()
    assert run(["audit", str(out)]) == 0
    text = capsys.readouterr().out
    assert "result    : PASS" in text and "(exact, nats)" in text
    d = json.loads(out.read_text())
    # publish the first record after p for sure when it is 1: its event has probability P(x, 1) under
    # X_p = x, a ratio of P(1,1)/P(0,1) = 0.2/0.01 = 20 -- far above e^0.5
    d["sides"]["right"]["stop"][0][1][1] = 1.0
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(d))
    assert run(["audit", str(bad), "--format", "json"]) == 1
    rep = _json(capsys)
    P, pi = _binary(*FIG3)
    leak, _ = _leakage_and_utility(P, pi, d["sides"]["right"]["stop"], 10)
    assert leak >= math.log(0.2 / 0.01) - 1e-12
    assert rep["leakage"] == pytest.approx(leak, rel=1e-9)
    assert rep["passed"] is False and rep["verdict"] == "violated"
    assert run(["audit", str(bad)]) == 1
    assert "result    : FAIL: leakage exceeds eps" in capsys.readouterr().out
    # --eps re-judges against another budget, as for local files
    assert run(["audit", str(out), "--eps", "0.4"]) == 1
    assert "FAIL: leakage exceeds eps" in capsys.readouterr().out


def test_design_kstate_scan_and_owner(run, capsys, tmp_path):
    # one-sided (private record 1), three states: the scan file judged by enumeration, owner >= scan
    out = tmp_path / "k.json"
    assert run(["design", "--class", "scan", "--transition", K3, "--labels", "low,mid,high", "--n", "5", "--eps", "1",
                "--format", "json", "--out", str(out)]) == 0
    capsys.readouterr()
    d = json.loads(out.read_text())
    assert d["states"] == ["low", "mid", "high"] and np.array(d["sides"]["right"]["stop"]).shape[1:] == (3, 3)
    P = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]]
    w, v = np.linalg.eig(np.array(P).T)
    pi = np.real(v[:, np.argmin(abs(w - 1))])
    leak, util = _leakage_and_utility(P, list(pi / pi.sum()), d["sides"]["right"]["stop"], 5)
    assert leak <= 1 + 1e-12 and leak == pytest.approx(d["leakage"], abs=1e-9)
    assert util == pytest.approx(d["utility"], abs=1e-12)
    assert run(["audit", str(out)]) == 0
    assert "result    : PASS" in capsys.readouterr().out
    assert run(["compare", "--class", "local,scan,owner", "--transition", K3, "--n", "5", "--eps", "1",
                "--format", "json"]) == 0
    rows = {r["class"]: r for r in _json(capsys)}
    assert rows["scan"]["utility"] == pytest.approx(d["utility"], abs=1e-9)
    assert rows["local"]["utility"] <= rows["scan"]["utility"] + 1e-12 <= rows["owner"]["utility"] + 2e-12
    assert rows["owner"]["upper_bound"] >= rows["owner"]["utility"]


def test_library_design_takes_the_class():
    import redactopt
    from redactopt.judge.certify import DesignResult

    chain = redactopt.MarkovChain(*FIG3)
    d = redactopt.design(chain, 10, eps=0.5, cls="scan")
    assert round(d.utility, 4) == 0.8716 and d.cls == "scan" and d.certificate.upper_bound >= d.utility
    assert isinstance(redactopt.design(chain, 4, eps=0.5, method="dim"), DesignResult)  # local: unchanged
    with pytest.raises(ValueError, match="local, scan, owner, holder"):
        redactopt.design(chain, 10, eps=0.5, cls="bogus")
    with pytest.raises(ValueError, match="method"):
        redactopt.design(chain, 10, eps=0.5, cls="scan", method="dim")


# --------------------------------------------------------------------------
# bad usage: one line, exit 2, nothing written
# --------------------------------------------------------------------------
@pytest.mark.parametrize("argv,needle", [
    (["design", "--class", "bogus", "--n", "5", "--eps", "1"], "the classes are local, scan, owner, holder"),
    (["compare", "--class", "local,bogus", "--n", "5", "--eps", "1"], "the classes are local, scan, owner, holder"),
    (["design", "--class", "scan", "--n", "5", "--eps", "1", "--private", "1,4"], "protects one private record"),
    (["design", "--class", "owner", "--n", "5", "--eps", "1", "--private", "2-3"], "apply --class owner"),
    (["design", "--class", "scan", "--n", "5", "--eps", "1", "--method", "dim"], "--method"),
    (["design", "--class", "scan", "--n", "5", "--eps", "1", "--format", "csv"], "--format csv"),
    (["design", "--class", "scan", "--n", "5", "--eps", "1", "--alpha", "0.1:0.2"], "range"),
    (["compare", "--transition", K3, "--n", "5", "--eps", "1", "--alpha", "0.1"], "cannot be combined with --transition"),
])
def test_bad_usage_is_one_line(run, capsys, tmp_path, argv, needle):
    assert run(argv) == 2
    _one_line_error(capsys.readouterr().err, argv[0], needle)


def test_help_names_every_class_option(run, capsys):
    for command in ("design", "compare", "apply"):
        assert run([command, "--help"]) == 0
        text = " ".join(capsys.readouterr().out.split())
        assert "--class" in text and "scan" in text and "holder" in text, command
    assert run(["compare", "--help"]) == 0
    assert "--transition" in capsys.readouterr().out


# --------------------------------------------------------------------------
# apply --class scan: the release, its report, its audit
# --------------------------------------------------------------------------
def _table(path: Path) -> pd.DataFrame:
    rng = np.random.default_rng(26)
    P, pi = _binary(0.1, 0.3)
    rows = []
    for s, private in (("a", 6), ("b", 6), ("c", 20), ("d", None)):
        x = int(rng.random() < pi[1])
        for t in range(40):
            rows.append({"sid": s, "t": t, "occ": x, "optout": int(t + 1 == private), "copy": x})
            x = int(rng.random() < P[x][1])
    df = pd.DataFrame(rows)
    df.to_csv(path, index=False)
    return df


def _check_scan_release(x: list[int], y: list, p: int) -> None:
    """Each side of p: ⊥ up to its first published record, then every record as in the input."""
    assert y[p] is None
    for step in (-1, 1):
        pos = list(range(p + step, -1 if step < 0 else len(x), step))
        first = next((i for i, t in enumerate(pos) if y[t] is not None), len(pos))
        assert all(y[t] is None for t in pos[:first])
        assert all(y[t] == x[t] for t in pos[first:])


def test_apply_scan_release_report_and_audit(run, capsys, tmp_path):
    src, out, rep_path = tmp_path / "in.csv", tmp_path / "out.csv", tmp_path / "rep.json"
    df = _table(src)
    argv = ["apply", str(src), "--column", "occ", "--by", "sid", "--private-column", "optout", "--eps", "1",
            "--alpha", "0.1", "--beta", "0.3", "--class", "scan", "--seed", "5", "--time-limit", "20",
            "--keep", "copy", "--out", str(out), "--report", str(rep_path)]
    assert run(argv) == 0
    text = capsys.readouterr().out
    assert "class     : scan" in text and "NOT covered: copy (kept)" in text and "not written: t, optout" in text
    rel = pd.read_csv(out, dtype={"occ": "Int64"})
    assert list(rel.columns) == ["sid", "occ", "copy"] and (rel["copy"] == df["copy"]).all()
    published = 0
    for s, private in (("a", 6), ("b", 6), ("c", 20), ("d", None)):
        x = df.loc[df.sid == s, "occ"].tolist()
        y = [None if pd.isna(v) else int(v) for v in rel.loc[rel.sid == s, "occ"]]
        if private is None:
            assert y == x  # no private record: released unchanged
        else:
            _check_scan_release(x, y, private - 1)
        published += sum(v is not None for v in y)
    rep = json.loads(rep_path.read_text())
    assert rep["format"] == "redactopt.class-release/1" and rep["class"] == "scan" and rep["by"] == "sid"
    assert rep["utility"]["redacted"] == len(df) - published
    assert [s["design"] for s in rep["sequences"]] == [0, 0, 1, None]  # a and b share one design
    mechs = [m for des in rep["designs"] for m in des["mechanisms"]]
    assert [m["class"] for m in mechs] == ["scan", "scan"] and [m["private"] for m in mechs] == [[6], [20]]
    assert rep["leakage"]["max"] <= 1 + 1e-12 and rep["randomness"]["secure"] is False
    # the same seed draws the same release
    out2 = tmp_path / "out2.csv"
    assert run(argv[:-4] + ["--out", str(out2)]) == 0
    capsys.readouterr()
    assert out2.read_text() == out.read_text()
    # the report's mechanisms, audited exactly
    assert run(["audit", str(rep_path)]) == 0
    text = capsys.readouterr().out
    assert text.count("result    : PASS") == 2 and "overall   : PASS (2 of 2 mechanisms pass)" in text
    assert "(sequences: a, b)" in text
    # tampered: design 2 publishes the first record on the right for sure whatever its value, so the
    # right side alone tells P(x, v) apart: log max_v P(x,v)/P(x',v) = log(0.7/0.1) > eps
    S = rep["designs"][1]["mechanisms"][0]["sides"]["right"]["stop"]
    S[0] = [[1.0, 1.0], [1.0, 1.0]]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(rep))
    assert run(["audit", str(bad), "--format", "json"]) == 1
    got = _json(capsys)
    assert got["passed"] is False and [m["passed"] for m in got["mechanisms"]] == [True, False]
    assert got["mechanisms"][1]["leakage"] >= math.log(0.7 / 0.1) - 1e-12


def test_apply_scan_refuses_two_private_records_in_a_sequence(run, capsys, tmp_path):
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    _table(src)
    assert run(["apply", str(src), "--column", "occ", "--private", "3,30", "--eps", "1", "--alpha", "0.1",
                "--beta", "0.3", "--class", "scan", "--out", str(out)]) == 2
    _one_line_error(capsys.readouterr().err, "apply", "protects one private record per sequence")
    assert not out.exists()
    assert run(["apply", str(src), "--column", "occ", "--private", "3", "--eps", "1", "--class", "scan",
                "--robust", "0.95", "--out", str(out)]) == 2
    _one_line_error(capsys.readouterr().err, "apply", "--robust applies to --class local only")
    assert run(["apply", str(src), "--column", "occ", "--private", "3", "--eps", "1", "--class", "bogus",
                "--out", str(out)]) == 2
    _one_line_error(capsys.readouterr().err, "apply", "the classes are local, scan, owner, holder")
    assert not out.exists()


def test_apply_owner_protects_two_private_records_with_disjoint_blocks(run, capsys, tmp_path):
    src, out, rep_path = tmp_path / "in.csv", tmp_path / "out.csv", tmp_path / "rep.json"
    df = _table(src)
    vals = df.loc[df.sid == "a", "occ"].tolist()
    pd.DataFrame({"occ": vals}).to_csv(src, index=False)
    assert run(["apply", str(src), "--column", "occ", "--alpha", "0.1", "--beta", "0.3", "--private", "10,30",
                "--eps", "1", "--class", "owner", "--seed", "1", "--out", str(out), "--report", str(rep_path)]) == 0
    capsys.readouterr()
    rep = json.loads(rep_path.read_text())
    mechs = rep["designs"][0]["mechanisms"]
    assert [m["private"] for m in mechs] == [[10], [30]] and all("block" in m for m in mechs)
    spans = [(m["block"]["start"], m["block"]["start"] + m["block"]["n"] - 1) for m in mechs]
    assert spans[0][1] < spans[1][0]  # disjoint
    rel = [None if pd.isna(v) else int(v) for v in pd.read_csv(out)["occ"]]
    for t, v in enumerate(vals):  # outside the blocks everything is published
        if not any(a <= t + 1 <= b for a, b in spans):
            assert rel[t] == v
    assert rel[9] is None and rel[29] is None
    assert run(["audit", str(rep_path)]) == 0
    assert "overall   : PASS (2 of 2 mechanisms pass)" in capsys.readouterr().out


def test_apply_kstate_scan_with_labels(run, capsys, tmp_path):
    src, out, rep_path = tmp_path / "in.csv", tmp_path / "out.csv", tmp_path / "rep.json"
    P = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]]
    rng = np.random.default_rng(7)
    x, vals = 0, []
    for _ in range(30):
        vals.append(["low", "mid", "high"][x])
        x = int(rng.choice(3, p=P[x]))
    pd.DataFrame({"room": vals}).to_csv(src, index=False)
    chain = tmp_path / "chain.json"
    chain.write_text(json.dumps({"transition": P, "labels": ["low", "mid", "high"]}))
    assert run(["apply", str(src), "--column", "room", "--transition", str(chain), "--private", "1", "--eps", "1",
                "--class", "scan", "--seed", "3", "--out", str(out), "--report", str(rep_path)]) == 0
    assert "states    : low, mid, high" in capsys.readouterr().out
    rel = [None if pd.isna(v) else v for v in pd.read_csv(out)["room"]]
    _check_scan_release(vals, rel, 0)
    rep = json.loads(rep_path.read_text())
    assert rep["designs"][0]["mechanisms"][0]["states"] == ["low", "mid", "high"]
    assert run(["audit", str(rep_path)]) == 0
    assert "result    : PASS" in capsys.readouterr().out
