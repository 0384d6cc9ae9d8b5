"""The release report as one HTML page (issue 27): self-contained, the report's numbers on it, the
sequences worst first, and rendered by a real browser (headless Chromium) without a console error.

Every expected number is read from the report's JSON (or its Parquet side file, read here with
pyarrow) by its path; the page's numbers are found by their ``data-key`` attributes and compared
with the report to the digits shown.  A machine without Chromium fails the browser tests: install
it (Debian: ``apt-get install -y chromium``) or point ``REDACTOPT_CHROMIUM`` at it.
"""

from __future__ import annotations

import argparse
import base64
import html as htmllib
import json
import math
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import redactopt as ro
from redactopt import datasets
from redactopt.errors import UsageError
from redactopt.interface.browser import render
from redactopt.interface.cli_report import add_report_parser, check_html, maybe_write_html
from redactopt.interface.html import load_report, report_html, write_report_html

PRIVATE = list(range(1119, 1179))      # rows 1120-1179, the walk-through's lunch hour


# ---------------------------------------------------------------------------
# reading a page by hand
# ---------------------------------------------------------------------------
class Page(HTMLParser):
    """Every element with data-key (key, data-value, text), every img, script and external reference."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.keys: list[tuple[str, str, str]] = []
        self.imgs: list[dict[str, str]] = []
        self.scripts = 0
        self.links: list[str] = []
        self.meta: list[dict[str, str]] = []
        self._open: list[list] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag == "img":
            self.imgs.append(a)
        if tag == "meta":
            self.meta.append(a)
        for name in ("src", "href"):
            if name in a:
                self.links.append(a[name])
        for item in self._open:
            item[3] += 1
        if "data-key" in a:
            self._open.append([a["data-key"], a.get("data-value", ""), "", 0])

    def handle_endtag(self, tag):
        for item in list(self._open):
            if item[3] == 0:
                self._open.remove(item)
                self.keys.append((item[0], item[1], item[2]))
            else:
                item[3] -= 1

    def handle_data(self, data):
        for item in self._open:
            item[2] += data


def resolve(report: dict, key: str, seqs: dict | None = None):
    """The value a data-key names: a path in the report (``leakage.per_private.3.leakage``) or
    ``seq[ID].FIELD`` in the per-sequence rows."""
    m = re.fullmatch(r"seq\[([^\]]*)\]\.(.+)", key)
    node, path = (seqs[m.group(1)], m.group(2)) if m else (report, key)
    for part in path.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def shows(text: str, value) -> bool:
    """Whether the text shown is the value to the digits shown (integers exactly)."""
    t = text.strip().replace(",", "").replace("\u2212", "-")
    if isinstance(value, int) and not isinstance(value, bool):
        return int(t) == value
    shown = float(t)
    digits = len(t.lstrip("-").split("e")[0].replace(".", "").lstrip("0")) or 1
    exp = math.floor(math.log10(abs(shown))) if shown else 0
    return abs(shown - float(value)) <= 0.5 * 10 ** (exp - digits + 1) * (1 + 1e-9) + 1e-300


def check_numbers(keys, report: dict, seqs: dict | None = None, *, exact: bool = True) -> set[str]:
    """Every number with a data-key equals the report's; returns the keys seen."""
    seen = set()
    for item in keys:
        key, text = item[0], item[-1]
        if key == "summary":
            assert htmllib.unescape(text).split() == report["summary"].split()
            continue
        want = resolve(report, key, seqs)
        assert want is not None, key
        if exact and len(item) == 3:
            assert float(item[1]) == float(want), (key, item[1], want)
        assert shows(text, want), (key, text, want)
        seen.add(key)
    return seen


def assert_self_contained(text: str, page: Page) -> None:
    assert page.scripts == 0 and "<script" not in text.lower()
    assert all(link.startswith(("data:", "#")) for link in page.links), [x[:40] for x in page.links]
    csp = [m for m in page.meta if m.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]["content"]
    assert all(img["src"].startswith("data:image/svg+xml;base64,") for img in page.imgs)
    for img in page.imgs:
        svg = base64.b64decode(img["src"].split(",", 1)[1]).decode()
        assert "<svg" in svg and "http://www.w3.org/2000/svg" in svg and img.get("alt")


