"""Figures of designs and comparisons (issue 27): the artists hold the design's numbers, the text is
readable at the saved size, and a bad path is refused before anything is written.

Expected values are read by hand from the arrays and JSON objects the figures are drawn from, and
the 3R regions from Proposition 1's closed form (no library code on the expected side).
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

import numpy as np
import pytest
from conftest import dense_redact_prob
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection, PolyCollection
from matplotlib.image import AxesImage
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from redactopt.errors import UsageError
from redactopt.interface.cli_report import check_plot, maybe_plot_compare, maybe_plot_design
from redactopt.interface.plots import (
    DPI,
    DesignView,
    compare_figure,
    design_figure,
    save_figure,
)
from redactopt.model.chain import MarkovChain


# ---------------------------------------------------------------------------
# helpers (independent of the code under test)
# ---------------------------------------------------------------------------
def influence_by_hand(alpha: float, beta: float, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Proposition 1: i(X_p ~> X_t = 0) and i(X_p ~> X_t = 1) at distances d."""
    lam = (1 - alpha - beta) ** d
    return (np.abs(np.log((1 + alpha / beta * lam) / (1 - lam))),
            np.abs(np.log((1 + beta / alpha * lam) / (1 - lam))))


def letters_by_hand(alpha: float, beta: float, n: int, p: int, left: float, right: float) -> list[str]:
    """Section II's regions of one private record (0-based p) with side budgets left/right."""
    out = []
    for t in range(n):
        if t == p:
            out.append("P")
            continue
        i0, i1 = influence_by_hand(alpha, beta, np.array([abs(t - p)]))
        lo, hi, b = min(i0[0], i1[0]), max(i0[0], i1[0]), left if t < p else right
        out.append("S" if hi <= b else ("M" if lo <= b else "L"))
    return out


def lines_by_gid(fig) -> dict:
    return {line.get_gid(): line for ax in fig.axes for line in ax.lines if line.get_gid()}


def draw(fig):
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas


def assert_readable(fig, min_points: float = 9.0, dpi: float = DPI) -> None:
    """Every text drawn is at least min_points tall and everything lies inside the saved figure."""
    canvas = draw(fig)
    renderer = canvas.get_renderer()
    small = [(t.get_text(), t.get_fontsize()) for t in fig.findobj(Text)
             if t.get_visible() and t.get_text().strip() and t.get_fontsize() < min_points]
    assert not small, small
    box = fig.get_tightbbox(renderer)
    w, h = fig.get_size_inches()
    assert box.x0 >= -0.01 and box.y0 >= -0.01 and box.x1 <= w + 0.01 and box.y1 <= h + 0.01, (box.bounds, (w, h))
    assert w * dpi >= 900  # about a thousand pixels wide when saved


def legend_texts(fig) -> list[str]:
    return [t.get_text() for leg in fig.legends for t in leg.get_texts()]


def legend_title(fig) -> str:
    return " ".join(leg.get_title().get_text() for leg in fig.legends)


@pytest.fixture(scope="module")
def fig3_design():
    from redactopt.engine.design import design

    return design(MarkovChain(0.01, 0.8), 10, eps=1.0, p=0)


# ---------------------------------------------------------------------------
# design figures
# ---------------------------------------------------------------------------
def test_design_figure_draws_the_designs_probabilities(fig3_design):
    d = fig3_design
    fig = design_figure(d)
    lines = lines_by_gid(fig)
    q = np.asarray(d.redact_prob)
    for x in (0, 1):
        np.testing.assert_array_equal(lines[f"redact-prob-{x}"].get_xdata(), np.arange(1, 11))
        np.testing.assert_array_equal(lines[f"redact-prob-{x}"].get_ydata(), q[:, x])
    title = fig.get_suptitle()
    assert "n = 10" in title and "ε = 1" in title and "private record 1" in title
    assert f"utility {d.utility:.6g}" in title
    assert f"certified upper bound {d.certificate.upper_bound:.6g}" in title
    ticks = [int(v) for v in fig.axes[0].get_xticks()]
    assert ticks == list(range(1, 11))  # n = 10: every record labelled
    assert_readable(fig)


