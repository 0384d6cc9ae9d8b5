"""``apply NEW_ROWS --ledger FILE --extend`` (issue 39, item 3; docs/releases.md "Extending a series").

Independent numbers: the releases of an extended series together are one local mechanism on the whole
series — each release's factor on the rows it showed, 1 (not shown) elsewhere — read from the ledger's JSON
by hand, and every joint output of the releases of a six-record series is enumerated in exact fractions
(the enumerator of tests/test_ledger_apply.py, which treats each release as drawing on every row).
"""

from __future__ import annotations

import json
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest

from test_ledger_apply import leakage_by_enumeration, run

CHAIN = ("--alpha", "0.25", "--beta", "0.375")
SERIES = [0, 1, 1, 0, 1, 1]


def write(path: Path, values) -> Path:
    path.write_text("v\n" + "\n".join(map(str, values)) + "\n")
    return path


def apply(capsys, d: Path, src: Path, name: str, *extra: str, column: str = "v") -> tuple[int, str, str]:
    return run(capsys, "apply", src, "--column", column, "--out", d / f"{name}.csv", "--report", d / f"{name}.json",
               "--ledger", d / "ledger.json", "--quiet", *extra)


def factors_by_hand(ledger: dict, n: int) -> list[list[list[F]]]:
    """Every release's factor of the whole series: 1 where it showed nothing, 0 on the rows it showed and did
    not design, its blocks elsewhere (all read from the JSON)."""
    out = []
    for r in ledger["releases"]:
        q = [[F(1), F(1)] for _ in range(n)]
        for _, first, last in r["covers"]:
            for t in range(first - 1, last):
                q[t] = [F(0), F(0)]
        for s in r["sequences"]:
            for b in s["factor"]:
                for i, row in enumerate(b["redact_prob"]):
                    q[b["start"] - 1 + i] = [F(v) for v in row]
        out.append(q)
    return out


def released(path: Path) -> list[str]:
    return path.read_text().splitlines()[1:]


def test_an_open_private_record_stays_within_the_total(tmp_path, capsys):
    """Record 4 of 4 is private: the first release cannot publish after it.  Two rows appended without private
    records of their own: the record's cumulative leakage over both releases stays within the total."""
    old, new = write(tmp_path / "old.csv", SERIES[:4]), write(tmp_path / "new.csv", SERIES[4:])
    code, _, err = apply(capsys, tmp_path, old, "r1", "--private", "4", "--eps", "0.6", "--total-eps", "1", *CHAIN)
    assert code == 0, err
    code, out, err = apply(capsys, tmp_path, new, "r2", "--private", "none", "--eps", "1", "--extend")
    assert code == 0, err
    led = json.loads((tmp_path / "ledger.json").read_text())
    assert led["dataset"]["rows"] == 6 and led["dataset"]["sequences"] == [[None, 6]]
    fac = factors_by_hand(led, 6)
    before = leakage_by_enumeration([f[:4] for f in fac[:1]], [False], 3, 4)
    cum = leakage_by_enumeration(fac, [False, False], 3, 6)
    assert before == pytest.approx(led["releases"][0]["cumulative"], abs=1e-9)
    assert before - 1e-12 <= cum <= 1.0 + 1e-12
    assert led["releases"][1]["cumulative"] == pytest.approx(cum, abs=1e-9)
    assert led["releases"][1]["extends"] is True
    # the release holds the two new rows only, and publishes something of them
    assert len(released(tmp_path / "r2.csv")) == 2
    rep = json.loads((tmp_path / "r2.json").read_text())
    row = rep["sequences"][0]
    assert row["first"] == 5 and row["open_earlier"] == [4]
    assert rep["utility"]["expected"] <= rep["utility"]["upper_bound"] + 1e-12
    # the page shows the ledger: the history, with this release's cumulative leakage
    from redactopt.interface.html import report_html

    page = report_html(rep)
    exact = page.split('data-key="ledger.releases.1.cumulative" data-value="')[1].split('"')[0]
    assert float(exact) == rep["ledger"]["releases"][1]["cumulative"]
    # audit --ledger re-judges it the same way
    code, text, _ = run(capsys, "audit", "--ledger", tmp_path / "ledger.json", "--format", "json")
    a = json.loads(text)
    assert code == 0 and a["passed"] and a["stored_matches"]
    assert a["releases"][1]["cumulative"] == pytest.approx(cum, abs=1e-9)


