"""The docs' timings and benchmarks/docs_timings.py's catalogue cannot drift apart (issue 37, item 6).

No timing here: the check only reads README.md and docs/*.md.  Each failure mode of the check is
provoked on a copy of the docs' text (an uncatalogued timing, a needle no longer found, a needle
found twice, an entry without a reason), and the phrase parser and the verdicts are checked on
hand-worked values.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "docs_timings.py"


@pytest.fixture(scope="module")
def dt():
    spec = importlib.util.spec_from_file_location("docs_timings", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["docs_timings"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_docs_and_catalogue_agree(dt):
    problems = dt.check(dt.doc_texts(ROOT))
    assert problems == [], "\n".join(problems)


def test_check_command_line_exit_status():
    r = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all catalogued" in r.stdout


def test_an_uncatalogued_timing_fails(dt):
    texts = dt.doc_texts(ROOT)
    texts["docs/commands.md"] += " A new sentence: the release now takes 42.5 s on a laptop."
    problems = dt.check(texts)
    assert len(problems) == 1
    assert "uncatalogued timing '42.5 s'" in problems[0] and problems[0].startswith("docs/commands.md")


@pytest.mark.parametrize("sentence, phrase", [
    ("it ran in 3 min.", "3 min"),
    ("about 0.2–0.4 s each", "0.2–0.4 s"),
    ("at 5·10⁶ records/s on one core", "5·10⁶ records/s"),
    ("takes 12 seconds", "12 seconds"),
    ("in 250 ms", "250 ms"),
])
def test_every_unit_is_caught(dt, sentence, phrase):
    texts = dt.doc_texts(ROOT)
    texts["README.md"] += " " + sentence
    problems = dt.check(texts)
    assert len(problems) == 1 and f"uncatalogued timing {phrase!r}" in problems[0], problems


def test_a_stale_needle_fails(dt):
    texts = dt.doc_texts(ROOT)
    entry = next(e for e in dt.CATALOGUE if e.doc == "README.md" and e.kind == "measured")
    texts["README.md"] = texts["README.md"].replace(entry.needle, "")
    problems = dt.check(texts)
    assert any("stale catalogue entry" in p and entry.needle in p for p in problems), problems


def test_a_changed_figure_fails(dt):
    # a doc's figure corrected without the catalogue: the old needle is stale and the new figure uncatalogued
    texts = dt.doc_texts(ROOT)
    entry = next(e for e in dt.CATALOGUE if e.doc == "README.md" and e.kind == "measured"
                 and e.needle.count(e.figure()) == 1)
    texts["README.md"] = texts["README.md"].replace(entry.needle, entry.needle.replace(entry.figure(), "777 s"))
    problems = dt.check(texts)
    assert any("stale" in p and entry.needle in p for p in problems)
    assert any("uncatalogued timing '777 s'" in p for p in problems)


def test_a_needle_found_twice_fails(dt):
    texts = dt.doc_texts(ROOT)
    entry = next(e for e in dt.CATALOGUE if e.doc == "docs/releases.md")
    texts["docs/releases.md"] += " " + entry.needle
    assert any("more than once" in p for p in dt.check(texts))


def test_entries_without_reason_or_measure_fail(dt):
    texts = {"README.md": "It took 12 s before and runs in 3 s now."}
    bad = [dt.Timing("README.md", "took 12 s before", "history"),  # no reason
           dt.Timing("README.md", "runs in 3 s now", "measured")]  # no measure
    problems = dt.check(texts, bad)
    assert any("without a reason" in p for p in problems)
    assert any("without a measure" in p for p in problems)
    good = [dt.H("README.md", "took 12 s before", "an earlier version"),
            dt.M("README.md", "runs in 3 s now", dt.Cli(("design", "--n", "5")))]
    assert dt.check(texts, good) == []


@pytest.mark.parametrize("text", ["2,880 rows", "10⁷ records", "3R as printed", "n = 16", "ε = 0.5",
                                  "1.6·10⁻⁴", "peak 62 MB", "gap 5.1e-5", "4·10⁶ rows"])
def test_what_is_not_a_timing(dt, text):
    assert dt.TIME_RE.search(text) is None


@pytest.mark.parametrize("phrase, expected", [
    ("5 s", (5.0, 5.0, False)),
    ("88 ms", (0.088, 0.088, False)),
    ("0.61–1.16 s", (0.61, 1.16, False)),
    ("1.3 – 5.4 s", (1.3, 5.4, False)),
    ("1,888 s", (1888.0, 1888.0, False)),
    ("9 min 47 s", (587.0, 587.0, False)),
    ("13–22 minutes", (780.0, 1320.0, False)),
    ("2 min", (120.0, 120.0, False)),
    ("9 hours", (32400.0, 32400.0, False)),
    ("1.1·10⁷ records/s", (1.1e7, 1.1e7, True)),
    ("10⁷ records/s", (1e7, 1e7, True)),
    ("2–3·10⁶ records/s", (2e6, 3e6, True)),
])
def test_parse_figure(dt, phrase, expected):
    lo, hi, rate = dt.parse_figure(phrase)
    assert rate is expected[2]
    assert lo == pytest.approx(expected[0], rel=1e-12) and hi == pytest.approx(expected[1], rel=1e-12)


def test_compare_verdicts(dt):
    # times: measured over documented; geometric middles of ranges
    assert dt.compare((1.0, 1.0, False), (3.0, 3.0)) == (pytest.approx(3.0), "slower")
    assert dt.compare((2.0, 8.0, False), (4.0, 4.0)) == (pytest.approx(1.0), "ok")
    assert dt.compare((10.0, 10.0, False), (4.0, 4.0))[1] == "faster"
    # rates: documented over measured (a lower rate is slower)
    assert dt.compare((1e7, 1e7, True), (4e6, 4e6)) == (pytest.approx(2.5), "slower")
    assert dt.compare((1e7, 1e7, True), (1.5e7, 1.5e7))[1] == "ok"


def test_every_measured_figure_parses(dt):
    for e in dt.CATALOGUE:
        if e.kind == "measured":
            lo, hi, _ = e.documented()
            assert 0 < lo <= hi, e


def test_cpu_time_excuses_load_never_condemns(dt):
    # wall 5 s for a documented 1 s, but the run used 1.5 s of CPU: the load, not the code
    assert dt.compare((1.0, 1.0, False), (5.0, 5.0), 1.5)[1] == "ok on cpu"
    # wall and CPU both 5x: slower
    assert dt.compare((1.0, 1.0, False), (5.0, 5.0), 5.0)[1] == "slower"
    # a fast wall time stays ok whatever the CPU time of several processes
    assert dt.compare((1.0, 1.0, False), (1.2, 1.2), 4.0)[1] == "ok"
    # no CPU time (a benchmark script's figure): the wall time decides
    assert dt.compare((1.0, 1.0, False), (5.0, 5.0), None)[1] == "slower"