# ---------------------------------------------------------------------------
# releases to look at
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def walk(tmp_path_factory):
    """The README walk-through's release with Light kept, its report read back from the JSON file."""
    d = tmp_path_factory.mktemp("walk")
    ro.apply_table(datasets.path("occupancy"), d / "released.csv", column="Occupancy", eps=1.0, private=PRIVATE,
                   seed=2015, keep=["Light"], report=d / "report.json")
    report, side = load_report(d / "report.json")
    assert side is None
    path = write_report_html(report, d / "report.html")
    return SimpleNamespace(dir=d, report=report, html=path, text=path.read_text(encoding="utf-8"))


def many_sequences(path: Path, k: int = 130, m: int = 150) -> None:
    """k sequences of m records (alpha=0.05, beta=0.1, drawn by hand), one opted-out record in most."""
    rng = np.random.default_rng(27)
    x = np.zeros((k, m), dtype=int)
    x[:, 0] = rng.random(k) < 1 / 3
    for t in range(1, m):
        flip = rng.random(k) < np.where(x[:, t - 1] == 0, 0.05, 0.1)
        x[:, t] = np.where(flip, 1 - x[:, t - 1], x[:, t - 1])
    opt = np.zeros((k, m), dtype=int)
    where = rng.integers(40, m - 40, k)
    where[:6] = 2                       # a few near the start: a second shape (and a mirror near the end)
    where[6:9] = m - 3
    opt[np.arange(k), where] = 1
    opt[-5:] = 0                        # five sequences without private records
    pd.DataFrame({"sid": np.repeat([f"s{i:03d}" for i in range(k)], m), "Occupancy": x.ravel(),
                  "optout": opt.ravel()}).to_csv(path, index=False)


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    d = tmp_path_factory.mktemp("many")
    many_sequences(d / "many.csv")
    ro.apply_table(d / "many.csv", d / "out.csv", column="Occupancy", by="sid", private_column="optout", eps=1.0,
                   alpha=0.05, beta=0.1, seed=1, report=d / "rep.json", report_sequences="parquet")
    report, side = load_report(d / "rep.json")
    import pyarrow.parquet as pq

    rows = pq.read_table(d / report["sequences_file"]).to_pylist()
    path = write_report_html(report, d / "rep.html", sequences_path=side)
    return SimpleNamespace(dir=d, report=report, side=side, rows=rows, html=path,
                           text=path.read_text(encoding="utf-8"))


def worst_first_by_hand(rows: list[dict]) -> list[str]:
    designed = [r for r in rows if r["private"]]
    return [r["id"] for r in sorted(designed, key=lambda r: (-r["leakage_max"], r["realised_utility"]))]


def ids_in_first_table(text: str) -> list[str]:
    first = text.split("<h3>Worst first", 1)[1].split("</table>", 1)[0]
    return re.findall(r'data-key="seq\[([^\]]+)\]\.leakage_max"', first)


# ---------------------------------------------------------------------------
# the walk-through's page
# ---------------------------------------------------------------------------
def test_walkthrough_page_is_self_contained_and_small(walk):
    page = Page(walk.text)
    assert_self_contained(walk.text, page)
    assert walk.html.stat().st_size <= 2 * 1024 * 1024
    assert len(page.imgs) >= 3                      # the design, the leakage, the column not covered
    assert "@media print" in walk.text


def test_walkthrough_page_shows_the_reports_numbers(walk):
    rep = walk.report
    seen = check_numbers(Page(walk.text).keys, rep)
    must = {"eps", "rows", "leakage.max", "utility.expected", "utility.realised", "utility.redacted",
            "utility.upper_bound", "chain.alpha", "chain.beta", "chain.fit.alpha_ci.0", "chain.fit.alpha_ci.1",
            "chain.fit.beta_ci.0", "chain.fit.beta_ci.1", "chain.fit.counts.00", "chain.fit.counts.01",
            "chain.fit.counts.10", "chain.fit.counts.11", "chain.fit.lr_test_second_order.p_value",
            "chain.fit_rows.radius", "chain.fit_rows.rows", "chain.fit_rows.of_rows", "mechanism.utility",
            "mechanism.certificate.upper_bound", "columns.not_covered.0.accuracy", "columns.not_covered.0.majority"}
    must |= {f"leakage.per_private.{i}.leakage" for i in range(len(PRIVATE))}
    assert must <= seen, sorted(must - seen)
    assert [r["private"] for r in rep["leakage"]["per_private"]] == [p + 1 for p in PRIVATE]