def test_regions_are_those_of_proposition_1():
    """Bands behind the lines: P, L, M, S by the closed form, eps/2 a side; the legend names only those drawn."""
    a, b, n, p, eps = 0.05, 0.2, 30, 14, 1.0
    expected = letters_by_hand(a, b, n, p, eps / 2, eps / 2)
    assert {"L", "M", "S"} <= set(expected)  # the case shows every region
    rows = np.zeros((n, 2))
    rows[p] = 1.0
    view = DesignView(n=n, states=("0", "1"), starts=(0,), blocks=(rows,), private=(p,), eps=eps,
                      chain=MarkovChain(a, b))
    fig = design_figure(view)
    drawn = ["?"] * n
    for patch in fig.axes[0].patches:
        if isinstance(patch, Rectangle) and (patch.get_gid() or "").startswith("region-"):
            x0, x1 = patch.get_x(), patch.get_x() + patch.get_width()
            for t in range(round(x0 + 0.5), round(x1 - 0.5) + 1):
                drawn[t - 1] = patch.get_gid()[-1]
    assert drawn == expected
    labels = " ".join(legend_texts(fig))
    assert "$R_L$" in labels and "$R_M$" in labels and "$R_S$" in labels and "private record" in labels


def test_robust_design_regions_are_those_of_the_slowest_chain_of_the_box():
    """A box of lazy chains (alpha + beta < 1) is decided by its corner (alpha_lo, beta_lo): its regions are drawn."""
    n, p, eps = 30, 14, 1.0
    rows = [[0.0, 0.0]] * n
    rows[p] = [1.0, 1.0]
    mech = {"format": "redactopt.mechanism/2", "chain": {"alpha": 0.1, "beta": 0.3}, "n": n, "private": [p + 1],
            "eps": eps, "blocks": [{"start": 1, "redact_prob": rows}],
            "chain_class": {"alpha": [0.05, 0.15], "beta": [0.2, 0.4], "nominal": {"alpha": 0.1, "beta": 0.3}}}
    expected = letters_by_hand(0.05, 0.2, n, p, eps / 2, eps / 2)
    assert expected != letters_by_hand(0.1, 0.3, n, p, eps / 2, eps / 2)   # the box widens the regions
    fig = design_figure(mech)
    drawn = ["?"] * n
    for patch in fig.axes[0].patches:
        if (patch.get_gid() or "").startswith("region-"):
            for t in range(round(patch.get_x() + 0.5), round(patch.get_x() + patch.get_width() - 0.5) + 1):
                drawn[t - 1] = patch.get_gid()[-1]
    assert drawn == expected
    assert "deciding chain(s): α = 0.05, β = 0.2" in legend_title(fig)
    assert "(every chain of the box)" in fig.get_suptitle()


def test_legend_does_not_list_a_region_the_plot_lacks(fig3_design):
    expected = letters_by_hand(0.01, 0.8, 10, 0, 0.0, 1.0)  # p at the start: the whole eps on the right
    assert "L" not in expected
    labels = " ".join(legend_texts(design_figure(fig3_design)))
    assert "$R_L$" not in labels and "$R_M$" in labels


def long_mechanism(n: int, private: list[int], half: int = 20) -> dict:
    """A mechanism file object with one block of 2*half+1 rows around each private record (1-based)."""
    blocks = []
    for p in private:
        rows = [[round(0.5 + 0.5 * math.cos(k / 7.0), 6), 1.0] for k in range(2 * half + 1)]
        rows[half] = [1.0, 1.0]
        blocks.append({"start": p - half, "redact_prob": rows})
    return {"format": "redactopt.mechanism/2", "chain": {"alpha": 0.003, "beta": 0.012}, "n": n,
            "private": private, "eps": 1.0, "blocks": blocks, "method": "by hand", "utility": 0.99,
            "leakage": 0.98, "certificate": {"upper_bound": 0.995, "gap": 0.005, "solver": "hand"}}