def test_a_closed_private_record_is_unchanged_and_new_ones_are_protected(tmp_path, capsys):
    """Record 1 private, series of four: its design publishes the end, so appending cannot change its leakage;
    a new private record (row 6 of the extended series) stays within --eps alone and the total together."""
    old, new = write(tmp_path / "old.csv", [0, 1, 1, 0, 0, 1][:4]), write(tmp_path / "new.csv", [0, 1])
    assert apply(capsys, tmp_path, old, "r1", "--private", "1", "--eps", "0.5", "--total-eps", "1", *CHAIN)[0] == 0
    led0 = json.loads((tmp_path / "ledger.json").read_text())
    q1 = factors_by_hand(led0, 4)[0]
    code, _, err = apply(capsys, tmp_path, new, "r2", "--private", "2", "--eps", "0.9", "--extend")
    assert code == 0, err
    led = json.loads((tmp_path / "ledger.json").read_text())
    fac = factors_by_hand(led, 6)
    assert fac[0][:4] == q1 and fac[1][:4] == [[F(1), F(1)]] * 4
    old_alone = leakage_by_enumeration([q1], [False], 0, 4)
    assert any(q1[t] == [F(0), F(0)] for t in range(1, 4))  # the design publishes a row after record 1
    assert leakage_by_enumeration(fac, [False, False], 0, 6) == pytest.approx(old_alone, abs=1e-12)
    new_cum = leakage_by_enumeration(fac, [False, False], 5, 6)
    new_alone = leakage_by_enumeration([[[F(1), F(1)]] * 4 + fac[1][4:]], [False], 5, 6)
    assert new_cum <= 1.0 + 1e-12 and new_alone <= 0.9 + 1e-12
    seq = led["releases"][1]["sequences"][0]
    assert seq["private"] == [6] and seq["first"] == 5
    assert seq["cumulative"][0] == pytest.approx(new_cum, abs=1e-9)
    assert seq["leakage_alone"][0] == pytest.approx(new_alone, abs=1e-9)


@pytest.mark.slow
def test_many_sequences_extended(tmp_path, capsys):
    """Two homes released, then two more hours of each appended (--by): every private record of the extended
    series within the total, checked by the library's exact leakage on the whole composed mechanism."""
    from homes import make_homes

    from redactopt import MarkovChain
    from redactopt.judge.leakage import leakage

    df = make_homes(39, homes=2, days=1, optout_homes=(0, 1), window=3, shuffle=False)
    cut = df.groupby("home").cumcount() < 1100
    df[cut][["home", "occupied", "optout"]].to_csv(tmp_path / "old.csv", index=False)
    new = df[~cut][["home", "occupied", "optout"]].copy()
    new["optout"] = 0
    new.loc[new.groupby("home").cumcount() == 200, "optout"] = 1  # one new private record per home
    new.to_csv(tmp_path / "new.csv", index=False)
    base = ("--by", "home", "--private-column", "optout", "--method", "dim")
    code, _, err = apply(capsys, tmp_path, tmp_path / "old.csv", "r1", *base, "--eps", "0.6", "--total-eps", "1",
                         "--alpha", "0.01", "--beta", "0.02", column="occupied")
    assert code == 0, err
    code, _, err = apply(capsys, tmp_path, tmp_path / "new.csv", "r2", *base, "--eps", "1", "--extend",
                         column="occupied")
    assert code == 0, err
    led = json.loads((tmp_path / "ledger.json").read_text())
    chain = MarkovChain(0.01, 0.02)
    checked = 0
    for sid, n in led["dataset"]["sequences"]:
        q = np.ones((n, 2))
        for r in led["releases"]:
            f = np.ones((n, 2))
            for s_, a, b in r["covers"]:
                if s_ == sid:
                    f[a - 1:b] = 0.0
            for s in r["sequences"]:
                if s["id"] == sid:
                    for blk in s["factor"]:
                        rows = np.array(blk["redact_prob"], dtype=float)
                        f[blk["start"] - 1:blk["start"] - 1 + len(rows)] = rows
            q *= f
        private = sorted({p for r in led["releases"] for s in r["sequences"] if s["id"] == sid for p in s["private"]})
        for p in private:
            assert leakage(chain, q, p - 1).leakage <= 1.0 + 1e-9
            checked += 1
    assert checked == 8  # three opted-out records per home, and one new one each


def test_refusals(tmp_path, capsys):
    old, new = write(tmp_path / "old.csv", SERIES[:4]), write(tmp_path / "new.csv", SERIES[4:])
    code, _, err = apply(capsys, tmp_path, new, "r0", "--private", "none", "--eps", "1", "--extend", "--total-eps", "1",
                         *CHAIN)
    assert code == 2 and "no release yet" in err
    assert apply(capsys, tmp_path, old, "r1", "--private", "1", "--eps", "0.5", "--total-eps", "0.5", *CHAIN)[0] == 0
    before = (tmp_path / "ledger.json").read_bytes()
    led = json.loads(before)
    assert factors_by_hand(led, 4)[0][3] == [F(0), F(0)]  # the first release published row 4 with certainty
    code, _, err = apply(capsys, tmp_path, new, "r2", "--private", "none", "--eps", "1", "--extend", "--consistent")
    assert code == 2 and "--consistent" in err
    # a new private record right after a row published with certainty: its neighbour's value alone leaks
    # more than the total, whatever the new rows show
    P = [[F(3, 4), F(1, 4)], [F(3, 8), F(5, 8)]]
    import math
    neighbour = max(math.log(P[a][0] / P[a][1]) if P[a][0] > P[a][1] else math.log(P[a][1] / P[a][0])
                    for a in (0, 1))  # Pr(X5 = c | X4 = a) / Pr(X5 = c' | X4 = a) ... bounded below by this
    assert neighbour > 0.5
    code, _, err = apply(capsys, tmp_path, new, "r2", "--private", "1", "--eps", "0.5", "--extend")
    assert code == 2 and "budget is spent" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "r2.csv").exists() and (tmp_path / "ledger.json").read_bytes() == before
    code, _, err = run(capsys, "apply", new, "--column", "v", "--private", "none", "--eps", "1", "--out",
                       tmp_path / "x.csv", "--extend")
    assert code == 2 and "--extend applies with --ledger" in err
