"""An audit of class files that cannot be fooled (issue 38): exact numbers, strict types, reports judged whole.

Each tampered file of the issue is written here and must FAIL (exit 1) or be refused as bad input (exit 2,
one line, positions counted from 1).  The exact leakage of the overflowing row is derived by enumeration
in rationals (tests/exact_refs.py: the row divided by its exact sum).
"""

from __future__ import annotations

import copy
import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from exact_refs import enum_ratio, enum_utility, table_law
from redactopt.classes_io import mechanism_to_dict
from redactopt.model.chain import MarkovChain
from redactopt.model.mechanism_classes import OwnerMechanism, as_kchain


def _one_line_error(err: str, needle: str) -> None:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("redactopt audit: error: "), err
    assert needle in err, err


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A class release report of four sequences: two of 8 rows and one of 30 with a private record each, one
    of 5 rows without (so two designs: 8 rows, private 3; 30 rows, private 12)."""
    from redactopt.interface import cli

    tmp = tmp_path_factory.mktemp("rep")
    rng = np.random.default_rng(1)
    rows = []
    for s, length, p in (("a", 8, 3), ("b", 30, 12), ("c", 8, 3), ("d", 5, None)):
        for t in range(length):
            rows.append({"sid": s, "occ": int(rng.random() < 0.3), "optout": int(t + 1 == p)})
    src = tmp / "in.csv"
    pd.DataFrame(rows).to_csv(src, index=False)
    argv = ["apply", str(src), "--column", "occ", "--by", "sid", "--private-column", "optout", "--eps", "1",
            "--alpha", "0.1", "--beta", "0.3", "--class", "scan", "--seed", "5", "--time-limit", "2",
            "--out", str(tmp / "out.csv"), "--report", str(tmp / "rep.json")]
    assert cli.main(argv) == 0
    return json.loads((tmp / "rep.json").read_text())


def _audit(run, capsys, tmp_path, d: dict, *extra: str) -> tuple[int, str, str]:
    path = tmp_path / "f.json"
    path.write_text(json.dumps(d))
    code = run(["audit", str(path), *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_report_as_written_passes(run, capsys, tmp_path, report):
    code, out, _ = _audit(run, capsys, tmp_path, report)
    assert code == 0 and "overall   : PASS (2 of 2 mechanisms pass)" in out


def _eps(d):
    d["eps"] = 0.5


def _chain(d):
    d["chain"]["transition"] = [["4/5", "1/5"], ["3/10", "7/10"]]


def _pointer(d):  # the 30-row sequence pointed at the 8-row design
    d["sequences"][1]["design"] = 0


def _delete_first(d):
    del d["designs"][0]


def _delete_second(d):
    del d["designs"][1]


def _no_design(d):
    d["sequences"][0]["design"] = None


def _class(d):
    d["class"] = "owner"


def _leakage(d):
    d["leakage"]["max"] = 0.1


def _rows(d):
    d["designs"][0]["rows"] = 9


@pytest.mark.parametrize("edit,needle", [
    (_eps, "is not the report's eps 0.5"),
    (_chain, "its chain is not the report's chain"),
    (_pointer, "30 rows, its design 1 is for 8"),
    (_delete_first, "names design 2, the report has 1"),
    (_delete_second, "names design 2, the report has 1"),
    (_no_design, "1 private record(s) and no design"),
    (_class, "designed for 'scan', the report's class is 'owner'"),
    (_leakage, "leakage.max: the report states 0.1"),
    (_rows, "it covers 8 records, the design 9"),
])
def test_an_edited_report_fails(run, capsys, tmp_path, report, edit, needle):
    d = copy.deepcopy(report)
    edit(d)
    code, out, _ = _audit(run, capsys, tmp_path, d)
    assert code == 1, out
    assert "overall   : FAIL" in out and needle in out, out
    code, out, _ = _audit(run, capsys, tmp_path, d, "--format", "json")
    got = json.loads(out)
    assert code == 1 and got["passed"] is False and any(needle in p for p in got["problems"])


def _stop_string(d):
    d["designs"][0]["mechanisms"][0]["sides"]["right"]["stop"][0][0][0] = "0.5"


def _holder_yes(d):
    d["designs"][0]["mechanisms"][0]["holder"] = "yes"


def _private_beyond(d):
    d["designs"][0]["mechanisms"][0]["private"] = [9]


def _seq_design_float(d):
    d["sequences"][0]["design"] = 0.0


@pytest.mark.parametrize("edit,needle", [
    (_stop_string, "field 'stop' must hold numbers, got '0.5'"),
    (_holder_yes, "field 'holder' must be true or false, got 'yes'"),
    (_private_beyond, "field 'private' must be a list of one position in 1..8, got [9]"),
    (_seq_design_float, "'design' must be an integer >= 0, got 0.0"),
])
def test_a_report_with_a_field_of_the_wrong_type_is_refused(run, capsys, tmp_path, report, edit, needle):
    d = copy.deepcopy(report)
    edit(d)
    code, _, err = _audit(run, capsys, tmp_path, d)
    assert code == 2
    _one_line_error(err, needle)


def _owner_file(table: np.ndarray) -> dict:
    mech = OwnerMechanism(MarkovChain(0.1, 0.3), 3, 1, table)
    return mechanism_to_dict(mech, eps=0.5)


def test_a_row_whose_float_sum_overflows_is_divided_by_its_exact_sum(run, capsys, tmp_path):
    # the issue: the row [0, 0, 1.7e308, 1.7e308] was divided by its float sum (inf) and judged PASS with
    # leakage 0.1414; divided by its exact sum it is [0, 0, 1/2, 1/2]
    T = np.zeros((4, 4))
    T[:, 0] = 1.0
    T[2] = [0.0, 0.0, 1.7e308, 1.7e308]
    P = [[Fraction(v) for v in r] for r in as_kchain(MarkovChain(0.1, 0.3)).exact_transition()]
    law = table_law(T, 3, 1, 2, False)
    want = enum_ratio(P, 3, 1, law)
    want_u = enum_utility(P, 3, law)
    code, out, _ = _audit(run, capsys, tmp_path, _owner_file(T), "--format", "json")
    got = json.loads(out)
    assert code == 1 and got["passed"] is False
    assert got["leakage"] == pytest.approx(math.log(want), abs=1e-12)
    assert got["utility"] == pytest.approx(float(want_u), abs=1e-15)
    assert round(got["leakage"], 4) == 0.8473 and round(got["utility"], 4) == 0.06


@pytest.mark.parametrize("edit,needle", [
    (lambda d: d.update(holder="false"), "field 'holder' must be true or false, got 'false'"),
    (lambda d: d["table"][0].__setitem__(0, True), "a table must hold numbers, got True"),
    (lambda d: d.update(private=[4]), "field 'private' must be a list of one position in 1..3, got [4]"),
    (lambda d: d.update(eps="0.5"), "field 'eps' must be a finite number > 0, got '0.5'"),
    (lambda d: d["table"].__setitem__(1, [0, 0, 0, 0]), "table row 2 has no positive entry"),
])
def test_a_class_file_with_a_field_of_the_wrong_type_is_refused(run, capsys, tmp_path, edit, needle):
    T = np.full((4, 4), 0.25)
    d = _owner_file(T)
    edit(d)
    code, _, err = _audit(run, capsys, tmp_path, d)
    assert code == 2
    _one_line_error(err, needle)


def test_a_block_start_must_be_an_integer_position(run, capsys, tmp_path):
    from redactopt.engine.class_judge import block_design

    d = mechanism_to_dict(block_design(MarkovChain(0.1, 0.3), 12, eps=2.0, p=5, total=6).mechanism, eps=2.0)
    assert run(["audit", str(_write(tmp_path, d))]) == 0
    capsys.readouterr()
    for bad, needle in ((float(d["block"]["start"]), "field 'start' must be an integer in 1..6"),
                        (7, "field 'start' must be an integer in 1..6, got 7")):
        e = copy.deepcopy(d)
        e["block"]["start"] = bad
        code, _, err = _audit(run, capsys, tmp_path, e)
        assert code == 2
        _one_line_error(err, needle)


def _write(tmp_path, d):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(d))
    return path