def test_long_sequence_is_drawn_on_a_window_and_the_rest_summarised():
    mech = long_mechanism(10_000, [5001])
    fig = design_figure(mech)
    q = dense_redact_prob(mech)
    line = lines_by_gid(fig)["redact-prob-0"]
    x = np.asarray(line.get_xdata())
    assert x.min() <= 4981 and x.max() >= 5021          # the whole block
    assert x.size < 100                                 # a window, not 10^4 records
    np.testing.assert_array_equal(line.get_ydata(), q[x - 1, 0])
    np.testing.assert_array_equal(lines_by_gid(fig)["redact-prob-1"].get_ydata(), q[x - 1, 1])
    assert f"the other {10_000 - x.size:,} records are published with certainty" in legend_title(fig)
    assert "n = 10,000" in fig.get_suptitle() and "private record 5,001" in fig.get_suptitle()
    assert_readable(fig)


def test_far_apart_private_records_get_a_panel_each_and_extra_blocks_are_named():
    mech = long_mechanism(100_000, [101, 50_000, 99_900])
    fig = design_figure(mech)
    panels = [ax for ax in fig.axes if any(line.get_gid() == "redact-prob-0" for line in ax.lines)]
    assert len(panels) == 3
    for ax, p in zip(panels, [101, 50_000, 99_900]):
        x = ax.lines[0].get_xdata()
        assert x.min() <= p - 20 and x.max() >= p + 20
    assert_readable(fig)
    four = design_figure(long_mechanism(100_000, [101, 30_000, 60_000, 99_900]))
    assert "1 more block(s) not drawn (records 99,880, 99,920)" in legend_title(four)


def kstate_mechanism() -> dict:
    P = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]]
    return {"format": "redactopt.kmechanism/1", "states": ["low", "mid", "high"],
            "chain": {"labels": ["low", "mid", "high"], "transition": P}, "n": 5, "private": [3], "eps": 1.0,
            "blocks": [{"start": 2, "redact_prob": [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 0.0, 1.0]]}],
            "method": "optimal", "utility": 0.475, "leakage": 0.98}


def test_kstate_figure_is_a_heat_map_with_the_influence_per_distance():
    mech = kstate_mechanism()
    fig = design_figure(mech)
    images = [im for ax in fig.axes for im in ax.get_images() if isinstance(im, AxesImage)]
    assert len(images) == 1 and images[0].get_gid() == "redact-prob-heatmap"
    q = np.zeros((5, 3))
    q[1:4] = mech["blocks"][0]["redact_prob"]
    np.testing.assert_array_equal(np.asarray(images[0].get_array()), q.T)
    # influence on X_t = v at distance d, right side: max over x != x' of log(P^d[x, v] / P^d[x', v])
    P = np.array(mech["chain"]["transition"])
    w, v = np.linalg.eig(P.T)
    pi = np.real(v[:, np.argmin(abs(w - 1))])
    pi /= pi.sum()
    reverse = (P.T * pi[None, :]) / pi[:, None]         # diag(pi)^-1 P^T diag(pi)
    curves = {line.get_label(): line for ax in fig.axes for line in ax.lines
              if (line.get_gid() or "").startswith("influence-")}
    for side, M in (("right", P), ("left", reverse)):
        for s, name in enumerate(["low", "mid", "high"]):
            line = curves[f"X_t = {name} ({side} side)"]
            d = np.asarray(line.get_xdata(), dtype=int)
            want = []
            for dd in d:
                Pd = np.linalg.matrix_power(M, dd)
                want.append(max(math.log(Pd[x, s] / Pd[y, s]) for x in range(3) for y in range(3) if x != y))
            np.testing.assert_allclose(line.get_ydata(), want, rtol=1e-9)
    assert "no certified bound recorded" in fig.get_suptitle()
    assert_readable(fig)


