"""design --plot, compare --plot, apply --html and redactopt report through the command line (issue 27).

Bad input is one line on stderr, exit 2, and nothing is written: not the figure, not the page, and
not the release or report of the command refused.
"""

from __future__ import annotations

import json

import pytest

from redactopt import datasets
from redactopt.interface import cli


def run(argv, capsys):
    code = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line(err: str, command: str, words: str) -> None:
    assert err.count("\n") == 1 and err.startswith(f"redactopt {command}: error:") and words in err, err


def test_design_plot(tmp_path, capsys):
    code, out, _ = run(["design", "--n", "10", "--eps", "1", "--method", "dim", "--plot", tmp_path / "d.png"], capsys)
    assert code == 0 and out.endswith(f"wrote {tmp_path / 'd.png'}\n")
    assert (tmp_path / "d.png").read_bytes()[:4] == b"\x89PNG"
    code, out, err = run(["design", "--n", "10", "--eps", "1", "--method", "dim", "--format", "json", "--out",
                          tmp_path / "d.json", "--plot", tmp_path / "d.svg"], capsys)
    assert code == 0 and json.loads((tmp_path / "d.json").read_text())["n"] == 10
    assert "<svg" in (tmp_path / "d.svg").read_text()


@pytest.mark.parametrize("extra, words", [
    (["--format", "json", "--plot", "{d}/x.png"], "--format json to standard output"),
    (["--format", "json", "--out", "-", "--plot", "{d}/x.png"], "--format json to standard output"),
    (["--plot", "{d}/x.jpg"], "extension '.jpg'"),
    (["--plot", "{d}/none/x.png"], "does not exist"),
    (["--plot", "-"], "not standard output"),
    (["--plot", "{d}/exists.png"], "exists; pass --force"),
])
def test_design_plot_bad_input(tmp_path, capsys, extra, words):
    (tmp_path / "exists.png").write_bytes(b"old")
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out, err = run(["design", "--n", "10", "--eps", "1", "--method", "dim"]
                         + [a.format(d=tmp_path) for a in extra], capsys)
    assert code == 2 and out == ""
    one_line(err, "design", words)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "exists.png").read_bytes() == b"old"


def test_kstate_design_plot(tmp_path, capsys):
    code, out, _ = run(["design", "--transition", "0.6,0.3,0.1;0.2,0.5,0.3;0.3,0.3,0.4", "--labels", "low,mid,high",
                        "--n", "5", "--eps", "1", "--private", "3", "--method", "dim", "--plot", tmp_path / "k.png"],
                       capsys)
    assert code == 0 and (tmp_path / "k.png").stat().st_size > 10_000


def test_compare_plot(tmp_path, capsys):
    code, out, _ = run(["compare", "--n", "6", "--eps", "0.5,1", "--plot", tmp_path / "c.svg", "--quiet"], capsys)
    assert code == 0 and "<svg" in (tmp_path / "c.svg").read_text()
    code, _, err = run(["compare", "--n", "6", "--eps", "1", "--format", "json", "--plot", tmp_path / "c2.svg"],
                       capsys)
    assert code == 2 and not (tmp_path / "c2.svg").exists()
    one_line(err, "compare", "--format json to standard output")


def test_apply_html_and_report(tmp_path, capsys):
    data = datasets.path("occupancy")
    base = ["apply", data, "--column", "Occupancy", "--private", "1120-1179", "--eps", "1", "--seed", "2015"]
    code, out, _ = run(base + ["--out", tmp_path / "r.csv", "--report", tmp_path / "r.json",
                               "--html", tmp_path / "r.html"], capsys)
    assert code == 0 and out.rstrip().endswith(f"html      : {tmp_path / 'r.html'}")
    page = (tmp_path / "r.html").read_text()
    rep = json.loads((tmp_path / "r.json").read_text())
    assert f'data-key="leakage.max" data-value="{rep["leakage"]["max"]!r}"' in page
    code, out, _ = run(["report", tmp_path / "r.json", "--html", tmp_path / "again.html"], capsys)
    assert code == 0 and (tmp_path / "again.html").read_text() == page


@pytest.mark.parametrize("html, words", [("{d}/p.txt", "ending in .html"), ("-", "'-' is not one"),
                                         ("{d}/none/p.html", "does not exist"), ("{d}/r.json", "is --report")])
def test_apply_html_bad_input_writes_no_release(tmp_path, capsys, html, words):
    data = datasets.path("occupancy")
    code, out, err = run(["apply", data, "--column", "Occupancy", "--private", "1120-1179", "--eps", "1",
                          "--out", tmp_path / "r.csv", "--report", tmp_path / "r.json",
                          "--html", html.format(d=tmp_path)], capsys)
    assert code == 2
    one_line(err, "apply", words)
    assert list(tmp_path.iterdir()) == []          # neither the release nor the report
