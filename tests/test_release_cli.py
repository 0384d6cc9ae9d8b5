"""The release commands forgive (issue 24, the release's items): delimiters, a constant column, a missing
input, Ctrl-C, counts that agree, exact zeros."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

import redactopt as ro


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_a_csv_with_another_delimiter_is_read_as_it_is_written(tmp_path, run, capsys, sep):
    src = tmp_path / "in.csv"
    x = [0, 0, 1, 1, 1, 0, 0, 0, 1, 0]
    src.write_text(sep.join(["date", "Occupancy", "optout"]) + "\n" +
                   "".join(sep.join([f"d{i}", str(v), str(int(i == 4))]) + "\n" for i, v in enumerate(x)))
    out = tmp_path / "out.csv"
    assert run(["apply", str(src), "--column", "Occupancy", "--private-column", "optout", "--eps", "1",
                "--alpha", "0.2", "--beta", "0.3", "--seed", "1", "--out", str(out)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    back = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(back.columns) == ["Occupancy"] and len(back) == 10 and back["Occupancy"][4] == ""
    assert run(["fit", str(src), "--column", "Occupancy", "--format", "json"]) == 0
    fit = json.loads(capsys.readouterr().out)
    assert fit["counts"] == {"00": 3, "01": 2, "10": 2, "11": 2}  # counted by hand from x


def test_a_missing_column_names_the_delimiter_it_read(tmp_path, run, capsys):
    src = tmp_path / "in.csv"
    src.write_text("a\tb\n0\t1\n1\t0\n")
    assert run(["apply", str(src), "--column", "x", "--private", "1", "--eps", "1", "--alpha", "0.1", "--beta",
                "0.2", "--out", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert "no column 'x' (columns: a, b; fields read as separated by '\\t')" in err and err.count("\n") == 1


def test_fit_of_a_constant_column_says_so(tmp_path, run, capsys):
    src = tmp_path / "c.csv"
    src.write_text("x\n" + "0\n" * 20)
    assert run(["fit", str(src), "--column", "x"]) == 2
    err = capsys.readouterr().err
    assert "the column is constant (every value is 0" in err and err.count("\n") == 1
    src.write_text("x\n" + "0\n" * 20 + "1\n")  # a 1 only as the last record: the other message
    assert run(["fit", str(src), "--column", "x"]) == 2
    assert "every 1 is the last record" in capsys.readouterr().err


def test_a_missing_input_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="nofile.csv: no such file"):
        ro.apply_table(tmp_path / "nofile.csv", tmp_path / "o.csv", column="x", eps=1.0, private=[0])
    assert not (tmp_path / "o.csv").exists()


def test_the_designs_line_counts_agree(tmp_path, run, capsys):
    rng = np.random.default_rng(3)
    frames = []
    for i in range(6):  # six groups, some near an end (wipes and mirror images), some sharing a design
        x = rng.integers(0, 2, 400)
        o = np.zeros(400, dtype=int)
        o[[5, 200, 395][i % 3]] = 1
        frames.append(pd.DataFrame({"sid": f"s{i}", "x": x, "o": o}))
    pd.concat(frames).to_csv(tmp_path / "m.csv", index=False)
    assert run(["apply", str(tmp_path / "m.csv"), "--column", "x", "--by", "sid", "--private-column", "o", "--eps",
                "1", "--alpha", "0.05", "--beta", "0.2", "--out", str(tmp_path / "o.csv"), "--report",
                str(tmp_path / "r.json"), "--workers", "1"]) == 0
    text = capsys.readouterr().out
    d = json.loads((tmp_path / "r.json").read_text())["designs"]
    line = next(s for s in text.splitlines() if s.startswith("designs"))
    assert line == (f"designs   : {d['shapes']} distinct for 6 group(s) of private records in 6 sequence(s), "
                    f"{6 - d['shapes']} group(s) sharing one; {d['computed'] + d['reflected']} candidate design(s) "
                    f"verified ({d['computed']} computed, {d['reflected']} as mirror images)")
    assert d["shapes"] == 3 and d["reflected"] == 1  # the start, the far middle, the end (a mirror image)


def test_a_fully_redacted_sequence_reports_exact_zeros(tmp_path, run, capsys):
    rows = [("a", v, int(i == 1)) for i, v in enumerate([0, 0, 1, 1])] + [("b", i % 2, 0) for i in range(50)]
    pd.DataFrame(rows, columns=["p", "x", "o"]).to_csv(tmp_path / "t.csv", index=False)
    for extra in (["--alpha", "0.003", "--beta", "0.012"], ["--transition", "0.997,0.003;0.012,0.988"]):
        assert run(["apply", str(tmp_path / "t.csv"), "--column", "x", "--by", "p", "--private-column", "o", "--eps",
                    "1", "--out", str(tmp_path / "o.csv"), "--force", *extra]) == 0
        text = capsys.readouterr().out
        assert "leakage   : 0  (exact" in text, text  # all four records of 'a' redacted: exactly 0


def test_ctrl_c_during_apply_is_one_line_exit_130_and_leaves_nothing(tmp_path):
    rng = np.random.default_rng(0)
    k, n = 900, 2000  # 900 distinct designs: seconds of work in the worker processes, even on a fast machine
    o = np.zeros(k * n, dtype=np.int8)
    for i in range(k):
        o[i * n + 1000] = 1
        o[i * n + 1005 + 3 * (i % 300)] = 1
        o[i * n + 1950 - 7 * (i // 300)] = 1
    pd.DataFrame({"sid": np.repeat(np.arange(k), n), "x": rng.integers(0, 2, k * n), "o": o}).to_csv(
        tmp_path / "big.csv", index=False)
    out = tmp_path / "out.csv"
    proc = subprocess.Popen([sys.executable, "-m", "redactopt", "apply", str(tmp_path / "big.csv"), "--column", "x",
                             "--by", "sid", "--private-column", "o", "--eps", "1", "--alpha", "0.003", "--beta",
                             "0.012", "--workers", "2", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # as in a terminal: a runner started in the background (no job control) passes
                            # SIGINT down ignored, and then no Ctrl-C could reach the command at all
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # interrupt once the release is under way: its design processes (or their fork server) have started,
    # so the command is past its imports, inside its own handling (a loaded machine may take a while)
    children = f"/proc/{proc.pid}/task/{proc.pid}/children"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if open(children).read().strip():
            break
        time.sleep(0.05)
    time.sleep(0.5)
    assert proc.poll() is None, "the release finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    t0 = time.perf_counter()
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and stderr == "redactopt apply: interrupted\n", stderr
    assert time.perf_counter() - t0 < 20 and stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.csv"]  # no output, no temporary file