# ---------------------------------------------------------------------------
# comparison figures
# ---------------------------------------------------------------------------
def compare_rows() -> list[dict]:
    """A compare table by hand: 3R leaks more than eps at 0.5 and 2; Theorem 2 equals DIM at 0.25, 1 and 4."""
    table = []
    for eps, opt, ub, cal, tr, trl, mq, dim, thm2 in [
            (0.25, 0.689, 0.6891, 0.668, 0.623, 0.20, 0.5, 0.6, 0.6),
            (0.5, 0.738, 0.7384, 0.713, 0.744, 0.655, 0.6, 0.7, 0.68),
            (1.0, 0.796, 0.7957, 0.790, 0.778, 0.895, 0.6, 0.7, 0.7),
            (2.0, 0.862, 0.8618, 0.861, 0.885, 2.51, 0.7, 0.8, 0.78),
            (4.0, 0.9, 0.9, 0.9, 0.9, 2.99, 0.8, 0.9, 0.9)]:
        table.append({"n": 10, "p": 1, "alpha": 0.01, "beta": 0.8, "eps": eps, "optimal": opt,
                      "optimal_upper_bound": ub, "optimal_leakage": eps, "calibrated_3r": cal,
                      "calibrated_3r_leakage": eps, "three_region": tr, "three_region_leakage": trl, "mq": mq,
                      "mq_leakage": eps / 3, "dim_optimal": dim, "dim_optimal_leakage": eps / 2, "thm2_bound": thm2,
                      "thm2_violated": dim > thm2})
    return table


def test_compare_figure_series_band_and_violations():
    rows = compare_rows()
    fig = compare_figure(rows)
    lines = lines_by_gid(fig)
    eps = [r["eps"] for r in rows]
    for col in ("optimal", "calibrated_3r", "three_region", "mq", "dim_optimal", "thm2_bound"):
        np.testing.assert_array_equal(lines[f"series-{col}"].get_xdata(), eps)
        np.testing.assert_array_equal(lines[f"series-{col}"].get_ydata(), [r[col] for r in rows])
    ax = fig.axes[0]
    band = next(c for c in ax.collections if isinstance(c, PolyCollection) and c.get_gid() == "certified-band")
    ys = band.get_paths()[0].vertices[:, 1]
    assert math.isclose(ys.min(), min(r["optimal"] for r in rows))
    assert math.isclose(ys.max(), max(r["optimal_upper_bound"] for r in rows))
    rings = next(c for c in ax.collections if isinstance(c, PathCollection) and c.get_gid() == "violations")
    want = sorted((r["eps"], r["three_region"]) for r in rows if r["three_region_leakage"] > r["eps"])
    assert sorted(map(tuple, rings.get_offsets().tolist())) == want
    crosses = next(c for c in ax.collections if c.get_gid() == "thm2-violations")
    assert sorted(map(tuple, crosses.get_offsets().tolist())) == sorted(
        (r["eps"], r["thm2_bound"]) for r in rows if r["dim_optimal"] > r["thm2_bound"])
    assert ax.get_xscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == ["0.25", "0.5", "1", "2", "4"]
    assert_readable(fig)


def test_theorem_2_stays_visible_where_it_equals_dim():
    """Rendered: around every point where Theorem 2 equals the DIM optimum, its ring shows in black pixels."""
    rows = compare_rows()
    fig = compare_figure(rows)
    thm2, dim = lines_by_gid(fig)["series-thm2_bound"], lines_by_gid(fig)["series-dim_optimal"]
    assert thm2.get_zorder() > dim.get_zorder() and thm2.get_markerfacecolor() == "none"
    assert thm2.get_markersize() > dim.get_markersize() and thm2.get_linestyle() != "-"
    canvas = draw(fig)
    img = np.asarray(canvas.buffer_rgba())[:, :, :3].astype(float) / 255
    height = img.shape[0]
    ax = fig.axes[0]
    radius = thm2.get_markersize() / 2 * fig.dpi / 72
    for r in rows:
        if r["thm2_bound"] != r["dim_optimal"]:
            continue
        cx, cy = ax.transData.transform((r["eps"], r["thm2_bound"]))
        dark = 0
        for angle in np.linspace(0, 2 * np.pi, 16, endpoint=False):
            x, y = int(round(cx + radius * np.cos(angle))), int(round(height - (cy + radius * np.sin(angle))))
            patch = img[max(0, y - 1):y + 2, max(0, x - 1):x + 2]
            dark += bool((patch.sum(axis=2) < 0.6).any())
        assert dark >= 10, (r["eps"], dark)


