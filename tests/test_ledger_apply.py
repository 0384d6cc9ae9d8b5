"""``apply --ledger FILE --total-eps E [--consistent]`` (issue 39, item 2; docs/releases.md "Releasing again").

The numbers are derived here, independently of the library: the ledger's factors (read from the JSON by
hand) and the chain define the joint law of every release's output; every joint output of two or three
releases of a sequence of six records is enumerated in exact fractions (the doubles are read as the exact
rationals they are), by a depth-first walk carrying ``Pr(y_1..t, X_t = ., X_p = c)``, and Definition 1 is
taken from those likelihoods.  A ``--consistent`` release is enumerated as what it does — it shows every
value an earlier output showed and draws afresh only where all of them were redacted — not as a product.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction as F
from itertools import product as cartesian
from pathlib import Path

import numpy as np
import pytest

ALPHA, BETA = F(1, 4), F(3, 8)  # dyadic: the doubles are these fractions
P = [[1 - ALPHA, ALPHA], [BETA, 1 - BETA]]
PI = [BETA / (ALPHA + BETA), ALPHA / (ALPHA + BETA)]
SERIES = [0, 1, 1, 0, 0, 1]  # six records; record 3 (1-based) private


def run(capsys, *args: str) -> tuple[int, str, str]:
    from redactopt.interface.cli import main

    capsys.readouterr()
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def release(capsys, d: Path, name: str, *extra: str, private: str = "3", series=SERIES) -> tuple[int, str, str]:
    src = d / "s.csv"
    if not src.exists():
        src.write_text("v\n" + "\n".join(map(str, series)) + "\n")
    return run(capsys, "apply", src, "--column", "v", "--private", private, "--out", d / f"{name}.csv",
               "--report", d / f"{name}.json", "--ledger", d / "ledger.json", "--quiet", *extra)


def factors_by_hand(ledger: dict, n: int) -> list[list[list[F]]]:
    """Every release's factor of the (only) sequence, dense, read from the ledger's JSON by hand."""
    out = []
    for r in ledger["releases"]:
        q = [[F(0), F(0)] for _ in range(n)]
        for s in r["sequences"]:
            for b in s["factor"]:
                for i, row in enumerate(b["redact_prob"]):
                    q[b["start"] - 1 + i] = [F(v) for v in row]
        out.append(q)
    return out


def emissions(factors: list[list[list[F]]], consistent: list[bool], t: int) -> dict:
    """The law of the tuple of outputs of record ``t`` given its value: ``{symbol: [Pr(symbol | x) for x]}``.

    Release ``i`` draws ``redact`` with probability ``factors[i][t][x]``; it shows the value if its draw
    publishes, or if it is consistent and an earlier output shows it."""
    out: dict = {}
    m = len(factors)
    for x in (0, 1):
        for draws in cartesian((True, False), repeat=m):  # True: this release's fresh draw redacts
            pr = F(1)
            for i, red in enumerate(draws):
                q = factors[i][t][x]
                pr *= q if red else 1 - q
            if pr == 0:
                continue
            shown: list = []
            for i, red in enumerate(draws):
                shown.append(x if (not red or (consistent[i] and any(v is not None for v in shown))) else None)
            out.setdefault(tuple(shown), [F(0), F(0)])[x] += pr
    return out


def leakage_by_enumeration(factors, consistent, p: int, n: int, chain=None) -> float:
    """Definition 1 for the joint output of the releases about record ``p`` (0-based), exactly (``chain``:
    ``(P, PI)``, default the module's)."""
    P_, PI_ = (P, PI) if chain is None else chain
    best = F(1)

    def walk(t: int, f: list[list[F]]) -> None:
        nonlocal best
        if t == n:
            lik = [sum(fc) / PI_[c] for c, fc in enumerate(f)]  # Pr(y | X_p = c)
            if lik[0] == 0 and lik[1] == 0:
                return
            if 0 in lik:
                best = F(10**30)
                return
            best = max(best, lik[0] / lik[1], lik[1] / lik[0])
            return
        for e in emissions(factors, consistent, t).values():
            if t == 0:
                g = [[PI_[x] * e[x] for x in (0, 1)] for _ in (0, 1)]
            else:
                g = [[sum(fc[a] * P_[a][x] for a in (0, 1)) * e[x] for x in (0, 1)] for fc in f]
            if t == p:
                g = [[g[c][x] if x == c else F(0) for x in (0, 1)] for c in (0, 1)]
            if any(any(r) for r in g):
                walk(t + 1, g)

    walk(0, [])
    return math.log(best)


def _keys(obj) -> list[str]:
    if isinstance(obj, dict):
        return [k for k in obj] + [x for v in obj.values() for x in _keys(v)]
    if isinstance(obj, list):
        return [x for v in obj for x in _keys(v)]
    return []


def released_values(path: Path) -> list:
    """The released column, one value per row ('' where redacted; a one-column CSV row is then empty)."""
    lines = path.read_text().splitlines()
    assert lines[0] == "v"
    return lines[1:]


def test_two_independent_releases_stay_within_the_total(tmp_path, capsys):
    code, _, err = release(capsys, tmp_path, "r1", "--eps", "0.5", "--total-eps", "1", "--alpha", "0.25",
                           "--beta", "0.375")
    assert code == 0, err
    code, _, err = release(capsys, tmp_path, "r2", "--eps", "1")  # the total and the chain: from the ledger
    assert code == 0, err
    led = json.loads((tmp_path / "ledger.json").read_text())
    assert led["format"] == "redactopt.ledger/1" and len(led["releases"]) == 2
    assert not any("seed" in k for k in _keys(led))  # no seed material, under any name
    fac = factors_by_hand(led, 6)
    cum = leakage_by_enumeration(fac, [False, False], 2, 6)
    alone2 = leakage_by_enumeration(fac[1:], [False], 2, 6)
    alone1 = leakage_by_enumeration(fac[:1], [False], 2, 6)
    assert cum <= 1.0 + 1e-12
    assert cum >= max(alone1, alone2) - 1e-12
    r2 = led["releases"][1]
    assert r2["cumulative"] == pytest.approx(cum, abs=1e-9)
    assert r2["leakage_alone"] == pytest.approx(alone2, abs=1e-9)
    assert alone2 <= 1.0 + 1e-12
    # the report says the same, and the composed audit of the two reports (a separate reader) agrees
    rep = json.loads((tmp_path / "r2.json").read_text())
    assert rep["ledger"]["release"] == 2 and rep["ledger"]["cumulative"] == pytest.approx(cum, abs=1e-9)
    assert [h["cumulative"] for h in rep["ledger"]["releases"]] == pytest.approx([alone1, cum], abs=1e-9)
    code, out, err = run(capsys, "audit", "--compose", tmp_path / "r1.json", tmp_path / "r2.json", "--eps", "1",
                         "--format", "json")
    assert code == 0, err
    comp = json.loads(out)
    assert comp["passed"] is True and comp["records"][0]["cumulative"] == pytest.approx(cum, abs=1e-9)
    # the second release is worth something: it publishes values the first one did not always publish
    q1, q2 = np.array(fac[0], dtype=float), np.array(fac[1], dtype=float)
    assert (q2 < 1).any() and not np.array_equal(q1 * q2, q1)


def test_three_releases_by_enumeration(tmp_path, capsys):
    assert release(capsys, tmp_path, "r1", "--eps", "0.4", "--total-eps", "1.2", "--alpha", "0.25",
                   "--beta", "0.375")[0] == 0
    assert release(capsys, tmp_path, "r2", "--eps", "0.8")[0] == 0
    code, _, err = release(capsys, tmp_path, "r3", "--eps", "1.2")
    led = json.loads((tmp_path / "ledger.json").read_text())
    if code != 0:  # spent after two: then the refusal must be justified by the two releases' leakage
        assert "budget is spent" in err
        fac = factors_by_hand(led, 6)
        assert len(fac) == 2
        return
    fac = factors_by_hand(led, 6)
    cum = leakage_by_enumeration(fac, [False] * 3, 2, 6)
    assert cum <= 1.2 + 1e-12
    assert led["releases"][2]["cumulative"] == pytest.approx(cum, abs=1e-9)
    for j in (1, 2):  # each release's cumulative is that of the releases up to it
        assert led["releases"][j - 1]["cumulative"] == pytest.approx(
            leakage_by_enumeration(fac[:j], [False] * j, 2, 6), abs=1e-9)


def test_consistent_release_republishes_and_stays_within_the_total(tmp_path, capsys):
    assert release(capsys, tmp_path, "r1", "--eps", "0.5", "--total-eps", "1", "--alpha", "0.25",
                   "--beta", "0.375")[0] == 0
    code, _, err = release(capsys, tmp_path, "r2", "--eps", "1", "--consistent")
    assert code == 0, err
    led = json.loads((tmp_path / "ledger.json").read_text())
    fac = factors_by_hand(led, 6)
    # what the two releases reveal together, enumerated as the consistent release behaves
    cum = leakage_by_enumeration(fac, [False, True], 2, 6)
    assert cum <= 1.0 + 1e-12
    assert led["releases"][1]["cumulative"] == pytest.approx(cum, abs=1e-9)
    # alone, the consistent release reveals as much as both (it is their union)
    q1, q2 = (np.array(f, dtype=float) for f in fac)
    alone = leakage_by_enumeration([(q1 * q2).tolist()], [False], 2, 6)
    assert alone == pytest.approx(cum, abs=1e-9)
    # every value the first release published is published again, unchanged
    v1, v2, v0 = released_values(tmp_path / "r1.csv"), released_values(tmp_path / "r2.csv"), SERIES
    for a, b, x in zip(v1, v2, v0):
        if a != "":
            assert b == a == str(x)
        if b != "":
            assert b == str(x)
    # the report's mechanism is the composition, and the composed audit reads its factors (no double count)
    rep = json.loads((tmp_path / "r2.json").read_text())
    assert [f["release"] for f in rep["mechanism"]["factors"]] == [1, 2]
    code, out, err = run(capsys, "audit", "--compose", tmp_path / "r1.json", tmp_path / "r2.json", "--format",
                         "json")
    assert code == 0, err
    assert json.loads(out)["records"][0]["cumulative"] == pytest.approx(cum, abs=1e-9)


def test_consistent_gives_more_utility_than_a_fresh_draw(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    for d in (a, b):
        assert release(capsys, d, "r1", "--eps", "0.5", "--total-eps", "1", "--alpha", "0.25",
                       "--beta", "0.375")[0] == 0
    assert release(capsys, a, "r2", "--eps", "1")[0] == 0
    assert release(capsys, b, "r2", "--eps", "1", "--consistent")[0] == 0
    # independently: the expected published records of each release, from its ledger factors and the chain
    for d, consistent in ((a, False), (b, True)):
        led = json.loads((d / "ledger.json").read_text())
        q1, q2 = (np.array(f, dtype=float) for f in factors_by_hand(led, 6))
        q = q1 * q2 if consistent else q2
        led["expected_published"] = 6 - float((q @ np.array([float(v) for v in PI])).sum())
        (d / "check.json").write_text(json.dumps(led))
    ua = json.loads((a / "check.json").read_text())["expected_published"]
    ub = json.loads((b / "check.json").read_text())["expected_published"]
    assert ub >= ua - 1e-12
    for d in (a, b):  # the stored utility and the certified bound above it
        r = json.loads((d / "ledger.json").read_text())["releases"][1]
        assert r["expected_utility"] == pytest.approx(json.loads((d / "check.json").read_text())
                                                      ["expected_published"] / 6, abs=1e-12)
        assert r["expected_utility"] <= r["upper_bound"] + 1e-12


def test_refused_when_the_budget_is_spent(tmp_path, capsys):
    assert release(capsys, tmp_path, "r1", "--eps", "1", "--total-eps", "1", "--alpha", "0.25",
                   "--beta", "0.375")[0] == 0
    before = (tmp_path / "ledger.json").read_bytes()
    for extra in ((), ("--consistent",)):
        code, out, err = release(capsys, tmp_path, "r2", "--eps", "1", *extra)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "budget is spent" in err, err
        assert not (tmp_path / "r2.csv").exists() and not (tmp_path / "r2.json").exists()
        assert (tmp_path / "ledger.json").read_bytes() == before


def test_a_lower_total_than_spent_is_refused(tmp_path, capsys):
    from redactopt.release.ledger_file import read_ledger

    assert release(capsys, tmp_path, "r1", "--eps", "0.9", "--total-eps", "1", "--alpha", "0.25",
                   "--beta", "0.375")[0] == 0
    # a hand-edited ledger whose budget is lower than what release 1 already leaks
    d = json.loads((tmp_path / "ledger.json").read_text())
    d["total_eps"] = 0.5
    for r in d["releases"]:
        r["total_eps"] = 0.5
    (tmp_path / "ledger.json").write_text(json.dumps(d))
    assert read_ledger(tmp_path / "ledger.json").total_eps == 0.5
    code, _, err = release(capsys, tmp_path, "r2", "--eps", "0.5")
    assert code == 2 and "already leak" in err and "limit is 0.5" in err, err


def test_private_records_must_stay_private(tmp_path, capsys):
    assert release(capsys, tmp_path, "r1", "--eps", "0.5", "--total-eps", "1", "--alpha", "0.25",
                   "--beta", "0.375")[0] == 0
    code, _, err = release(capsys, tmp_path, "r2", "--eps", "1", private="4")
    assert code == 2 and "record 3 was private in an earlier release" in err, err
    led = json.loads((tmp_path / "ledger.json").read_text())
    q1 = np.array(factors_by_hand(led, 6)[0], dtype=float)
    publishable = [t for t in range(6) if not (q1[t] == 1).all()]
    if publishable:
        t = publishable[0]
        code, _, err = release(capsys, tmp_path, "r2", "--eps", "1", private=f"3,{t + 1}")
        assert code == 2 and f"record {t + 1} is private now" in err, err


def test_seeded_twice_is_refused_and_no_seed_is_stored(tmp_path, capsys):
    assert release(capsys, tmp_path, "r1", "--eps", "0.5", "--total-eps", "1", "--alpha", "0.25",
                   "--beta", "0.375", "--seed", "12345")[0] == 0
    text = (tmp_path / "ledger.json").read_text()
    assert "12345" not in text and '"randomness": "seeded"' in text
    code, _, err = release(capsys, tmp_path, "r2", "--eps", "1", "--seed", "12346")
    assert code == 2 and "omit --seed" in err
    assert release(capsys, tmp_path, "r2", "--eps", "1")[0] == 0


def test_options_a_ledger_cannot_compose_are_refused(tmp_path, capsys):
    code, _, err = release(capsys, tmp_path, "r1", "--eps", "0.5", "--total-eps", "1", "--alpha", "0.25",
                           "--beta", "0.375", "--class", "scan")
    assert code == 2 and "sum of leakages is not a bound" in err and len(err.strip().splitlines()) == 1
    code, _, err = release(capsys, tmp_path, "r1", "--eps", "2", "--total-eps", "1", "--alpha", "0.25",
                           "--beta", "0.375")
    assert code == 2 and "exceeds --total-eps" in err
    code, _, err = release(capsys, tmp_path, "r1", "--eps", "0.5", "--alpha", "0.25", "--beta", "0.375")
    assert code == 2 and "needs --total-eps" in err
    code, _, err = release(capsys, tmp_path, "r1", "--eps", "0.5", "--total-eps", "1", "--alpha", "0.25",
                           "--beta", "0.375", "--consistent")
    assert code == 2 and "no release yet" in err
    code, _, err = run(capsys, "apply", tmp_path / "s.csv", "--column", "v", "--private", "3", "--eps", "1",
                       "--out", tmp_path / "x.csv", "--total-eps", "1")
    assert code == 2 and "--total-eps applies with --ledger" in err
    assert not (tmp_path / "ledger.json").exists()


def test_other_rows_are_refused(tmp_path, capsys):
    assert release(capsys, tmp_path, "r1", "--eps", "0.5", "--total-eps", "1", "--alpha", "0.25",
                   "--beta", "0.375")[0] == 0
    (tmp_path / "s.csv").write_text("v\n" + "\n".join(map(str, SERIES + [1])) + "\n")
    code, _, err = release(capsys, tmp_path, "r2", "--eps", "1")
    assert code == 2 and "not the same rows" in err, err


# --- the format -----------------------------------------------------------------------------------------


def test_format_round_trip(tmp_path, capsys):
    from redactopt.release.ledger_file import read_ledger

    assert release(capsys, tmp_path, "r1", "--eps", "0.5", "--total-eps", "1", "--alpha", "0.25",
                   "--beta", "0.375")[0] == 0
    assert release(capsys, tmp_path, "r2", "--eps", "1", "--consistent")[0] == 0
    raw = json.loads((tmp_path / "ledger.json").read_text())
    led = read_ledger(tmp_path / "ledger.json")
    assert json.loads(json.dumps(led.to_dict())) == raw  # every field read back as written
    led.path = str(tmp_path / "copy.json")
    led.write()
    assert json.loads((tmp_path / "copy.json").read_text()) == raw
    # what the file holds, by hand: release 2's redacted records are among release 1's (it republished)
    red = [sorted({t for a, b in r["sequences"][0]["redacted"] for t in range(a, b + 1)}) for r in raw["releases"]]
    assert set(red[1]) <= set(red[0])
    v1, v2 = released_values(tmp_path / "r1.csv"), released_values(tmp_path / "r2.csv")
    assert red == [[t + 1 for t, v in enumerate(v1) if v == ""], [t + 1 for t, v in enumerate(v2) if v == ""]]


@pytest.mark.parametrize("edit, message", [
    (lambda d: "{not json", "malformed JSON"),
    (lambda d: json.dumps({"format": "redactopt.release.apply-report/3"}), "not a redactopt ledger"),
    (lambda d: json.dumps(dict(d, format="redactopt.ledger/9")), "not known to this redactopt"),
    (lambda d: json.dumps(dict(d, releases=[dict(d["releases"][0], mechanism_class="owner")])),
     "sum of leakages is not a bound"),
    (lambda d: json.dumps(dict(d, releases=[dict(d["releases"][0], release=2)])), "releases in order"),
    (lambda d: json.dumps(dict(d, dataset=dict(d["dataset"], rows=7))), "not the sum"),
    (lambda d: json.dumps(_set_factor(d, 1.5)), "outside [0, 1]"),
    (lambda d: json.dumps(_set_factor(d, 0.5, private=True)), "not redacted with certainty"),
    (lambda d: json.dumps(dict(d, releases=[{k: v for k, v in d["releases"][0].items() if k != "eps"}])),
     "corrupt ledger"),
])
def test_a_corrupt_or_foreign_ledger_is_refused_in_one_line(tmp_path, capsys, edit, message):
    assert release(capsys, tmp_path, "r1", "--eps", "0.5", "--total-eps", "1", "--alpha", "0.25",
                   "--beta", "0.375")[0] == 0
    d = json.loads((tmp_path / "ledger.json").read_text())
    (tmp_path / "ledger.json").write_text(edit(d))
    code, _, err = release(capsys, tmp_path, "r2", "--eps", "1")
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert not (tmp_path / "r2.csv").exists()


def _set_factor(d: dict, value: float, private: bool = False) -> dict:
    d = json.loads(json.dumps(d))
    seq = d["releases"][0]["sequences"][0]
    blk = seq["factor"][0]
    row = (seq["private"][0] - blk["start"]) if private else 0
    blk["redact_prob"][row][0] = value
    return d


# --- the design of one sequence, against an independent enumeration ------------------------------------------


def test_design_sequence_by_enumeration():
    from redactopt import MarkovChain
    from redactopt.engine.design import design
    from redactopt.judge.audit import as_sparse
    from redactopt.release.ledger_release import design_sequence

    chain = MarkovChain(0.25, 0.375)
    q1 = np.array([[0.5, 0.5], [1, 1], [1, 1], [1, 1], [0.5, 0.25], [0, 0]], dtype=float)
    q1_leak = leakage_by_enumeration([[[F(v) for v in r] for r in q1]], [False], 2, 6)
    assert 0.3 < q1_leak < 0.9  # an earlier release that leaves part of the budget
    fresh = [as_sparse(np.asarray(design(chain, 6, p=2, eps=e, method="frontier").redact_prob)) for e in (1.0, 0.7, 0.4)]
    for consistent in (False, True):
        ch = design_sequence([(chain, as_sparse(q1))], chain, (2,), fresh, eps=1.0, total_eps=1.0,
                             consistent=consistent)
        assert ch is not None
        q2 = np.asarray(ch.factor)
        assert np.array_equal(np.asarray(ch.composed), q1 * q2)
        cum = leakage_by_enumeration([[[F(v) for v in r] for r in q1], [[F(v) for v in r] for r in q2]],
                                     [False, consistent], 2, 6)
        assert cum <= 1.0 + 1e-12 and ch.audit.cumulative[2] == pytest.approx(cum, abs=1e-9)
        if not consistent:
            assert ch.alone[2] == pytest.approx(
                leakage_by_enumeration([[[F(v) for v in r] for r in q2]], [False], 2, 6), abs=1e-9)
    # the budget already spent by the earlier release: only 'nothing new' passes
    full = np.asarray(fresh[0].rows(0, 6))
    ch = design_sequence([(chain, as_sparse(full))], chain, (2,), fresh, eps=1.0, total_eps=1.0, consistent=True)
    assert ch is not None and ch.kind == "nothing-new"
    assert np.array_equal(np.asarray(ch.composed), full)


# --- item 4: the report, the page and audit show the ledger ------------------------------------------------


def test_report_page_and_audit_show_the_ledger(tmp_path, capsys):
    from redactopt.interface.html import report_html

    code, out1, _ = release(capsys, tmp_path, "r1", "--eps", "0.5", "--total-eps", "1", "--alpha", "0.25",
                            "--beta", "0.375")
    assert code == 0 and "ledger    : release 1 of" in out1
    code, out2, _ = release(capsys, tmp_path, "r2", "--eps", "1", "--consistent")
    assert code == 0 and "ledger    : release 2 of" in out2 and "(consistent)" in out2
    led = json.loads((tmp_path / "ledger.json").read_text())
    fac = factors_by_hand(led, 6)
    want_alone = [leakage_by_enumeration(fac[:1], [False], 2, 6), leakage_by_enumeration(fac, [False, True], 2, 6)]
    want_cum = want_alone  # release 1 alone is its own composition; release 2 republishes release 1
    rep = json.loads((tmp_path / "r2.json").read_text())
    hist = rep["ledger"]["releases"]
    assert [h["release"] for h in hist] == [1, 2]
    assert [h["leakage_alone"] for h in hist] == pytest.approx(want_alone, abs=1e-9)
    assert [h["cumulative"] for h in hist] == pytest.approx(want_cum, abs=1e-9)
    page = report_html(rep)
    assert 'id="ledger"' in page and 'href="#ledger"' in page
    for i in range(2):
        for key in ("leakage_alone", "cumulative"):
            exact = page.split(f'data-key="ledger.releases.{i}.{key}" data-value="')[1].split('"')[0]
            assert float(exact) == hist[i][key]
    # audit --ledger re-judges every release from the ledger's factors
    code, out, err = run(capsys, "audit", "--ledger", tmp_path / "ledger.json", "--format", "json")
    assert code == 0, err
    a = json.loads(out)
    assert a["passed"] is True and a["stored_matches"] is True
    assert [r["cumulative"] for r in a["releases"]] == pytest.approx(want_cum, abs=1e-9)
    assert [r["leakage_alone"] for r in a["releases"]] == pytest.approx(want_alone, abs=1e-9)
    code, text, _ = run(capsys, "audit", "--ledger", tmp_path / "ledger.json")
    assert code == 0 and "PASS" in text and "(consistent)" in text
    code, text, _ = run(capsys, "audit", tmp_path / "r2.json")
    assert "ledger    : release 2 of" in text
    # a ledger whose stored figure was edited: the re-judged figures are shown, and the edit is said
    led["releases"][1]["cumulative"] = 0.1
    (tmp_path / "edited.json").write_text(json.dumps(led))
    code, text, _ = run(capsys, "audit", "--ledger", tmp_path / "edited.json")
    assert "differ from the re-judged" in text
    # a ledger over its budget fails the audit (exit 1)
    led["total_eps"] = 0.5
    (tmp_path / "over.json").write_text(json.dumps(led))
    code, text, _ = run(capsys, "audit", "--ledger", tmp_path / "over.json")
    assert code == 1 and "FAIL" in text


def _dense(mech: dict) -> np.ndarray:
    q = np.zeros((mech["n"], 2))
    for b in mech["blocks"]:
        rows = np.array(b["redact_prob"], dtype=float)
        q[b["start"] - 1:b["start"] - 1 + rows.shape[0]] = rows
    return q


@pytest.mark.parametrize("consistent", [False, True])
def test_many_sequences_second_release_within_total(tmp_path, capsys, consistent):
    """Two homes, opt-out windows: a ledgered second release never lets a private record exceed the total,
    checked record by record on the product of the mechanisms read from the reports by hand."""
    from homes import make_homes

    from redactopt import MarkovChain
    from redactopt.judge.leakage import leakage

    df = make_homes(39, homes=2, days=1, optout_homes=(0, 1), window=3, shuffle=False)
    df[["home", "ts", "occupied", "optout"]].to_csv(tmp_path / "homes.csv", index=False)

    def go(name: str, *extra: str) -> tuple[int, str]:
        code, _, err = run(capsys, "apply", tmp_path / "homes.csv", "--column", "occupied", "--by", "home",
                           "--order-by", "ts", "--private-column", "optout", "--out", tmp_path / f"{name}.csv",
                           "--report", tmp_path / f"{name}.json", "--ledger", tmp_path / "ledger.json",
                           "--method", "dim", "--quiet", *extra)
        return code, err

    assert go("r1", "--eps", "0.6", "--total-eps", "1", "--alpha", "0.01", "--beta", "0.02")[0] == 0
    code, err = go("r2", "--eps", "1", *(("--consistent",) if consistent else ()))
    assert code == 0, err
    chain = MarkovChain(0.01, 0.02)
    reps = [json.loads((tmp_path / f"r{i}.json").read_text()) for i in (1, 2)]
    by_seq = [{s["id"]: s for s in rep["sequences"]} for rep in reps]
    checked = 0
    for sid, s2 in by_seq[1].items():
        if not s2["private"]:
            continue
        q1 = _dense(by_seq[0][sid]["mechanism"])
        m2 = s2["mechanism"]
        # a consistent release's mechanism is already the composition; a fresh one composes by the product
        q = _dense(m2) if consistent else q1 * _dense(m2)
        if consistent:
            own = [f for f in m2["factors"] if f["release"] == 2][0]
            assert np.allclose(q, q1 * _dense({"n": m2["n"], "blocks": own["blocks"]}), rtol=0, atol=1e-15)
        for p in s2["private"]:
            L = leakage(chain, q, p - 1).leakage
            assert L <= 1.0 + 1e-9
            checked += 1
    assert checked == 6
    code, out, err = run(capsys, "audit", "--compose", tmp_path / "r1.json", tmp_path / "r2.json", "--eps", "1",
                         "--format", "json")
    assert code == 0 and json.loads(out)["passed"] is True, err


def test_the_ledger_page_shows_the_reports_numbers(tmp_path, capsys):
    """The page's ledger numbers are the report's (read back by an HTML parser), and it renders in a browser."""
    from test_html_report import Page, assert_self_contained, check_numbers

    from redactopt.interface.browser import render
    from redactopt.interface.html import report_html

    assert release(capsys, tmp_path, "r1", "--eps", "0.5", "--total-eps", "1", "--alpha", "0.25",
                   "--beta", "0.375")[0] == 0
    assert release(capsys, tmp_path, "r2", "--eps", "1", "--consistent", "--html", tmp_path / "r2.html")[0] == 0
    rep = json.loads((tmp_path / "r2.json").read_text())
    text = (tmp_path / "r2.html").read_text()
    assert text == report_html(rep)
    page = Page(text)
    assert_self_contained(text, page)
    seen = check_numbers(page.keys, rep)
    want = {f"ledger.releases.{i}.{k}" for i in range(2) for k in ("eps", "leakage_alone", "cumulative")}
    assert want | {"ledger.cumulative", "ledger.utility.upper_bound"} <= seen
    shown = render(tmp_path / "r2.html")
    assert shown.errors == [] and shown.requests == []
    assert want <= check_numbers(shown.keys, rep)


def test_releases_under_different_chains_are_judged_under_each(tmp_path, capsys):
    """The second release is judged (composed with the first) under both releases' chains."""
    assert release(capsys, tmp_path, "r1", "--eps", "0.5", "--total-eps", "1", "--alpha", "0.25",
                   "--beta", "0.375")[0] == 0
    code, _, err = release(capsys, tmp_path, "r2", "--eps", "1", "--alpha", "0.1875", "--beta", "0.3125")
    assert code == 0, err
    led = json.loads((tmp_path / "ledger.json").read_text())
    fac = factors_by_hand(led, 6)
    a, b = F(3, 16), F(5, 16)
    other = ([[1 - a, a], [b, 1 - b]], [b / (a + b), a / (a + b)])
    under = [leakage_by_enumeration(fac, [False, False], 2, 6), leakage_by_enumeration(fac, [False, False], 2, 6,
                                                                                       other)]
    assert max(under) <= 1.0 + 1e-12
    assert led["releases"][1]["cumulative"] == pytest.approx(max(under), abs=1e-9)
    assert led["releases"][1]["chain"] == {"alpha": 0.1875, "beta": 0.3125}


def test_a_chain_under_which_the_earlier_releases_already_exceed_is_refused(tmp_path, capsys):
    """Under a stickier chain the first release alone leaks more than the total: refused, and the number said
    is that leakage (by enumeration under that chain)."""
    assert release(capsys, tmp_path, "r1", "--eps", "0.5", "--total-eps", "1", "--alpha", "0.25",
                   "--beta", "0.375")[0] == 0
    led = json.loads((tmp_path / "ledger.json").read_text())
    a, b = F(1, 8), F(1, 4)
    sticky = ([[1 - a, a], [b, 1 - b]], [b / (a + b), a / (a + b)])
    worst = leakage_by_enumeration(factors_by_hand(led, 6), [False], 2, 6, sticky)
    assert worst > 1.0
    code, _, err = release(capsys, tmp_path, "r2", "--eps", "1", "--alpha", "0.125", "--beta", "0.25")
    assert code == 2 and "already leak" in err, err
    said = float(err.split("already leak ")[1].split()[0])
    assert said == pytest.approx(worst, rel=1e-5)