def test_walkthrough_page_says_what_is_covered_and_what_is_not(walk):
    text, rep = walk.text, walk.report
    plain = htmllib.unescape(re.sub(r"<[^>]+>", " ", text))
    assert " ".join(rep["summary"].split()) in " ".join(plain.split())
    assert rep["label"] in plain                                     # seeded: not for real releases
    for a, b in rep["blocks"]:
        assert f"{a:,}–{b:,}" in plain
    light = rep["columns"]["not_covered"][0]
    assert light["column"] == "Light" and light["rule"] in plain
    assert all(c in plain for c in rep["columns"]["dropped"])
    p = rep["chain"]["fit"]["lr_test_second_order"]["p_value"]
    assert ("a second-order chain fits better" in plain) == (p < 0.01)


# ---------------------------------------------------------------------------
# many sequences: a side file, worst first
# ---------------------------------------------------------------------------
def test_many_sequences_worst_first_from_the_parquet_file(many):
    by_id = {r["id"]: r for r in many.rows}
    keys = Page(many.text).keys
    seen = check_numbers(keys, many.report, by_id)
    expected = worst_first_by_hand(many.rows)
    assert len(expected) == 125
    assert ids_in_first_table(many.text) == expected[:100]
    assert {f"seq[{i}].leakage_max" for i in expected[:100]} <= seen
    assert "the 100 worst of 125 sequences" in many.text and "Lowest realised utility (20 sequences)" in many.text
    lowest = [r["id"] for r in sorted((r for r in many.rows if r["private"]), key=lambda r: r["realised_utility"])]
    tail = many.text.split("Lowest realised utility", 1)[1].split("</table>", 1)[0]
    assert re.findall(r'data-key="seq\[([^\]]+)\]\.leakage_max"', tail) == lowest[:20]
    assert {f"shapes.{i}.mechanism.utility" for i in range(len(many.report["shapes"]))} <= seen
    every = {f"seq[{r['id']}].leakage.{j}.leakage" for r in many.rows for j in range(len(r["leakage"]))}
    assert len(every) == 125 and every <= seen                        # every private record's exact leakage
    plain = htmllib.unescape(re.sub(r"<[^>]+>", " ", many.text))
    assert f"{sum(len(r['private']) for r in many.rows):,}" in plain   # the private records summarised


def test_many_sequences_from_json_lines_inline_rows_and_a_missing_side_file(many, tmp_path):
    side = tmp_path / "rep.sequences.jsonl"
    side.write_text("".join(json.dumps(r) + "\n" for r in many.rows))
    report = dict(many.report, sequences_file=side.name)
    from_jsonl = report_html(report, sequences_path=side, max_sequences=10)
    assert ids_in_first_table(from_jsonl) == worst_first_by_hand(many.rows)[:10]
    inline = {k: v for k, v in many.report.items() if k != "sequences_file"}
    inline["sequences"] = many.rows
    assert ids_in_first_table(report_html(inline)) == worst_first_by_hand(many.rows)[:100]
    (tmp_path / "alone.json").write_text(json.dumps(many.report))
    alone, found = load_report(tmp_path / "alone.json")
    assert found is None
    text = report_html(alone)
    assert "which was not found" in text and many.report["sequences_file"] in text


# ---------------------------------------------------------------------------
# robust (a box of chains) and k-state releases
# ---------------------------------------------------------------------------
def test_box_release_page_shows_the_box(tmp_path):
    ro.apply_table(datasets.path("occupancy"), tmp_path / "out.csv", column="Occupancy", eps=1.0, private=PRIVATE,
                   seed=2015, alpha=(0.002, 0.004), beta=(0.008, 0.016), report=tmp_path / "rep.json")
    report, _ = load_report(tmp_path / "rep.json")
    text = report_html(report)
    seen = check_numbers(Page(text).keys, report)
    assert {"chain.class.alpha.0", "chain.class.alpha.1", "chain.class.beta.0", "chain.class.beta.1"} <= seen
    assert "Robust release: the box of chains" in text and 'alt="the box of chains"' in text
    assert report["chain"]["class"]["alpha"] == [0.002, 0.004]