def test_compare_figure_one_panel_per_setting_and_dataframe_input():
    import pandas as pd

    rows = compare_rows() + [dict(r, n=200) for r in compare_rows()]
    fig = compare_figure(pd.DataFrame(rows))
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["n = 10, p = 1, α = 0.01, β = 0.8", "n = 200, p = 1, α = 0.01, β = 0.8"]
    assert_readable(fig)
    with pytest.raises(ValueError, match="no column 'optimal'"):
        compare_figure([{"n": 10, "p": 1, "eps": 1.0}])


# ---------------------------------------------------------------------------
# saving: one-line refusals, atomic writes
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_figure():
    return design_figure(long_mechanism(200, [100]))


def unwritable_dir(tmp_path: Path) -> Path:
    """A directory that takes no new file, for whoever runs the tests (root ignores permissions)."""
    if os.geteuid() == 0:
        return Path("/sys")
    d = tmp_path / "locked"
    d.mkdir()
    d.chmod(0o500)
    return d


@pytest.mark.parametrize("name, words", [("fig.jpg", "extension '.jpg'"), ("fig", "no extension"),
                                         ("-", "not standard output"), ("missing/fig.png", "does not exist")])
def test_bad_figure_paths_are_refused_in_one_line(tmp_path, small_figure, name, words):
    before = sorted(tmp_path.iterdir())
    with pytest.raises(ValueError) as err:
        save_figure(small_figure, name if name == "-" else tmp_path / name)
    assert words in str(err.value) and "\n" not in str(err.value)
    assert sorted(tmp_path.iterdir()) == before


def test_unwritable_directory_and_directory_are_refused(tmp_path, small_figure):
    locked = unwritable_dir(tmp_path)
    with pytest.raises(ValueError, match="cannot write in"):
        save_figure(small_figure, locked / "fig.png")
    assert not (locked / "fig.png").exists()
    (tmp_path / "dir.png").mkdir()
    with pytest.raises(ValueError, match="is a directory"):
        save_figure(small_figure, tmp_path / "dir.png")


def test_existing_file_needs_force_and_writes_are_atomic(tmp_path, small_figure, monkeypatch):
    out = tmp_path / "fig.png"
    out.write_bytes(b"keep me")
    with pytest.raises(FileExistsError):
        save_figure(small_figure, out)
    assert out.read_bytes() == b"keep me"
    save_figure(small_figure, out, force=True)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = save_figure(small_figure, tmp_path / "fig.svg")
    text = svg.read_text()
    assert text.startswith("<?xml") and "<svg" in text
    assert oct(svg.stat().st_mode & 0o777) == oct(0o666 & ~_umask())

    def broken(self, data):
        self.open("wb").write(data[:100])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", broken)
    with pytest.raises(ValueError, match="No space left"):
        save_figure(small_figure, tmp_path / "half.png")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.png", "fig.svg"]  # nothing half-written


def _umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


# ---------------------------------------------------------------------------
# --plot of design and compare (the helpers the commands call)
# ---------------------------------------------------------------------------
def args(**kw) -> argparse.Namespace:
    base = {"plot": None, "format": None, "out": None, "force": False, "quiet": False}
    base.update(kw)
    return argparse.Namespace(**base)


def test_check_plot_refuses_json_to_stdout_and_bad_paths(tmp_path):
    plot = str(tmp_path / "d.png")
    for out in (None, "-"):
        with pytest.raises(UsageError, match="--format json to standard output"):
            check_plot(args(plot=plot, format="json", out=out))
    check_plot(args(plot=plot, format="json", out=str(tmp_path / "d.json")))   # JSON to a file: fine
    check_plot(args(plot=plot, format="csv"))                                  # CSV to stdout: the note goes to stderr
    check_plot(args(plot=plot))
    with pytest.raises(UsageError, match="same file"):
        check_plot(args(plot=plot, out=plot))
    with pytest.raises(ValueError, match="extension '.pdf'"):
        check_plot(args(plot=str(tmp_path / "d.pdf")))
    (tmp_path / "d.png").write_text("x")
    with pytest.raises(FileExistsError):
        check_plot(args(plot=plot))
    check_plot(args(plot=plot, force=True))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.png"]


