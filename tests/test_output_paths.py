"""Every output path is checked before any reading, fitting or design (issue 37, item 5).

Each writing command x each of its file options x each bad kind of path (a missing directory, a
directory that takes no file, an extension naming another format, an existing directory, an
existing file without ``--force``): exit 2, one line naming the option and the path exactly as
typed (``./...`` is not normalised away), nothing written -- and no work started: the functions that
read the input, design or compare are replaced by ones that fail loudly (an internal error, exit 3,
were they called), and a control with a good path shows that they are reached otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

#: Replaced while a check runs: each reads the input, designs, compares or draws.
WORK = [
    ("redactopt.interface.cli", "_design_for"), ("redactopt.interface.cli", "design_varying"),
    ("redactopt.interface.cli", "design_point"), ("redactopt.interface.cli", "compare_states_point"),
    ("redactopt.interface.cli", "run_bench"), ("redactopt.engine.classes_design", "design_class"),
    ("redactopt.engine.classes_design", "cli_compare"), ("redactopt.release.apply", "apply_table"),
    ("redactopt.release.states", "apply_states_table"), ("redactopt.release.dask_backend", "apply_dask"),
    ("redactopt.release.class_apply", "class_apply_table"), ("redactopt.interface.cli_report", "_read_report"),
    ("redactopt.release.tables", "TableReader.__init__"),
]


class WorkStarted(AssertionError):
    pass


@pytest.fixture
def no_work(monkeypatch):
    import importlib

    def started(*a, **k):
        raise WorkStarted("work started before the outputs were checked")

    for module, name in WORK:
        owner = importlib.import_module(module)
        *path, attr = name.split(".")
        for part in path:
            owner = getattr(owner, part)
        monkeypatch.setattr(owner, attr, started)


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    """A 0/1 table and a release report in the working folder (the paths below are relative to it)."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(7)
    pd.DataFrame({"t": np.arange(300), "occ": rng.integers(0, 2, 300)}).to_csv("in.csv", index=False)
    Path("rep.json").write_text(json.dumps({"format": "redactopt.release.apply-report/3"}))
    Path("adir.json").mkdir()
    return tmp_path


DESIGN = ["design", "--n", "10", "--eps", "1"]
COMPARE = ["compare", "--n", "10", "--eps", "1"]
APPLY = ["apply", "in.csv", "--column", "occ", "--private", "150", "--eps", "1"]

#: (command line without the option, the option, the extension it takes, an extension naming another format)
OPTIONS = [
    (DESIGN, "--out", ".txt", ".json"),
    (DESIGN + ["--format", "json"], "--out", ".json", ".csv"),
    (DESIGN + ["--format", "csv"], "--out", ".csv", ".parquet"),
    (DESIGN, "--plot", ".png", ".pdf"),
    (DESIGN + ["--class", "scan"], "--out", ".json", ".csv"),
    (COMPARE, "--out", ".md", ".html"),
    (COMPARE + ["--format", "json"], "--out", ".json", ".txt"),
    (COMPARE, "--plot", ".svg", ".json"),
    (COMPARE + ["--class", "local,scan", "--format", "csv"], "--out", ".csv", ".json"),
    (APPLY, "--out", ".csv", ".json"),
    (APPLY, "--out", ".parquet", ".html"),
    (APPLY + ["--categorical"], "--out", ".tsv.gz", ".png"),
    (APPLY + ["--class", "scan", "--alpha", "0.1", "--beta", "0.3"], "--out", ".csv", ".json"),
    (APPLY + ["--out", "o.csv"], "--report", ".json", ".csv"),
    (APPLY + ["--out", "o.csv"], "--public-report", ".json", ".md"),
    (APPLY + ["--out", "o.csv"], "--html", ".html", ".txt"),
    (["report", "rep.json"], "--html", ".htm", ".json"),
]
KINDS = ["missing directory", "unwritable directory", "extension", "a directory", "exists"]


def _bad(kind: str, ext: str, other: str) -> tuple[str, str]:
    """A path of ``kind`` (as the user types it) and the words its refusal holds."""
    if kind == "missing directory":
        return f"./missing/x{ext}", "directory missing does not exist"
    if kind == "unwritable directory":
        return f"/proc/x{ext}", "cannot write in /proc"
    if kind == "extension":
        return f"./x{other}", other
    if kind == "a directory":
        Path(f"adir{ext}").mkdir(exist_ok=True)
        return f"./adir{ext}", "is a directory"
    Path(f"exists{ext}").write_text("old\n")
    return f"./exists{ext}", "exists; pass --force"


