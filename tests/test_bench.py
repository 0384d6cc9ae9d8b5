"""Entries of the benchmark tables checked against independent computations."""

import csv
import itertools
import math
import runpy
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from redactopt.interface import bench
from redactopt.model.chain import MarkovChain
from redactopt.interface.cli import main
from redactopt.judge.leakage import leakage_bruteforce
from conftest import matrix_power_P


def _read(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


def test_table1_and_example1(tmp_path):
    bench.table1(tmp_path)
    text = (tmp_path / "table1.md").read_text()
    assert "| x=0 | 3/2 | 1/2 |" in text and "| x=1 | 2/3 | 2 |" in text
    bench.example1(tmp_path)
    ex = (tmp_path / "example1.md").read_text()
    assert "0.293333" in ex  # 0.5 * 0.88 * 2/3 by hand
    assert "0.119" in ex


def _dim_bruteforce(chain, n, p, eps):
    """Best data-independent mechanism by trying every published subset (exact leakage)."""
    others = [t for t in range(n) if t != p]
    best = 0
    for k in range(len(others), -1, -1):
        for pub in itertools.combinations(others, k):
            q = np.ones((n, 2))
            q[list(pub)] = 0.0
            if leakage_bruteforce(chain, q, p).leakage <= eps * (1 + 1e-12):
                return k / n
    return best


def test_fig3_rows_against_independent_computations(tmp_path):
    rows = bench.fig3(tmp_path, (0.5, 2.0), time_limit=60, progress=False)
    assert (tmp_path / "fig3.png").stat().st_size > 10_000
    on_disk = _read(tmp_path / "fig3.csv")
    assert list(on_disk[0]) == ["eps", "optimal", "optimal_upper_bound", "calibrated_3r", "three_region",
                                "three_region_leakage", "mq", "dim_optimal", "thm2_bound"]
    ch = MarkovChain(0.01, 0.8)
    for r in rows:
        eps = r["eps"]
        # 3R's exact leakage by brute force over all 3^10 outputs
        from redactopt.paper.mechanisms import three_region

        m = three_region(ch, 10, eps=eps, p=0)
        assert r["three_region_leakage"] == pytest.approx(leakage_bruteforce(ch, m.redact_prob, 0).leakage, abs=1e-12)
        # the DIM optimum by trying every published subset
        assert r["dim_optimal"] == pytest.approx(_dim_bruteforce(ch, 10, 0, eps))
        # Theorem 2 for p = 1 is 1 - Delta*(eps)/n, Delta* from matrix powers
        d = 1
        while max(abs(math.log(matrix_power_P(0.01, 0.8, d)[0, x] / matrix_power_P(0.01, 0.8, d)[1, x]))
                  for x in (0, 1)) > eps:
            d += 1
        assert r["thm2_bound"] == pytest.approx(1 - d / 10)
        assert r["dim_optimal"] - 1e-12 <= r["optimal"] <= r["optimal_upper_bound"] + 1e-12
        assert r["calibrated_3r"] <= r["optimal"] + 1e-12


def test_paper_audit_points_rechecked(tmp_path):
    res = bench.paper_audit(tmp_path, points=40, seed=7, progress=False)
    summary = _read(tmp_path / "paper_audit.csv")
    assert summary[0]["claim"].startswith("3R is eps-private")
    small = [r for r in res["rows"] if r["n"] <= 9][:8]
    assert small
    from redactopt.paper.mechanisms import three_region

    for r in small:
        ch = MarkovChain(r["alpha"], r["beta"])
        m = three_region(ch, r["n"], eps=r["eps"], p=r["p"] - 1)
        assert r["3r_section4_leakage"] == pytest.approx(
            leakage_bruteforce(ch, m.redact_prob, r["p"] - 1).leakage, abs=1e-10)
    share = np.mean([r["3r_section4_leakage"] > r["eps"] * (1 + 1e-12) for r in res["rows"]])
    assert float(summary[0]["share_violating"]) == pytest.approx(share)


@pytest.mark.slow
def test_bench_quick_writes_every_file(tmp_path):
    out = tmp_path / "bench"
    assert main(["bench", "--quick", "--out-dir", str(out), "--quiet", "--audit-points", "300"]) == 0
    for name in ("fig2.png", "fig3.png", "fig3.csv", "fig4.png", "table1.md", "example1.md", "gap_table.csv",
                 "gap_table.md", "paper_audit.csv", "paper_audit.md", "timings.md"):
        assert (out / name).exists(), name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench"]  # nothing written outside DIR


# --------------------------------------------------------------------------
# the benchmark scripts: --help runs nothing, results go to --out only, cleanup on interrupt
# --------------------------------------------------------------------------
SCRIPTS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("script", ["leakage_speed", "design_speed", "apply_speed", "attack_speed", "dask_speed",
                                    "scip_probe", "run_all", "kstate_speed", "kstate_release", "many_speed",
                                    "design_scale", "chain_forms", "one_model", "price_of_locality", "html_report",
                                    "kstate_certify_sweep", "classes_speed", "signals"])
def test_benchmark_help_prints_usage_and_runs_nothing(script, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [f"{script}.py", "--help"])
    with pytest.raises(SystemExit) as exc:
        runpy.run_path(str(SCRIPTS / f"{script}.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert exc.value.code == 0 and out.startswith(f"usage: {script}.py")
    flat = " ".join(out.split()).replace("bench- out", "bench-out")  # argparse may wrap at the hyphen
    assert "--out DIR" in flat and "bench-out" in flat
    assert list(tmp_path.iterdir()) == []  # nothing written, not even the default folder


def test_benchmark_writes_into_out_only(tmp_path):
    out = tmp_path / "res"
    proc = subprocess.run([sys.executable, str(SCRIPTS / "leakage_speed.py"), "--quick", "--out", str(out)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]
    assert sorted(p.name for p in out.iterdir()) == ["leakage_speed.csv", "leakage_speed.md"]
    rows = _read(out / "leakage_speed.csv")
    assert [int(r["n"]) for r in rows] == [8, 9, 10, 11, 12, 10_000, 100_000]
    missing_parent = subprocess.run([sys.executable, str(SCRIPTS / "leakage_speed.py"), "--out",
                                     str(tmp_path / "typo" / "res")], capture_output=True, text=True, timeout=120)
    assert missing_parent.returncode != 0 and "does not exist" in missing_parent.stderr
    assert not (tmp_path / "typo").exists()


@pytest.mark.slow
def test_interrupted_apply_benchmark_leaves_no_temporary_folder(tmp_path):
    out = tmp_path / "res"
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "apply_speed.py"), "--quick", "--chunks", "1",
                             "--sizes", "3000000", "--out", str(out)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True,  # SIGINT as in a terminal (not inherited ignored)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 240
        while not (out.exists() and any(p.name.startswith("_apply_tmp") for p in out.iterdir())):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(1.0)  # the input file is being generated
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0 and "KeyboardInterrupt" in proc.stderr.read()
    assert list(out.iterdir()) == []
