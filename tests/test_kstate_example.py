"""The k-state worked example (docs/kstate.md): its commands print what the page shows, and its
numbers agree with independent computations (counts by pandas, matrix powers by numpy)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import counts_outside
from test_readme import _console_blocks, _matches, _run_block

DOC = Path(__file__).resolve().parents[1] / "docs" / "kstate.md"
PRIVATE = range(1119, 1179)  # rows 1120-1179, 0-based


def _derive(folder: Path) -> Path:
    code = re.search(r"```python\n(import pandas as pd\nfrom redactopt import datasets.*?)```", DOC.read_text(), re.S)
    assert code, "the page's derivation snippet"
    subprocess.run([sys.executable, "-c", code.group(1)], cwd=folder, check=True)
    return folder / "co2.csv"


@pytest.fixture(scope="module")
def co2(tmp_path_factory) -> Path:
    path = _derive(tmp_path_factory.mktemp("kstate"))
    days = re.search(r"```python\n(import pandas as pd\n\nco2 = pd.read_csv.*?)```", DOC.read_text(), re.S)
    assert days, "the page's many-days snippet"
    subprocess.run([sys.executable, "-c", days.group(1)], cwd=path.parent, check=True)
    return path


def test_console_blocks_run_verbatim(co2):
    blocks = _console_blocks(DOC.read_text())
    assert len(blocks) == 4
    for block in blocks:
        for cmd, status, expected, actual in _run_block(block, co2.parent):
            assert status == 0, cmd
            assert _matches(expected, actual), f"{cmd}\n--- page\n" + "\n".join(expected) +\
                "\n--- printed\n" + "\n".join(actual)


def test_counts_and_smoothing_by_hand(co2):
    s = pd.read_csv(co2, dtype=str, keep_default_na=False)["CO2level"]
    tab = pd.crosstab(s.iloc[:-1].to_numpy(), s.iloc[1:].to_numpy())
    page = DOC.read_text()
    for a in ("mid", "low", "high"):
        row = re.search(rf"^ {{12}}{a} +(\d+) +(\d+) +(\d+)$", page, re.M)
        assert row, a
        want = [int(tab.loc[a, b]) if b in tab.columns else 0 for b in ("mid", "low", "high")]
        assert [int(v) for v in row.groups()] == want
    n_low = int(tab.loc["low"].sum())
    assert tab.loc["low"].get("high", 0) == 0 and n_low == 5563
    assert f"{0.5 / (n_low + 1.5):.6g}" == "8.98553e-05"


def _reversed(P: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eig(P.T)
    pi = np.real(v[:, np.argmin(abs(w - 1))])
    pi = pi / pi.sum()
    return (P.T * pi[None, :]) / pi[:, None]


def _window_leakage(P: np.ndarray, a: int, b: int) -> float:
    """Leakage of a data-independent window: nearest published at distance a (left) and b (right)."""
    k = P.shape[0]
    L, R = np.linalg.matrix_power(_reversed(P), a), np.linalg.matrix_power(P, b)
    worst = 0.0
    for x in range(k):
        for y in range(k):
            if x != y:
                worst = max(worst, np.max(np.log(L[x] / L[y])) + np.max(np.log(R[x] / R[y])))
    return worst


def test_eps_table_independently(co2):
    import json

    from redactopt.io import chain_from_dict
    from redactopt.release.states_plan import kdesign_release

    out = subprocess.run([sys.executable, "-m", "redactopt", "fit", str(co2), "--column", "CO2level",
                          "--categorical", "--format", "json"], capture_output=True, text=True, check=True).stdout
    chain = chain_from_dict(json.loads(out))
    P = chain.transition
    rows = re.findall(r"^\| ([\d.]+) \| (\d+) \| (\d+)–(\d+) \| ([\d.]+) \|$", DOC.read_text(), re.M)
    assert len(rows) == 5
    for eps, redacted, lo, hi, leak in rows:
        eps, lo, hi = float(eps), int(lo), int(hi)
        q, _ = kdesign_release(chain, 8143, eps=eps, private=tuple(PRIVATE), method="dim")
        red = np.flatnonzero(q.any(axis=1))
        assert (red.min() + 1, red.max() + 1, red.size) == (lo, hi, int(redacted))
        # every private minute: nearest published minutes at lo - 1 and hi + 1 (1-based)
        worst = max(_window_leakage(P, p + 1 - (lo - 1), hi + 1 - (p + 1)) for p in PRIVATE)
        assert worst <= eps and abs(worst - float(leak)) < 5e-5
        # one more published minute on either side breaks it for some private minute
        assert max(_window_leakage(P, p + 1 - lo, hi + 1 - (p + 1)) for p in PRIVATE) > eps or\
            max(_window_leakage(P, p + 1 - (lo - 1), hi - (p + 1)) for p in PRIVATE) > eps


def test_many_days_by_hand(co2):
    """The many-sequences example: private rows, shared design and redactions from pandas and the window."""
    from redactopt.judge.leakage import leakage
    from redactopt.model.chain import Chain
    from redactopt.solvers.dim import dim_windows

    d = pd.read_csv(co2.parent / "co2days.csv", dtype=str, keep_default_na=False)
    per_day = d.groupby("day", sort=False)["lunch"].agg(lambda s: (s == "1").sum())
    assert per_day.to_dict() == {"2015-02-04": 0, "2015-02-05": 59, "2015-02-06": 59, "2015-02-07": 0,
                                 "2015-02-08": 0, "2015-02-09": 59, "2015-02-10": 0}
    from redactopt.release.kapply import kapply_table

    out = co2.parent / "days_by_hand.csv"
    if out.exists():
        out.unlink()
    rep = kapply_table(co2.parent / "co2days.csv", out, column="CO2level", eps=1.0, private_column="lunch",
                       by="day", seed=2015)
    labels = rep["states"]
    # transitions counted within days only, on the rows farther than the reported radius from every
    # lunch minute of their day (days without one: all of them): by hand, independently of the fit
    code = {s: i for i, s in enumerate(labels)}
    C, rows_out = counts_outside(d["CO2level"].map(code).to_numpy(), d["lunch"].astype(int).to_numpy(),
                                 rep["chain"]["fit_rows"]["radius"], d["day"].to_numpy(), k=3)
    assert rep["chain"]["fit"]["counts"] == C.tolist() and rep["chain"]["fit_rows"]["rows"] == rows_out
    # one design for the three weekdays: the exact window of one day under the report's chain
    chain = Chain(rep["chain"]["transition"], labels=labels)
    private = tuple(range(751, 810))
    q = dim_windows(chain, 1440, eps=1.0, private=private)
    rows = np.flatnonzero(q.any(axis=1))
    assert np.all(q[rows] == 1.0) and rows[-1] - rows[0] + 1 == rows.size
    assert max(leakage(chain, q, p).leakage for p in (751, 809)) <= 1.0
    assert max(751 - rows[0], rows[-1] - 809) <= rep["chain"]["fit_rows"]["radius"]  # inside the zone left out
    assert rep["utility"]["redacted"] == 3 * rows.size
    released = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(released.columns) == ["CO2level", "day"]  # the protected column and --by, in the input's order
    blank = released["CO2level"] == ""
    assert blank.sum() == 3 * rows.size and not blank[d["day"].isin(["2015-02-04", "2015-02-07", "2015-02-08",
                                                                   "2015-02-10"])].any()


def test_from_python_blocks_run(capsys):
    """The page's last two Python blocks (a design, then a many-sequence release) run as written."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    scope: dict = {}
    exec(blocks[-2] + "\n" + blocks[-1], scope)
    report = scope["report"]
    assert report["leakage"]["max"] <= 1.0 and [s["id"] for s in report["sequences"]] == ["ann", "bob"]
    released = scope["released"]["level"].tolist()
    assert released[1] is None and released[6] is None  # the opted-out rows are always redacted
    assert "('low', 'high')" in capsys.readouterr().out