def test_maybe_plot_writes_the_figure_and_names_it(tmp_path, capsys, fig3_design):
    assert maybe_plot_design(args(), fig3_design) is None
    path = maybe_plot_design(args(plot=str(tmp_path / "d.svg")), fig3_design)
    assert path.read_text().count("<svg") == 1
    assert capsys.readouterr().out == f"wrote {path}\n"
    path = maybe_plot_compare(args(plot=str(tmp_path / "c.png"), format="csv"), compare_rows())
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"wrote {path}\n"   # CSV on stdout stays clean
    assert path.read_bytes()[:4] == b"\x89PNG"


# ---------------------------------------------------------------------------
# redactopt bench's figures (issue 27: Fig. 2's legend, Theorem 2 on DIM, readable text)
# ---------------------------------------------------------------------------
def test_bench_fig2_legend_lists_only_the_regions_shown():
    from redactopt.interface import bench

    expected = letters_by_hand(0.25, 0.5, 13, 0, 0.0, 0.5)[1:]
    assert "L" not in expected and {"M", "S"} <= set(expected)
    fig = bench.fig2_figure()
    labels = " ".join(legend_texts(fig))
    assert "$R_L$" not in labels and "$R_M$" in labels and "$R_S$" in labels
    assert legend_title(fig).startswith("$R_L$ empty here")
    assert_readable(fig, min_points=10, dpi=bench.FIG_DPI)


def test_bench_fig3_and_fig4_are_readable():
    from redactopt.interface import bench

    rows = [{k: r[k] for k in ("eps", "optimal", "optimal_upper_bound", "calibrated_3r", "three_region",
                               "three_region_leakage", "mq", "dim_optimal", "thm2_bound")} for r in compare_rows()]
    fig3 = bench.fig3_figure(rows)
    assert "Theorem 2 bound as printed (rings)" in legend_texts(fig3)
    assert lines_by_gid(fig3)["series-thm2_bound"].get_zorder() > lines_by_gid(fig3)["series-dim_optimal"].get_zorder()
    assert_readable(fig3, min_points=10, dpi=bench.FIG_DPI)
    assert_readable(bench.fig4_figure(time_limit=30), min_points=10, dpi=bench.FIG_DPI)


def test_classes_figure_lines_bands_and_violations():
    # the Fig. 3 point of docs/beyond_local.md (n = 10, p = 1, alpha = 0.01, beta = 0.8) at two budgets,
    # values typed in from the price-of-locality table; one row with a leakage above its budget
    from redactopt.interface.plots import classes_figure

    rows = [{"eps": 0.5, "class": "local", "utility": 0.7384, "upper_bound": 0.7384, "leakage": 0.5},
            {"eps": 1.0, "class": "local", "utility": 0.7957, "upper_bound": 0.7957, "leakage": 1.0},
            {"eps": 0.5, "class": "scan", "utility": 0.8716, "upper_bound": 0.8716, "leakage": 0.5},
            {"eps": 1.0, "class": "scan", "utility": 0.8873, "upper_bound": 0.8873, "leakage": 1.2},
            {"eps": 0.5, "class": "holder", "utility": 0.8860, "upper_bound": 0.8870},
            {"eps": 1.0, "class": "holder", "utility": 0.8929, "upper_bound": 0.8929}]
    fig = classes_figure(rows)
    ax = fig.axes[0]
    lines = {ln.get_gid(): ln for ln in ax.lines}
    assert set(lines) == {"class-local", "class-scan", "class-holder"}
    assert list(lines["class-scan"].get_xdata()) == [0.5, 1.0]
    assert list(lines["class-scan"].get_ydata()) == [0.8716, 0.8873]
    bands = {c.get_gid(): c for c in ax.collections if (c.get_gid() or "").startswith("class-band-")}
    verts = bands["class-band-holder"].get_paths()[0].vertices
    assert verts[:, 1].max() == pytest.approx(0.8929) and 0.8870 in verts[:, 1]
    (viol,) = [c for c in ax.collections if c.get_gid() == "violations"]
    assert viol.get_offsets().tolist() == [[1.0, 0.8873]]
    with pytest.raises(ValueError, match="unknown class 'global'"):
        classes_figure([{"eps": 1, "class": "global", "utility": 0, "upper_bound": 0}])
    with pytest.raises(ValueError, match="lacks upper_bound"):
        classes_figure([{"eps": 1, "class": "scan", "utility": 0}])