def _one_line(err: str, command: str, option: str, path: str, words: str) -> None:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"redactopt {command}: error: {option} {path}"), err  # the path exactly as typed
    assert words in err, err


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("base,option,ext,other", OPTIONS, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_a_bad_output_is_refused_before_any_work(run, capsys, inputs, no_work, base, option, ext, other, kind):
    path, words = _bad(kind, ext, other)
    before = {p: p.stat().st_mtime_ns for p in inputs.rglob("*")}
    assert run(base + [option, path]) == 2
    cap = capsys.readouterr()
    _one_line(cap.err, base[0], option, path, words)
    assert {p: p.stat().st_mtime_ns for p in inputs.rglob("*")} == before  # nothing written, nothing touched


@pytest.mark.parametrize("base,option,ext,other", OPTIONS, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_with_a_good_output_the_work_starts(run, capsys, inputs, no_work, monkeypatch, base, option, ext, other):
    """The control: a good path gets past the checks to the work (the replaced functions are reached)."""
    monkeypatch.setenv("REDACTOPT_DEBUG", "1")  # the internal error raised as is
    with pytest.raises(WorkStarted):
        run(base + [option, f"./good{ext}"])
    assert not Path(f"good{ext}").exists()


@pytest.mark.parametrize("argv,words", [
    (["bench", "--out-dir", "./missing/b"], "--out-dir ./missing/b: directory missing does not exist"),
    (["bench", "--out-dir", "/proc/b"], "--out-dir /proc/b: cannot write in /proc"),
    (["bench", "--out-dir", "./in.csv"], "--out-dir ./in.csv: exists and is not a directory"),
    (APPLY + ["--backend", "dask", "--out", "./missing/o"], "--out ./missing/o: directory missing does not exist"),
    (APPLY + ["--backend", "dask", "--out", "/proc/o"], "--out /proc/o: cannot write in /proc"),
    (APPLY + ["--backend", "dask", "--out", "./adir.json"], "--out ./adir.json: exists; pass --force"),
    (APPLY + ["--backend", "dask", "--out", ".", "--force"], "--out . holds the input in.csv"),
    (APPLY + ["--out", "./in.csv"], "--out ./in.csv is the input"),
    (APPLY + ["--out", "o.csv", "--report", "./o.csv"], "--out o.csv and --report ./o.csv name the same file"),
    (APPLY + ["--out", "-", "--report", "-"], "--out - and --report - both ask for standard output"),
    (APPLY + ["--out", "o.csv", "--public-report", "-"], "--public-report -: needs a file name"),
    (APPLY + ["--out", "o.csv", "--report", "r.json", "--report-sequences", "parquet", "--fit-on",
              "r.sequences.parquet"], "--report-sequences r.sequences.parquet is --fit-on"),
    (DESIGN + ["--out", "d.txt", "--plot", "./d.txt"], "--out d.txt and --plot ./d.txt name the same file"),
    (DESIGN + ["--force"], "--force applies to --out FILE or --plot FILE only"),
    (DESIGN + ["--plot", "-"], "--plot -: needs a file name ending in .png or .svg"),
    (["report", "rep.json", "--html", "./rep.json"], "--html ./rep.json would overwrite the report it reads"),
])
def test_other_refusals_name_the_path_as_given(run, capsys, inputs, no_work, argv, words):
    before = sorted(os.listdir("."))
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err, err
    assert sorted(os.listdir(".")) == before


def test_force_overwrites_every_output_of_a_command(run, capsys, inputs):
    """With --force an existing file of each option is replaced (the same rule for every output)."""
    for name in ("o.csv", "r.json", "p.json", "d.txt", "d.png"):
        Path(name).write_text("old\n")
    assert run(APPLY + ["--seed", "1", "--out", "o.csv", "--report", "r.json", "--public-report", "p.json",
                        "--force", "--quiet"]) == 0
    assert run(DESIGN + ["--method", "dim", "--out", "d.txt", "--plot", "d.png", "--force"]) == 0
    for name in ("o.csv", "r.json", "p.json", "d.txt", "d.png"):
        assert Path(name).read_bytes() != b"old\n", name


def test_the_issue_examples_fail_fast_as_processes(tmp_path):
    """``--out /proc/o.csv`` and ``--out o.json`` for a table: refused in the time it takes to start, not after
    the minutes of design and fit (a categorical release with per-record optima, a scan design)."""
    rng = np.random.default_rng(3)
    n = 20_000
    pd.DataFrame({"home": np.repeat(["a", "b"], n // 2), "x": rng.integers(0, 3, n),
                  "o": (np.arange(n) % 997 == 5).astype(int)}).to_csv(tmp_path / "t.csv", index=False)
    release = ["apply", "t.csv", "--column", "x", "--categorical", "--by", "home", "--private-column", "o",
               "--eps", "1", "--method", "optimal"]
    scan = ["design", "--class", "scan", "--n", "2880", "--eps", "1", "--private", "181", "--alpha", "0.00773908",
            "--beta", "0.0024669"]
    for argv, words in ((release + ["--out", "/proc/o.csv"], "apply: error: --out /proc/o.csv: cannot write in /proc"),
                        (release + ["--out", "o.json"], "apply: error: --out o.json: unknown table format"),
                        (scan + ["--out", "/proc/s.json"], "design: error: --out /proc/s.json: cannot write in /proc")):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "redactopt", *argv], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)
        seconds = time.perf_counter() - t0
        assert proc.returncode == 2 and proc.stderr.startswith(f"redactopt {words}"), proc.stderr
        assert proc.stderr.count("\n") == 1 and ".tmp" not in proc.stderr
        assert seconds < 15, seconds  # the start-up only (the work takes minutes)
        assert sorted(os.listdir(tmp_path)) == ["t.csv"]