@pytest.fixture(scope="module")
def kstate(tmp_path_factory):
    from redactopt.release.kapply import kapply_table

    d = tmp_path_factory.mktemp("kstate")
    kapply_table(datasets.path("occupancy"), d / "both.csv", protect=["Occupancy", "Light"], bins=["Light:100,400"],
                 eps=1.0, private=PRIVATE, seed=2015, report=d / "both.json")
    report, _ = load_report(d / "both.json")
    path = write_report_html(report, d / "both.html")
    return SimpleNamespace(report=report, html=path, text=path.read_text(encoding="utf-8"))


def test_kstate_page(kstate):
    rep, text = kstate.report, kstate.text
    assert_self_contained(text, Page(text))
    seen = check_numbers(Page(text).keys, rep)
    k = len(rep["states"])
    assert {f"chain.transition.{i}.{j}" for i in range(k) for j in range(k)} <= seen
    assert {f"leakage.per_private.{i}.leakage" for i in range(len(PRIVATE))} <= seen
    plain = htmllib.unescape(re.sub(r"<[^>]+>", " ", text))
    assert all(s in plain for s in rep["states"])
    for a, b in rep["blocks"]:
        assert f"{a:,}–{b:,}" in plain
    assert "Light" in plain and "<100" in plain     # the bins of the protected column


def test_kstate_by_page_lists_designs_and_sequences(tmp_path):
    from redactopt.model.chain import Chain
    from redactopt.release.kapply import kapply_table

    rng = np.random.default_rng(5)
    k, m = 8, 30
    rooms = rng.choice(["a", "b", "c"], size=(k, m))
    opt = np.zeros((k, m), dtype=int)
    opt[2:, 14] = 1
    opt[0, 4] = 1
    pd.DataFrame({"sid": np.repeat(np.arange(k), m), "room": rooms.ravel(), "optout": opt.ravel()}).to_csv(
        tmp_path / "rooms.csv", index=False)
    chain = Chain([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]], labels=("a", "b", "c"))
    kapply_table(tmp_path / "rooms.csv", tmp_path / "out.csv", column="room", by="sid", private_column="optout",
                 eps=1.0, seed=1, chain=chain, report=tmp_path / "rep.json")
    report, _ = load_report(tmp_path / "rep.json")
    text = report_html(report)
    by_id = {s["id"]: dict(s, leakage_max=s["leakage"], realised_utility=1 - s["redacted"] / s["rows"])
             for s in report["sequences"]}
    seen = check_numbers(Page(text).keys, report, by_id)
    designed = [s for s in report["sequences"] if s["private"]]
    assert {f"seq[{s['id']}].leakage_max" for s in designed} <= seen and len(designed) == 7
    assert {f"designs.{i}.utility" for i in range(len(report["designs"]))} <= seen
    plain = " ".join(htmllib.unescape(re.sub(r"<[^>]+>", "", text)).split())
    assert "used by" in plain and "8 (7 with private records, 1 released unchanged)" in plain


# ---------------------------------------------------------------------------
# in a real browser
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["walk", "many", "kstate"])
def test_pages_render_in_headless_chromium(request, which):
    """No console error, nothing fetched, every figure of non-zero size, the report's numbers on the page."""
    case = request.getfixturevalue(which)
    shown = render(case.html)
    assert shown.errors == [] and shown.requests == []
    assert shown.images and all(i["complete"] and min(i["natural"]) > 0 and min(i["shown"]) > 0
                                for i in shown.images), shown.images
    assert shown.title.startswith("Release report")
    seqs = {r["id"]: r for r in case.rows} if which == "many" else None
    seen = check_numbers(shown.keys, case.report, seqs)
    assert "leakage.max" in seen and "utility.expected" in seen
    assert shown.text_length > 2000 and shown.seconds < 5.0


# ---------------------------------------------------------------------------
# the command line: redactopt report, apply --html
# ---------------------------------------------------------------------------
def run_cli(argv, monkeypatch):
    """``redactopt ARGV`` through the real entry point, with ``report`` registered if cli.py does not yet."""
    from redactopt.interface import cli

    build = cli.build_parser

    def with_report():
        ap = build()
        sub = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
        if "report" not in sub.choices:
            add_report_parser(sub)
        return ap

    monkeypatch.setattr(cli, "build_parser", with_report)
    return cli.main([str(a) for a in argv])


