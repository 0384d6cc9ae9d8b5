"""The release report as HTML (issue 27): its size, the time to build it and to render it in headless Chromium.

Usage: python benchmarks/html_report.py [--out DIR] [--quick]

Targets: the HTML of the README walk-through's release (occupancy, rows 1120-1179 private, eps = 1,
seed 2015) weighs at most 2 MB and renders in at most 5 s in headless Chromium.  Also measured: the
same release keeping Light (a column not covered, with its figure), a robust release (--robust 0.95,
the box of chains), the k-state release of (Occupancy, Light), and many sequences with their rows in
a Parquet side file (the README's 500 sequences; 10^5 sequences of 60 records to show that the page
stays the same size whatever the number of sequences: the 100 worst are listed, the rest summarised).

"render" is the time from the navigation until the load event fired and two frames were painted
(:func:`redactopt.interface.browser.render`; the browser's start is not counted), the median and
the largest of three loads, each in a new browser.  "build" is the time of
:func:`redactopt.interface.html.report_html` (drawing every figure).  Writes html_report.csv / .md.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402

import redactopt as ro  # noqa: E402
from redactopt import datasets  # noqa: E402
from redactopt.interface.browser import render  # noqa: E402
from redactopt.interface.html import load_report, report_html  # noqa: E402

PRIVATE = list(range(1119, 1179))
MAX_BYTES = 2 * 1024 * 1024
MAX_SECONDS = 5.0


def _many(path: Path, k: int, m: int, seed: int) -> None:
    """k sequences of m records of the occupancy-like chain, one opted-out record each (as the README)."""
    import pandas as pd

    from redactopt.judge.leakage import sample_chains

    rng = np.random.default_rng(seed)
    x = sample_chains(ro.MarkovChain(0.003, 0.012), m, k, rng)
    opt = np.zeros((k, m), int)
    opt[np.arange(k), rng.integers(0, m, k)] = 1
    pd.DataFrame({"sid": np.repeat(np.arange(k), m), "Occupancy": x.ravel(), "optout": opt.ravel()}).to_parquet(
        path, index=False)


def _releases(work: Path, quick: bool) -> list[tuple[str, Path]]:
    """Make the releases; returns (case, report path)."""
    from redactopt.release.kapply import kapply_table

    occ = datasets.path("occupancy")
    common = dict(eps=1.0, private=PRIVATE, seed=2015)
    cases = []
    ro.apply_table(occ, work / "walk.csv", column="Occupancy", report=work / "walk.json", **common)
    cases.append(("walk-through", work / "walk.json"))
    ro.apply_table(occ, work / "light.csv", column="Occupancy", keep=["Light"], report=work / "light.json", **common)
    cases.append(("walk-through --keep Light", work / "light.json"))
    if not quick:
        ro.apply_table(occ, work / "robust.csv", column="Occupancy", robust=0.95, report=work / "robust.json",
                       **common)
        cases.append(("--robust 0.95", work / "robust.json"))
    kapply_table(occ, work / "both.csv", protect=["Occupancy", "Light"], bins=["Light:100,400"],
                 report=work / "both.json", **common)
    cases.append(("--protect Occupancy,Light", work / "both.json"))
    for k, m in ((500, 500),) + (((10_000, 60),) if quick else ((100_000, 60),)):
        src = work / f"many{k}.parquet"
        _many(src, k, m, seed=1)
        ro.apply_table(src, work / f"many{k}.out.parquet", column="Occupancy", by="sid", private_column="optout",
                       eps=1.0, alpha=0.003, beta=0.012, seed=1, report=work / f"many{k}.json",
                       report_sequences="parquet")
        cases.append((f"--by: {k:,} sequences x {m}", work / f"many{k}.json"))
    return cases


def _measure(case: str, report_path: Path, repeat: int) -> dict:
    report, side = load_report(report_path)
    t0 = time.perf_counter()
    text = report_html(report, sequences_path=side)
    build = time.perf_counter() - t0
    page = report_path.with_suffix(".html")
    page.write_text(text, encoding="utf-8")
    loads = [render(page) for _ in range(repeat)]
    seconds = [r.seconds for r in loads]
    last = loads[-1]
    ok_images = all(min(i["natural"]) > 0 and min(i["shown"]) > 0 for i in last.images)
    return {"case": case, "bytes": page.stat().st_size, "build_s": build,
            "render_median_s": statistics.median(seconds), "render_max_s": max(seconds),
            "figures": len(last.images), "figures_nonzero": ok_images, "console_errors": len(last.errors),
            "requests": len(last.requests), "numbers_keyed": len(last.keys), "page_height_px": last.height}


def main(argv: list[str] | None = None) -> list[dict]:
    args = parser(__doc__).parse_args(argv)
    out = out_dir(args.out)
    rows = []
    with tempfile.TemporaryDirectory(prefix="redactopt-html-bench.") as tmp:
        for case, path in _releases(Path(tmp), args.quick):
            r = _measure(case, path, 2 if args.quick else 3)
            rows.append(r)
            print(f"{case:<32} {r['bytes'] / 1024:8.0f} KB  build {r['build_s']:6.2f} s  render median "
                  f"{r['render_median_s']:5.2f} s (max {r['render_max_s']:5.2f})  {r['figures']} figures  "
                  f"{r['console_errors']} console errors  {r['requests']} requests")
    walk = rows[0]
    verdict = (f"walk-through: {walk['bytes'] / 1024:.0f} KB (target <= {MAX_BYTES / 1024:.0f} KB), render "
               f"{walk['render_max_s']:.2f} s at most (target <= {MAX_SECONDS:g} s)")
    print(verdict)
    write_table(rows, out / "html_report", "HTML release report: size, build and render time (headless Chromium)")
    if walk["bytes"] > MAX_BYTES or walk["render_max_s"] > MAX_SECONDS or walk["console_errors"]:
        raise SystemExit(f"target missed: {verdict}")
    return rows


if __name__ == "__main__":
    main()
