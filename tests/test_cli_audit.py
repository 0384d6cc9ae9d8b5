import json
import subprocess
import sys

import numpy as np
import pytest

from redactopt.model.chain import MarkovChain
from redactopt.interface.cli import main
from redactopt.io import mechanism_to_dict, read_mechanism
from redactopt.judge.leakage import leakage_bruteforce, utility


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_audit_3r_fails_where_the_paper_leaks(capsys):
    code, out, err = run(capsys, "audit", "--method", "3r", "--n", "10", "--eps", "0.5")
    assert code == 1
    assert "FAIL" in out and err == ""


def test_audit_json_fields_and_values(capsys):
    code, out, _ = run(capsys, "audit", "--method", "3r", "--n", "10", "--eps", "1", "--format", "json")
    rep = json.loads(out)
    ch = MarkovChain(0.01, 0.8)
    q = np.zeros((10, 2))
    q[0] = 1
    q[1] = q[2] = [np.exp(-0.5), 1]
    assert rep["leakage"] == pytest.approx(leakage_bruteforce(ch, q, 0).leakage, abs=1e-12)
    assert rep["utility"] == pytest.approx(utility(ch, q))
    assert rep["passed"] == (rep["leakage"] <= 1.0)
    assert code == (0 if rep["passed"] else 1)
    assert len(rep["witness"]) == 10 and rep["witness"][0] is None
    assert set(rep["witness"]) <= {None, 0, 1}
    assert rep["eps"] == 1.0


def test_audit_mq_passes(capsys):
    code, out, _ = run(capsys, "audit", "--method", "mq", "--n", "10", "--eps", "1", "--p", "5")
    assert code == 0 and "PASS" in out


def test_audit_file_roundtrip(tmp_path, capsys):
    ch = MarkovChain(0.2, 0.3)
    q = np.array([[0.1, 0.9], [1, 1], [0.5, 0.5], [0, 0]])
    d = mechanism_to_dict(ch, q, private=[1], eps=2.0, method="hand", utility=utility(ch, q), leakage=0.0)
    f = tmp_path / "m.json"
    f.write_text(json.dumps(d))
    mf = read_mechanism(f)
    assert mf.private == (1,) and np.array_equal(mf.redact_prob, q)
    code, out, _ = run(capsys, "audit", str(f), "--format", "json")
    rep = json.loads(out)
    assert rep["leakage"] == pytest.approx(leakage_bruteforce(ch, q, 1).leakage, abs=1e-12)
    assert rep["private"] == [2]


BAD_FILES = {
    "malformed.json": "{not json",
    "list.json": "[1, 2]",
    "noformat.json": json.dumps({"chain": {"alpha": 0.1, "beta": 0.2}}),
    "badalpha.json": json.dumps({"format": "redactopt.mechanism/1", "chain": {"alpha": 1.5, "beta": 0.2}, "n": 1,
                                 "private": [1], "eps": 1, "redact_prob": [[1, 1]]}),
    "shape.json": json.dumps({"format": "redactopt.mechanism/1", "chain": {"alpha": 0.1, "beta": 0.2}, "n": 2,
                              "private": [1], "eps": 1, "redact_prob": [[1, 1]]}),
    "prob.json": json.dumps({"format": "redactopt.mechanism/1", "chain": {"alpha": 0.1, "beta": 0.2}, "n": 2,
                             "private": [1], "eps": 1, "redact_prob": [[1, 1], [0.5, 2]]}),
    "notredacted.json": json.dumps({"format": "redactopt.mechanism/1", "chain": {"alpha": 0.1, "beta": 0.2}, "n": 2,
                                    "private": [1], "eps": 1, "redact_prob": [[1, 0.5], [0.5, 0.5]]}),
    "eps.json": json.dumps({"format": "redactopt.mechanism/1", "chain": {"alpha": 0.1, "beta": 0.2}, "n": 2,
                            "private": [1], "eps": -1, "redact_prob": [[1, 1], [0.5, 0.5]]}),
    "private.json": json.dumps({"format": "redactopt.mechanism/1", "chain": {"alpha": 0.1, "beta": 0.2}, "n": 2,
                                "private": [3], "eps": 1, "redact_prob": [[1, 1], [0.5, 0.5]]}),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_audit_bad_files_exit_2_one_line(tmp_path, capsys, name):
    f = tmp_path / name
    f.write_text(BAD_FILES[name])
    code, out, err = run(capsys, "audit", str(f))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "--method", "3r", "--n", "10", "--eps", "nan"],
        ["audit", "--method", "3r", "--n", "10", "--eps", "inf"],
        ["audit", "--method", "3r", "--n", "10", "--eps", "0"],
        ["audit", "--method", "3r", "--n", "10", "--eps", "-1"],
        ["audit", "--method", "3r", "--n", "0", "--eps", "1"],
        ["audit", "--method", "3r", "--n", "10", "--eps", "1", "--p", "11"],
        ["audit", "--method", "3r", "--n", "10", "--eps", "1", "--p", "0"],
        ["audit", "--method", "3r", "--n", "10", "--eps", "1", "--alpha", "1"],
        ["audit", "--method", "3r", "--n", "10", "--eps", "1", "--beta", "-0.2"],
        ["audit", "--method", "3r", "--n", "ten", "--eps", "1"],
        ["audit", "--method", "3r", "--n", "10"],
        ["audit", "--method", "xx", "--n", "10", "--eps", "1"],
        ["audit"],
        ["audit", "/no/such/file.json"],
        ["audit", "/tmp"],
        ["audit", "--method", "3r", "--n", "10", "--eps", "1", "--eps-left", "2", "--p", "5"],
    ],
)
def test_audit_bad_usage_exit_2_one_line(capsys, argv):
    with pytest.raises(SystemExit) as exc_info:
        raise SystemExit(main(argv))
    assert exc_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_console_script_runs_as_a_process():
    proc = subprocess.run(
        [sys.executable, "-m", "redactopt.interface.cli", "audit", "--method", "3r", "--n", "10", "--eps", "0.5"],
        capture_output=True, text=True,
    )
    assert proc.returncode == 1 and "FAIL" in proc.stdout


def test_closed_pipe_stops_quietly_and_bugs_are_one_line():
    """`redactopt audit ... | head -1`: a reader that goes away is not an internal error."""
    script = ("import sys\nfrom redactopt.interface.cli import main\n"
              "sys.exit(main(['audit', '--method', 'mq', '--n', '10', '--eps', '1', '--format', 'json']))")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # nobody reads: the first write gets EPIPE
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "internal error" not in err and "Traceback" not in err
    assert proc.returncode in (0, 141)


def test_internal_error_is_one_line_exit_3(monkeypatch, capsys):
    import redactopt.interface.cli as cli

    real = cli.build_parser

    def boom(args):
        raise RuntimeError("simulated bug")

    def parser_with_a_bug():
        ap = real()
        parse = ap.parse_known_args

        def parse_and_break(argv):
            args, extra = parse(argv)
            args.func = boom
            return args, extra

        ap.parse_known_args = parse_and_break
        return ap

    monkeypatch.setattr(cli, "build_parser", parser_with_a_bug)
    monkeypatch.delenv("REDACTOPT_DEBUG", raising=False)
    assert cli.main(["audit", "--method", "mq", "--n", "10", "--eps", "1"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: RuntimeError: simulated bug" in err