def test_report_command_writes_the_page(walk, tmp_path, monkeypatch, capsys):
    out = tmp_path / "page.html"
    assert run_cli(["report", walk.dir / "report.json", "--html", out], monkeypatch) == 0
    assert capsys.readouterr().out == f"wrote {out}\n"
    assert out.read_text(encoding="utf-8") == walk.text
    assert run_cli(["report", walk.dir / "report.json", "--html", out], monkeypatch) == 2   # exists
    assert "exists; pass --force" in capsys.readouterr().err
    assert run_cli(["report", walk.dir / "report.json", "--html", out, "--force"], monkeypatch) == 0
    capsys.readouterr()
    assert run_cli(["report", walk.dir / "report.json", "--html", out, "--force", "--format", "json"], monkeypatch) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["html"] == str(out) and summary["bytes"] == out.stat().st_size
    assert summary["report_format"] == walk.report["format"] and summary["sequences_file"] is None
    assert run_cli(["report", walk.dir / "report.json", "--html", "-", "--format", "json"], monkeypatch) == 2
    assert "both ask for standard output" in capsys.readouterr().err


def test_report_command_sequences_beside_the_report(many, tmp_path, monkeypatch, capsys):
    copy = tmp_path / "r"
    shutil.copytree(many.dir, copy)
    out = tmp_path / "seq.html"
    assert run_cli(["report", copy / "rep.json", "--html", out, "--max-sequences", "7"], monkeypatch) == 0
    assert ids_in_first_table(out.read_text(encoding="utf-8")) == worst_first_by_hand(many.rows)[:7]


@pytest.mark.parametrize("bad, words", [
    (["--html", "{d}/page.txt"], "ending in .html"),
    (["--html", "{d}/missing/page.html"], "does not exist"),
    (["--html", "{locked}/page.html"], "cannot write in"),
    (["--html", "{d}/page.html", "--max-sequences", "0"], "--max-sequences must be >= 1"),
])
def test_report_command_bad_input_is_one_line_and_writes_nothing(walk, tmp_path, monkeypatch, capsys, bad, words):
    import os

    locked = Path("/sys") if os.geteuid() == 0 else tmp_path / "locked"
    if not locked.exists():
        locked.mkdir()
        locked.chmod(0o500)
    argv = ["report", walk.dir / "report.json"] + [a.format(d=tmp_path, locked=locked) for a in bad]
    before = sorted(p.name for p in tmp_path.iterdir())
    assert run_cli(argv, monkeypatch) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("redactopt report: error:") and words in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_report_command_refuses_what_is_not_a_release_report(tmp_path, monkeypatch, capsys):
    mech = tmp_path / "mech.json"
    mech.write_text(json.dumps({"format": "redactopt.mechanism/2", "n": 3}))
    assert run_cli(["report", mech, "--html", tmp_path / "p.html"], monkeypatch) == 2
    assert "not a release report" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{")
    assert run_cli(["report", tmp_path / "bad.json", "--html", tmp_path / "p.html"], monkeypatch) == 2
    assert "malformed JSON" in capsys.readouterr().err
    assert not (tmp_path / "p.html").exists()


def test_apply_html_helpers(many, tmp_path, capsys):
    """What apply --html does once wired: checks before any work, then the page with the side file."""
    def ns(**kw):
        base = {"html": None, "out": str(tmp_path / "o.csv"), "report": str(many.dir / "rep.json"),
                "input": str(many.dir / "many.csv"), "force": False, "quiet": False, "format": None}
        base.update(kw)
        return argparse.Namespace(**base)

    check_html(ns())
    for kw, words in (({"html": "-"}, "needs a file name ending in .html"),
                      ({"html": str(tmp_path / "o.csv")}, "is --out"),
                      ({"html": str(many.dir / "many.csv")}, "is the input")):
        with pytest.raises(UsageError, match=words):
            check_html(ns(**kw))
    with pytest.raises(ValueError, match="ending in .html"):
        check_html(ns(html=str(tmp_path / "page.pdf")))
    args = ns(html=str(tmp_path / "page.html"))
    check_html(args)
    path = maybe_write_html(args, many.report)
    assert capsys.readouterr().out == f"html      : {path}\n"
    assert ids_in_first_table(path.read_text(encoding="utf-8")) == worst_first_by_hand(many.rows)[:100]
