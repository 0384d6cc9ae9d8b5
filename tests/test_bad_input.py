"""The bad-input matrix: every case gives one clear message naming the problem; the CLI
exits 2 with one line on stderr, no traceback and no partial output files."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import redactopt as ro
from redactopt.interface.cli import main
from redactopt.engine.design import design
from redactopt.judge.leakage import utility_monte_carlo

CH = ro.MarkovChain(0.1, 0.3)
Q = np.array([[1.0, 1.0], [0.5, 0.5], [0.0, 0.0]])

# (id, callable, exception type, substring of the message)
LIBRARY = [
    ("alpha-zero", lambda: ro.MarkovChain(0.0, 0.5), ValueError, "alpha"),
    ("beta-nan", lambda: ro.MarkovChain(0.5, math.nan), ValueError, "beta"),
    ("alpha-str", lambda: ro.MarkovChain("0.1", 0.5), TypeError, "alpha"),
    ("beta-inf", lambda: ro.MarkovChain(0.5, math.inf), ValueError, "beta"),
    ("p-range", lambda: ro.leakage(CH, Q, 5), ValueError, "p must be"),
    ("p-float", lambda: ro.leakage(CH, Q, 0.5), TypeError, "p"),
    ("prob-above-1", lambda: ro.leakage(CH, [[1, 1], [0.5, 1.5]], 0), ValueError, "[0, 1]"),
    ("prob-negative", lambda: ro.leakage(CH, [[1, 1], [-0.1, 0.5]], 0), ValueError, "[0, 1]"),
    ("prob-inf", lambda: ro.leakage(CH, [[1, 1], [math.inf, 0.5]], 0), ValueError, "finite"),
    ("shape-3-cols", lambda: ro.leakage(CH, np.ones((3, 3)), 0), ValueError, "shape"),
    ("shape-empty", lambda: ro.leakage(CH, np.ones((0, 2)), 0), ValueError, "shape"),
    ("private-published", lambda: ro.leakage(CH, [[0.5, 1], [0, 0]], 0), ValueError, "private record"),
    ("n-zero", lambda: ro.three_region(CH, 0, eps=1.0), ValueError, "n must be"),
    ("n-huge", lambda: ro.three_region(CH, 10**12, eps=1.0), ValueError, "n must be"),
    ("n-float", lambda: ro.three_region(CH, 2.5, eps=1.0), TypeError, "n must be"),
    ("eps-negative", lambda: ro.three_region(CH, 10, eps=-1.0), ValueError, "eps"),
    ("eps-zero", lambda: ro.delta_star(CH, 0.0), ValueError, "eps"),
    ("eps-inf", lambda: ro.markov_quilt(CH, 10, eps=math.inf), ValueError, "eps"),
    ("eps-nan", lambda: design(CH, 10, eps=math.nan), ValueError, "eps"),
    ("method", lambda: design(CH, 10, eps=1.0, method="best"), ValueError, "method"),
    ("design-p", lambda: design(CH, 10, eps=1.0, p=10), ValueError, "p must be"),
    ("design-n-huge", lambda: design(CH, 10**9, eps=1.0), ValueError, "n must be"),
    ("mc-samples", lambda: utility_monte_carlo(CH, Q, samples=1), ValueError, "samples"),
    ("regions-budget", lambda: ro.regions(CH, 5, 0, -1.0, 1.0), ValueError, "eps_left"),
    ("influence-x", lambda: ro.pointwise_influence(CH, 1, 2), ValueError, "x must be"),
    ("influence-delta", lambda: ro.pointwise_influence(CH, 0, 1), ValueError, "delta"),
]


@pytest.mark.parametrize("case", LIBRARY, ids=[c[0] for c in LIBRARY])
def test_library_bad_input(case):
    _, fn, err, text = case
    with pytest.raises(err) as exc_info:
        fn()
    assert text in str(exc_info.value)


def _files(tmp: Path) -> dict[str, Path]:
    good = tmp / "good.csv"
    good.write_text("id,x\n" + "".join(f"{i},{(i // 7) % 2}\n" for i in range(200)))
    files = {
        "good": good,
        "nonbinary": tmp / "nonbinary.csv",
        "missing": tmp / "missing.csv",
        "garbage": tmp / "garbage.parquet",
        "empty": tmp / "empty.csv",
        "malformed_json": tmp / "bad.json",
        "existing": tmp / "existing.csv",
    }
    files["nonbinary"].write_text("x\n0\n1\n2\n0\n")
    files["missing"].write_text("x\n0\n1\n\n0\n1\n")
    files["missing"].write_text("x,y\n0,a\n1,b\n,c\n0,d\n")
    files["garbage"].write_bytes(b"\x00\x01not parquet at all")
    files["empty"].write_text("")
    files["malformed_json"].write_text("{oops")
    files["existing"].write_text("do not touch\n")
    return files


CLI = [
    ("design-eps-nan", ["design", "--n", "10", "--eps", "nan"]),
    ("design-n-negative", ["design", "--n", "-3", "--eps", "1"]),
    ("design-n-huge", ["design", "--n", "1000000000000", "--eps", "1"]),
    ("design-p-zero", ["design", "--n", "10", "--eps", "1", "--p", "0"]),
    ("design-alpha-text", ["design", "--n", "10", "--eps", "1", "--alpha", "abc"]),
    ("design-out-exists", ["design", "--n", "10", "--eps", "1", "--method", "mq", "--out", "{existing}"]),
    ("audit-missing-file", ["audit", "{tmp}/nope.json"]),
    ("audit-directory", ["audit", "{tmp}"]),
    ("audit-malformed", ["audit", "{malformed_json}"]),
    ("audit-nothing", ["audit"]),
    ("compare-list", ["compare", "--n", "10", "--eps", "1,,x"]),
    ("bench-out-file", ["bench", "--out", "{existing}"]),
    ("fit-missing-column", ["fit", "{good}", "--column", "nope"]),
    ("fit-nonbinary", ["fit", "{nonbinary}", "--column", "x"]),
    ("fit-missing-value", ["fit", "{missing}", "--column", "x"]),
    ("fit-unreadable", ["fit", "{garbage}", "--column", "x"]),
    ("fit-empty", ["fit", "{empty}", "--column", "x"]),
    ("fit-no-file", ["fit", "{tmp}/nope.csv", "--column", "x"]),
    ("apply-out-exists", ["apply", "{good}", "--column", "x", "--private", "5", "--eps", "1", "--out", "{existing}"]),
    ("apply-private-range", ["apply", "{good}", "--column", "x", "--private", "500", "--eps", "1", "--out", "{tmp}/o1.csv"]),
    ("apply-private-syntax", ["apply", "{good}", "--column", "x", "--private", "5-", "--eps", "1", "--out", "{tmp}/o2.csv"]),
    ("apply-private-column", ["apply", "{good}", "--column", "x", "--private-column", "nope", "--eps", "1", "--out", "{tmp}/o3.csv"]),
    ("apply-eps", ["apply", "{good}", "--column", "x", "--private", "5", "--eps", "0", "--out", "{tmp}/o4.csv"]),
    ("apply-nonbinary", ["apply", "{nonbinary}", "--column", "x", "--private", "2", "--eps", "1", "--out", "{tmp}/o5.csv"]),
    ("apply-unknown-column", ["apply", "{good}", "--column", "y", "--private", "2", "--eps", "1", "--out", "{tmp}/o6.csv"]),
    ("apply-alpha-range", ["apply", "{good}", "--column", "x", "--private", "5", "--eps", "1", "--alpha", "2", "--beta", "0.3", "--out", "{tmp}/o7.csv"]),
]


@pytest.mark.parametrize("case", CLI, ids=[c[0] for c in CLI])
def test_cli_bad_input(case, tmp_path, capsys):
    files = _files(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    argv = [a.format(tmp=tmp_path, **files) for a in case[1]]
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    assert code == 2, out
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.err, out.err
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert after == before, "no file may be created or modified"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temporary files left"
