"""Issue 13: one set of command-line conventions, nothing silently ignored, no stray files.

Every case checks the exit status, that an error is one line on stderr naming the command
and the option, and that nothing is written that should not be (no file named '-', no
directory created by a typo, no temporary file left behind, modes from the umask).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import redactopt
from redactopt.interface import cli
from redactopt.interface.report import positions_text, witness_text
from conftest import dense_redact_prob
from redactopt.io import mechanism_to_dict
from redactopt.judge.leakage import leakage_bruteforce, sample_chains, utility
from redactopt.model.chain import MarkovChain
from redactopt.paper.mechanisms import markov_quilt, three_region

FIG3 = MarkovChain(0.01, 0.8)


def _one_line_error(err: str, command: str, needle: str) -> None:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"redactopt {command}: error: "), err
    assert needle in err, err


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def mech_file(tmp_path: Path) -> Path:
    """MQ at n=10, eps=1 in the Fig. 3 setting, as a mechanism file (a hand-built dict)."""
    m = markov_quilt(FIG3, 10, eps=1.0, p=0)
    d = mechanism_to_dict(FIG3, m.redact_prob, private=[0], eps=1.0, method="mq", utility=utility(FIG3, m.redact_prob),
                          leakage=0.0)
    f = tmp_path / "mech.json"
    f.write_text(json.dumps(d))
    return f


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    x = sample_chains(MarkovChain(0.1, 0.3), 300, 1, np.random.default_rng(5))[0]
    f = tmp_path / "in.csv"
    pd.DataFrame({"t": np.arange(300), "occ": x}).to_csv(f, index=False)
    return f


@pytest.fixture
def umask():
    """Set a umask for the test and restore the old one."""
    old = os.umask(0o022)
    os.umask(old)

    def set_(mask: int) -> None:
        os.umask(mask)

    yield set_
    os.umask(old)


# --------------------------------------------------------------------------
# nothing silently ignored
# --------------------------------------------------------------------------
@pytest.mark.parametrize("extra,option", [
    # --eps, --alpha and --beta are honoured (a budget and a chain or class of chains to judge the
    # file's mechanism for: tests/test_classes.py); what the file fixes is refused
    (["--n", "10"], "--n"), (["--private", "2"], "--private"), (["--p", "2"], "--private"),
    (["--reading", "theorem1"], "--reading"), (["--split", "0.2"], "--split"), (["--eps-left", "0.2"], "--split"),
])
def test_audit_file_refuses_problem_options(run, capsys, mech_file, extra, option):
    before = _listing(mech_file.parent)
    assert run(["audit", str(mech_file), *extra]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    _one_line_error(cap.err, "audit", f"{option} applies to --method only")
    assert _listing(mech_file.parent) == before


@pytest.mark.parametrize("argv,command,needle", [
    (["audit", "--method", "mq", "--n", "10", "--eps", "1", "--reading", "theorem1"], "audit",
     "--reading applies to --method 3r only"),
    (["audit", "--method", "mq", "--n", "10", "--eps", "1", "--split", "half"], "audit", "--split applies to --method 3r"),
    (["audit", "--method", "3r", "--n", "10", "--eps", "1", "--reading", "algorithm2", "--split", "0.3"], "audit",
     "--split applies to the section4 reading only"),
    (["audit", "--method", "mq", "--n", "10", "--eps", "1", "--samples", "500"], "audit",
     "--samples applies to --attack only"),
    (["audit", "--method", "mq", "--n", "10", "--eps", "1", "--attack-seed", "3"], "audit",
     "--attack-seed applies to --attack only"),
    (["audit", "--method", "mq", "--n", "10", "--eps", "1", "--time-limit", "5"], "audit",
     "--time-limit applies to --attack only"),
    (["compare", "--n", "5", "--eps", "1,,2"], "compare", "--eps: empty item in '1,,2'"),
    (["compare", "--n", "5", "--eps", "1", "--private", "1,,2"], "compare", "--private: empty item"),
    (["compare", "--n", "5", "--eps", "1", "--private", "6"], "compare", "position 6 is outside"),
    (["design", "--n", "5", "--eps", "1", "--method", "mq", "--split", "half"], "design",
     "--split has no effect with --method mq"),
    (["design", "--n", "5", "--eps", "1", "--method", "dim", "--certify-time", "5"], "design",
     "--certify-time applies to --method optimal only"),
    (["design", "--n", "5", "--eps", "1", "--method", "mq", "--format", "json", "--no-compare"], "design",
     "--no-compare applies to --format text only"),
    (["design", "--n", "5", "--eps", "1", "--method", "mq", "--force"], "design", "--force applies to --out FILE"),
    (["design", "--n", "5", "--eps", "1", "--private", "1,3", "--split", "half"], "design",
     "--split applies to one private record"),
    (["design", "--n", "5", "--eps", "1", "--private", "1,3", "--certify-time", "3"], "design",
     "--certify-time applies to one private record"),
    (["design", "--n", "5", "--eps", "1", "--p", "2", "--private", "3"], "design",
     "give --private or its old spelling --p, not both"),
    (["design", "--n", "5", "--eps", "1", "--bogus"], "design", "unknown option --bogus"),
    (["audit", "--method", "mq", "--n", "5", "--eps", "1", "--what", "x"], "audit", "unknown option --what"),
    (["design", "--n", "5", "--eps", "1", "stray"], "design", "unrecognized arguments: stray"),
])
def test_options_a_mode_cannot_honour_are_errors(run, capsys, tmp_path, monkeypatch, argv, command, needle):
    monkeypatch.chdir(tmp_path)
    assert run(argv) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    _one_line_error(cap.err, command, needle)
    assert _listing(tmp_path) == []


def test_apply_dask_refuses_chunk_rows(run, capsys, csv_file):
    out = csv_file.parent / "out"
    assert run(["apply", str(csv_file), "--column", "occ", "--private", "5", "--eps", "1", "--out", str(out),
                "--backend", "dask", "--chunk-rows", "10"]) == 2
    _one_line_error(capsys.readouterr().err, "apply", "--chunk-rows applies to --backend memory only")
    assert not out.exists()


def _stopped(res):
    return dataclasses.replace(res, certificate=dataclasses.replace(res.certificate, stopped=True))


def test_design_says_when_the_time_limit_stopped_the_search(run, capsys, monkeypatch):
    real = cli.design
    monkeypatch.setattr(cli, "design", lambda *a, **k: _stopped(real(*a, **k)))
    assert run(["design", "--n", "8", "--eps", "1", "--method", "dim", "--no-compare"]) == 0
    out = capsys.readouterr().out
    gap_line = next(line for line in out.splitlines() if line.startswith("gap"))
    gap = float(gap_line.split(":")[1])
    lines = [line for line in out.splitlines() if "stopped by the time limit" in line]
    assert len(lines) == 1 and f"remaining gap {gap:.3g}" in lines[0]
    assert run(["design", "--n", "8", "--eps", "1", "--method", "dim", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["certificate"]["stopped"] is True
    monkeypatch.setattr(cli, "design", real)
    assert run(["design", "--n", "8", "--eps", "1", "--method", "dim", "--no-compare"]) == 0
    assert "stopped" not in capsys.readouterr().out


def test_compare_says_which_rows_were_stopped(run, capsys, monkeypatch):
    real = cli.design_point
    monkeypatch.setattr(cli, "design_point",
                        lambda chain, n, *a: _stopped(real(chain, n, *a)) if n == 6 else real(chain, n, *a))
    assert run(["compare", "--n", "5,6", "--eps", "1", "--alpha", "0.2", "--beta", "0.5"]) == 0
    out = capsys.readouterr().out
    stopped = [line for line in out.splitlines() if "stopped by the time limit" in line]
    assert len(stopped) == 1 and stopped[0].startswith("row 2 (n=6, p=1, eps=1)")
    assert run(["compare", "--n", "5,6", "--eps", "1", "--alpha", "0.2", "--beta", "0.5", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["optimal_stopped"] for r in rows] == [False, True]


# --------------------------------------------------------------------------
# one name per concept; old spellings still work, with a note
# --------------------------------------------------------------------------
@pytest.mark.parametrize("new,old,note", [
    (["design", "--n", "9", "--eps", "1", "--method", "mq", "--private", "4", "--format", "text"],
     ["design", "--n", "9", "--eps", "1", "--method", "mq", "--p", "4", "--format", "table"],
     "--p is deprecated; use --private"),
    (["audit", "--method", "3r", "--n", "9", "--eps", "1", "--private", "4", "--split", "0.3"],
     ["audit", "--method", "3r", "--n", "9", "--eps", "1", "--p", "4", "--eps-left", "0.3"],
     "--eps-left is deprecated; use --split"),
    (["compare", "--n", "5", "--eps", "1", "--private", "2", "--format", "text", "--alpha", "0.2", "--beta", "0.5"],
     ["compare", "--n", "5", "--eps", "1", "--p", "2", "--format", "markdown", "--alpha", "0.2", "--beta", "0.5"],
     "--format markdown is deprecated; use --format text"),
])
def test_old_spellings_are_aliases(run, capsys, new, old, note):
    code_new = run(new)
    cap_new = capsys.readouterr()
    code_old = run(old)
    cap_old = capsys.readouterr()
    assert code_new == code_old and cap_new.out == cap_old.out and cap_new.err == ""
    assert note in cap_old.err and all(line.startswith(f"redactopt {new[0]}: note: ") for line in cap_old.err.splitlines())
    assert run(old + ["--quiet"]) == code_old and capsys.readouterr().err == ""


def test_audit_old_seed_is_the_attack_seed(run, capsys):
    base = ["audit", "--method", "mq", "--n", "6", "--eps", "1", "--attack", "--samples", "2000", "--format", "json"]
    assert run(base + ["--attack-seed", "4"]) == 0
    new = json.loads(capsys.readouterr().out)
    assert run(base + ["--seed", "4"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out) == new and "--seed is deprecated; use --attack-seed" in cap.err


@pytest.mark.parametrize("command,old", [("design", "--p"), ("audit", "--eps-left"), ("audit", "--seed"),
                                         ("compare", "--p"), ("bench", "--out"), ("bench", "--seed"),
                                         ("bench", "--no-progress")])
def test_help_names_the_old_spelling(run, capsys, command, old):
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "--help"])
    assert exc.value.code == 0
    assert f"old spelling {old} accepted until the next release (deprecated)" in " ".join(capsys.readouterr().out.split())


def test_forced_optimiser_reports_its_own_name(run, capsys):
    assert run(["design", "--n", "6", "--eps", "1", "--alpha", "0.2", "--beta", "0.5", "--method", "sgp",
                "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["method"] == "sgp"
    assert leakage_bruteforce(MarkovChain(0.2, 0.5), dense_redact_prob(d), 0).leakage <= 1 + 1e-12


def test_bench_old_and_new_flags_and_overwrite(run, capsys, tmp_path, monkeypatch):
    calls = []

    def fake_run_bench(out, **kwargs):
        calls.append((Path(out), kwargs))
        Path(out).mkdir(exist_ok=True)
        (Path(out) / "fig2.png").write_bytes(b"png")
        return {"fig2": 0.5}

    monkeypatch.setattr(cli, "run_bench", fake_run_bench)
    out = tmp_path / "b"
    assert run(["bench", "--out-dir", str(out), "--audit-seed", "7", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["out_dir"] == str(out) and d["seconds"] == {"fig2": 0.5} and calls[-1][1]["seed"] == 7
    # a second run would overwrite the first: refused unless --force
    assert run(["bench", "--out-dir", str(out)]) == 2
    _one_line_error(capsys.readouterr().err, "bench", "fig2.png: exists")
    assert len(calls) == 1
    assert run(["bench", "--out", str(out), "--seed", "9", "--force"]) == 0
    cap = capsys.readouterr()
    assert calls[-1][0] == out and calls[-1][1]["seed"] == 9
    assert "--out is deprecated; use --out-dir" in cap.err and "--seed is deprecated; use --audit-seed" in cap.err
    assert run(["bench", "--out-dir", str(out), "--no-progress", "--force"]) == 0
    assert calls[-1][1]["progress"] is False and capsys.readouterr().err == ""  # quiet: no notes either
    # the parent of --out-dir must exist: a typo creates nothing
    assert run(["bench", "--out-dir", str(tmp_path / "typo" / "b")]) == 2
    _one_line_error(capsys.readouterr().err, "bench", "does not exist")
    assert not (tmp_path / "typo").exists()


# --------------------------------------------------------------------------
# every command speaks JSON
# --------------------------------------------------------------------------
def test_every_command_has_json(run, capsys, tmp_path, csv_file, mech_file):
    cmds = {
        "design": ["design", "--n", "6", "--eps", "1", "--method", "mq"],
        "audit": ["audit", str(mech_file)],
        "compare": ["compare", "--n", "5", "--eps", "1", "--alpha", "0.2", "--beta", "0.5"],
        "fit": ["fit", str(csv_file), "--column", "occ"],
        "apply": ["apply", str(csv_file), "--column", "occ", "--private", "150", "--eps", "1", "--seed", "1",
                  "--out", str(tmp_path / "o.csv")],
        "datasets": ["datasets", "list"],
    }
    for name, argv in cmds.items():
        assert run(argv + ["--format", "json"]) == 0, name
        json.loads(capsys.readouterr().out)
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():  # bench too (its run is tested above)
        fmt = next(a for a in p._actions if "--format" in a.option_strings)
        assert "json" in fmt.choices and "text" in fmt.choices, name


def test_apply_json_summary_matches_the_report(run, capsys, tmp_path, csv_file):
    rep = tmp_path / "r.json"
    assert run(["apply", str(csv_file), "--column", "occ", "--private", "150", "--eps", "1", "--seed", "1",
                "--out", str(tmp_path / "o.csv"), "--report", str(rep), "--format", "json"]) == 0
    s = json.loads(capsys.readouterr().out)
    r = json.loads(rep.read_text())
    released = pd.read_csv(tmp_path / "o.csv", dtype=str, keep_default_na=False)
    assert s["redacted"] == int((released["occ"] == "").sum()) == r["utility"]["redacted"]
    assert s["leakage"] == {"max": r["leakage"]["max"], "private_records": 1}
    assert s["report"] == str(rep) and s["label"] == r["label"]


# --------------------------------------------------------------------------
# '-' is standard input / output
# --------------------------------------------------------------------------
def test_out_dash_is_stdout(run, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run(["design", "--n", "6", "--eps", "1", "--method", "mq", "--format", "json", "--out", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "mq"
    assert run(["compare", "--n", "5", "--eps", "1", "--format", "csv", "--out", "-"]) == 0
    assert capsys.readouterr().out.startswith("n,p,alpha,beta,eps,")
    assert _listing(tmp_path) == []


def _stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_audit_reads_stdin(run, capsys, monkeypatch, mech_file):
    assert run(["audit", str(mech_file), "--format", "json"]) == 0
    from_file = json.loads(capsys.readouterr().out)
    _stdin(monkeypatch, mech_file.read_bytes())
    assert run(["audit", "-", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == from_file
    _stdin(monkeypatch, b"{oops")
    assert run(["audit", "-"]) == 2
    _one_line_error(capsys.readouterr().err, "audit", "<stdin>: malformed JSON")


def test_fit_and_apply_read_stdin_and_write_stdout(run, capsys, monkeypatch, tmp_path, csv_file):
    assert run(["fit", str(csv_file), "--column", "occ", "--format", "json"]) == 0
    from_file = json.loads(capsys.readouterr().out)
    _stdin(monkeypatch, csv_file.read_bytes())
    assert run(["fit", "-", "--column", "occ", "--format", "json"]) == 0
    from_stdin = json.loads(capsys.readouterr().out)
    assert from_stdin.pop("input") == "-" and from_file.pop("input") == str(csv_file)
    assert from_stdin == from_file
    # apply: CSV in on stdin, CSV out on stdout, the summary on stderr; same draws as from the file
    monkeypatch.chdir(tmp_path)
    ref = tmp_path / "ref.csv"
    args = ["--column", "occ", "--private", "100-102", "--eps", "1", "--alpha", "0.1", "--beta", "0.3", "--seed", "8"]
    assert run(["apply", str(csv_file), *args, "--out", str(ref)]) == 0
    capsys.readouterr()
    _stdin(monkeypatch, csv_file.read_bytes())
    before = _listing(tmp_path)
    assert run(["apply", "-", *args, "--out", "-"]) == 0
    cap = capsys.readouterr()
    assert cap.out == ref.read_text()
    assert cap.err.startswith("WARNINGS  : ") and "\n\nwrote     : -  (300 rows" in cap.err  # warnings first
    assert _listing(tmp_path) == before  # no file named '-', no temporary copy left
    _stdin(monkeypatch, b"t,occ\n0,1\n1,7\n")
    assert run(["apply", "-", *args[:2], "--private", "1", "--eps", "1", "--out", "-"]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    _one_line_error(cap.err, "apply", "<stdin>: row 2, column 'occ': value '7' is not 0 or 1")


def test_apply_report_on_stdout(run, capsys, tmp_path, csv_file):
    out = tmp_path / "o.csv"
    assert run(["apply", str(csv_file), "--column", "occ", "--private", "150", "--eps", "1", "--seed", "2",
                "--out", str(out), "--report", "-"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["format"] == "redactopt.release.apply-report/3"
    assert cap.err.startswith("WARNINGS  : ") and "\n\nwrote     : " in cap.err
    assert run(["apply", str(csv_file), "--column", "occ", "--private", "150", "--eps", "1",
                "--out", "-", "--report", "-"]) == 2
    _one_line_error(capsys.readouterr().err, "apply", "both ask for standard output")


# --------------------------------------------------------------------------
# outputs: no directories created, permissions from the umask, one wording for a missing input
# --------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["design", "--n", "6", "--eps", "1", "--method", "mq", "--out", "{tmp}/typo/m.json"],
    ["compare", "--n", "5", "--eps", "1", "--out", "{tmp}/typo/c.md"],
    ["apply", "{csv}", "--column", "occ", "--private", "5", "--eps", "1", "--out", "{tmp}/typo/o.csv"],
    ["apply", "{csv}", "--column", "occ", "--private", "5", "--eps", "1", "--out", "{tmp}/o.csv",
     "--report", "{tmp}/typo/r.json"],
    ["apply", "{csv}", "--column", "occ", "--private", "5", "--eps", "1", "--out", "{tmp}/typo/o", "--backend", "dask"],
])
def test_outputs_never_create_directories(run, capsys, tmp_path, csv_file, argv):
    before = _listing(tmp_path)
    assert run([a.format(tmp=tmp_path, csv=csv_file) for a in argv]) == 2
    _one_line_error(capsys.readouterr().err, argv[0], "typo does not exist")
    assert _listing(tmp_path) == before


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_written_files_get_the_umask_permissions(run, capsys, tmp_path, csv_file, mask, umask):
    umask(mask)
    files = [tmp_path / "m.json", tmp_path / "o.csv", tmp_path / "o.parquet", tmp_path / "r.json"]
    assert run(["design", "--n", "6", "--eps", "1", "--method", "mq", "--format", "json", "--out", str(files[0])]) == 0
    for out in files[1:3]:
        assert run(["apply", str(csv_file), "--column", "occ", "--private", "5", "--eps", "1", "--seed", "1",
                    "--out", str(out), "--report", str(files[3]), "--force"]) == 0
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == 0o666 & ~mask, f
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_dask_output_directory_gets_the_umask_permissions(run, capsys, tmp_path, umask):
    pytest.importorskip("dask")  # the [dask] extra; installed by the README's and CI's install
    umask(0o022)
    src = tmp_path / "in.parquet"
    x = sample_chains(MarkovChain(0.1, 0.3), 200, 1, np.random.default_rng(2))[0]
    pd.DataFrame({"occ": x.astype(np.int64)}).to_parquet(src)
    out = tmp_path / "out"
    assert run(["apply", str(src), "--column", "occ", "--private", "50", "--eps", "1", "--seed", "1",
                "--out", str(out), "--backend", "dask"]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o644 for f in out.iterdir())


@pytest.mark.parametrize("argv", [
    ["audit", "{tmp}/nope.json"],
    ["fit", "{tmp}/nope.csv", "--column", "x"],
    ["apply", "{tmp}/nope.csv", "--column", "x", "--private", "1", "--eps", "1", "--out", "{tmp}/o.csv"],
    ["apply", "{tmp}/nope.parquet", "--column", "x", "--private", "1", "--eps", "1", "--out", "{tmp}/o",
     "--backend", "dask"],
])
def test_missing_input_has_one_wording(run, capsys, tmp_path, argv):
    assert run([a.format(tmp=tmp_path) for a in argv]) == 2
    _one_line_error(capsys.readouterr().err, argv[0], "nope.")
    assert capsys.readouterr().err == ""


def test_missing_input_wording_is_the_same_everywhere(run, capsys, tmp_path):
    msgs = []
    for argv in (["audit", f"{tmp_path}/nope"], ["fit", f"{tmp_path}/nope.csv", "--column", "x"],
                 ["apply", f"{tmp_path}/nope.csv", "--column", "x", "--private", "1", "--eps", "1",
                  "--out", f"{tmp_path}/o.csv"]):
        assert run(argv) == 2
        msgs.append(capsys.readouterr().err.split(": error: ", 1)[1].split(": ", 1)[1])
    assert msgs == ["no such file or directory\n"] * 3


# --------------------------------------------------------------------------
# audit reads apply reports; long lists are summarised
# --------------------------------------------------------------------------
def test_positions_and_witness_summaries():
    assert positions_text([1]) == "[1]"
    assert positions_text([3, 1, 2, 9]) == "[3, 1, 2, 9]"
    assert positions_text(list(range(1120, 1180))) == "1120-1179 (60 positions)"
    assert positions_text([1, 2, 3, 7, 9, 10]) == "1-3,7,9-10 (6 positions)"
    assert positions_text(list(range(1, 60, 2))) == "1,3,5,7,9,11,… 18 more …,49,51,53,55,57,59 (30 positions)"
    short = [None, 0, 1] + [0] * 57
    assert witness_text(short) == "⊥ 0 1 " + " ".join(["0"] * 57)
    long = [0] * 1000 + [1] + [None] * 296 + [1] + [0] * 6845
    assert witness_text(long) == "1-1000: 0  1001: 1  1002-1297: ⊥  1298: 1  1299-8143: 0  (8143 records; " \
                                 "--format json lists each)"


def test_audit_reads_a_report_with_several_sequences(run, capsys, tmp_path):
    rng = np.random.default_rng(3)
    ids = np.repeat(["a", "b", "c"], 150)
    x = np.concatenate([sample_chains(MarkovChain(0.1, 0.3), 150, 1, rng)[0] for _ in range(3)])
    priv = np.zeros(450, dtype=int)
    priv[[20, 170]] = 1  # sequence a (position 21) and b (position 21); c has none
    src = tmp_path / "in.csv"
    pd.DataFrame({"sid": ids, "x": x, "priv": priv}).to_csv(src, index=False)
    rep = tmp_path / "r.json"
    assert run(["apply", str(src), "--column", "x", "--by", "sid", "--private-column", "priv", "--eps", "1",
                "--seed", "1", "--out", str(tmp_path / "o.csv"), "--report", str(rep)]) == 0
    capsys.readouterr()
    assert run(["audit", str(rep), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["passed"] is True and [s["sequence"] for s in d["sequences"]] == ["a", "b"]
    r = json.loads(rep.read_text())
    for s in d["sequences"]:
        m = next(q for q in r["sequences"] if q["id"] == s["sequence"])["mechanism"]
        assert s["private"] == [21] and s["leakage"] <= 1.0
        assert s["leakage"] == pytest.approx(m["leakage"], abs=1e-12)
    assert run(["audit", str(rep)]) == 0
    text = capsys.readouterr().out
    assert text.count("sequence  : ") == 2 and text.rstrip().endswith("PASS (2 of 2 sequences pass)")


def test_top_level_exports():
    for name in ("design", "design_joint", "audit", "apply_table", "apply_frame", "three_region", "datasets"):
        assert callable(getattr(redactopt, name)) or name == "datasets", name
    assert redactopt.datasets.path("occupancy").exists()


# --------------------------------------------------------------------------
# progress
# --------------------------------------------------------------------------
class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bars_only_on_a_terminal_and_never_with_quiet(run, capsys, monkeypatch):
    argv = ["compare", "--n", "4,5", "--eps", "1", "--alpha", "0.2", "--beta", "0.5", "--format", "csv"]
    assert run(argv) == 0
    assert capsys.readouterr().err == ""  # not a terminal: no bar
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert run(argv + ["--quiet"]) == 0
    assert term.getvalue() == ""
    assert run(argv) == 0
    assert "compare:" in term.getvalue() and "/2 [" in term.getvalue()


def test_apply_reports_progress_per_chunk(tmp_path, csv_file):
    from redactopt.release.apply import apply_table

    calls = []
    apply_table(csv_file, tmp_path / "o.csv", column="occ", eps=1.0, private=[150], alpha=0.1, beta=0.3, seed=1,
                chunk_rows=70, progress=lambda *a: calls.append(a))
    assert [c for c in calls if c[0] == "scan"] == [("scan", r, None) for r in (70, 140, 210, 280, 300)]
    # a CSV release copies bytes, and reports per block of bytes; its last report is the whole file
    done = [c[1] for c in calls if c[0] == "release"]
    assert done == sorted(done) and done[-1] == 300 and all(c[2] == 300 for c in calls if c[0] == "release")
    calls.clear()
    apply_table(csv_file, tmp_path / "o.parquet", column="occ", eps=1.0, private=[150], alpha=0.1, beta=0.3,
                seed=1, chunk_rows=70, progress=lambda *a: calls.append(a))
    assert [c for c in calls if c[0] == "release"] == [("release", r, 300) for r in (70, 140, 210, 280, 300)]


def test_attack_runs_in_batches_with_progress(monkeypatch):
    from redactopt.judge import attack as attack_mod

    q = [[1, 1], [0.12, 1.0]]  # Example 1: leakage log(28/17)
    ch = MarkovChain(0.25, 0.5)
    whole = attack_mod.attack(ch, q, p=0, samples=3000, rng=np.random.default_rng(4))
    monkeypatch.setattr(attack_mod, "BATCH_CELLS", 2 * 700)  # batches of 700 chains of 2 records
    ticks = []
    batched = attack_mod.attack(ch, q, p=0, samples=3000, rng=np.random.default_rng(4),
                                progress=lambda done, total: ticks.append((done, total)))
    assert ticks == [(d, 6000) for d in (700, 1400, 2100, 2800, 3000, 3700, 4400, 5100, 5800, 6000)]
    assert batched.lower_bound <= np.log(28 / 17) + 1e-12 and whole.lower_bound <= np.log(28 / 17) + 1e-12
    assert batched.max_observed == pytest.approx(np.log(28 / 17), abs=1e-9)


def test_attack_refuses_up_front_when_it_would_take_too_long(run, capsys):
    assert run(["audit", "--method", "3r", "--n", "10", "--eps", "0.5", "--attack", "--samples", "200000",
                "--time-limit", "0.001"]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    _one_line_error(cap.err, "audit", "--attack would take about")
    assert "raise --time-limit (now 0.001 s)" in cap.err


def test_attack_stops_after_its_first_batch_when_too_slow(monkeypatch):
    from redactopt.errors import TooLongError
    from redactopt.judge import attack as attack_mod

    monkeypatch.setattr(attack_mod, "BATCH_CELLS", 10 * 100)  # batches of 100 chains of 10 records
    m = three_region(FIG3, 10, eps=1.0, p=0)
    ticks = []
    with pytest.raises(TooLongError) as exc:
        attack_mod.attack(FIG3, m.redact_prob, p=0, samples=100_000, rng=np.random.default_rng(0),
                          progress=lambda done, total: ticks.append(done), max_seconds=1e-9)
    assert ticks == [] and exc.value.seconds > 0  # stopped at the first batch, before any progress
    res = attack_mod.attack(FIG3, m.redact_prob, p=0, samples=1000, rng=np.random.default_rng(0), max_seconds=1e9)
    assert res.lower_bound <= m.leakage().leakage + 1e-12


def test_design_reports_progress_as_optimisers_finish(run, capsys, monkeypatch):
    from redactopt import MarkovChain, design

    calls = []
    design(MarkovChain(0.2, 0.5), 4, eps=1.0, p=1, progress=lambda *a: calls.append(a))
    assert calls[0] == ("design", 0, calls[-1][2]) and calls[-1] == ("design", calls[-1][2], calls[-1][2])
    assert [c[1] for c in calls] == list(range(calls[-1][2] + 1))
    # the CLI draws a bar whenever stderr is a terminal (after a second; REDACTOPT_PROGRESS_DELAY=0: at once),
    # whatever stdout is: JSON to a pipe too (tests/test_progress.py runs the real terminal case)
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.setenv("REDACTOPT_PROGRESS_DELAY", "0")
    assert run(["design", "--n", "4", "--eps", "1", "--private", "2", "--no-compare"]) == 0
    assert "design:" in term.getvalue()
    term.seek(0)
    term.truncate()
    assert run(["design", "--n", "4", "--eps", "1", "--private", "2", "--format", "json"]) == 0
    assert "design:" in term.getvalue()  # stdout (captured) is not a terminal: stderr is
    term.seek(0)
    term.truncate()
    assert run(["design", "--n", "4", "--eps", "1", "--private", "2", "--quiet"]) == 0
    assert term.getvalue() == ""


