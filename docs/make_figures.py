"""Regenerate the README's pictures of issue 27 into docs/ (never by hand).

Usage: python docs/make_figures.py [--out DIR]

* ``design_plot.png``: ``redactopt design --n 10 --eps 1 --plot docs/design_plot.png`` (the main job:
  the certified optimum for the paper's Fig. 3 setting);
* ``compare_plot.png``: ``redactopt compare --n 10 --eps 0.25,0.5,1,2,4 --plot docs/compare_plot.png``;
* ``report_html.png``: the top of the HTML page of the README walk-through's release
  (``redactopt apply $DATA --column Occupancy --private 1120-1179 --eps 1 --seed 2015 --keep Light
  --out released.csv --report report.json --html report.html``), as headless Chromium shows it.

The figures are drawn by the same functions as ``--plot`` and ``--html``; the release is made in a
temporary folder.  Needs Chromium for the screenshot (Debian: ``apt-get install -y chromium``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import redactopt as ro
from redactopt import datasets
from redactopt.engine.compare import compare_point
from redactopt.engine.design import design
from redactopt.interface.browser import screenshot
from redactopt.interface.plots import compare_figure, design_figure, save_figure
from redactopt.interface.html import load_report, write_report_html

HERE = Path(__file__).resolve().parent


def design_plot(out: Path) -> Path:
    """The main job's design (n = 10, p = 1, alpha = 0.01, beta = 0.8, eps = 1)."""
    res = design(ro.MarkovChain(0.01, 0.8), 10, eps=1.0, p=0)
    return save_figure(design_figure(res), out / "design_plot.png", force=True)


def compare_plot(out: Path) -> Path:
    """``compare --n 10 --eps 0.25,0.5,1,2,4`` at the default chain and private record."""
    chain = ro.MarkovChain(0.01, 0.8)
    rows = [compare_point(chain, 10, eps=eps, p=0) for eps in (0.25, 0.5, 1.0, 2.0, 4.0)]
    return save_figure(compare_figure(rows), out / "compare_plot.png", force=True)


def report_screenshot(out: Path) -> Path:
    """The walk-through's release with Light kept, its page, and a screenshot of its top."""
    with tempfile.TemporaryDirectory(prefix="redactopt-docs.") as tmp:
        work = Path(tmp)
        ro.apply_table(datasets.path("occupancy"), work / "released.csv", column="Occupancy", eps=1.0,
                       private=list(range(1119, 1179)), seed=2015, keep=["Light"], report=work / "report.json")
        report, side = load_report(work / "report.json")
        page = write_report_html(report, work / "report.html", sequences_path=side)
        return screenshot(page, out / "report_html.png", width=1100, height=2250)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(HERE), metavar="DIR", help=f"where the pictures go (default {HERE})")
    args = ap.parse_args(argv)
    out = Path(args.out)
    if not out.is_dir():
        sys.exit(f"--out {out}: no such directory")
    for make in (design_plot, compare_plot, report_screenshot):
        print(f"wrote {make(out)}")


if __name__ == "__main__":
    main()
