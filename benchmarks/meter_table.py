"""The issue-37 meter table, generated with a fixed seed: homes x days of minutes, short opt-outs, power.

Each home's occupancy is a slowly mixing two-state chain (``ALPHA`` = Pr(0 -> 1), ``BETA`` =
Pr(1 -> 0) per minute: mean stays of 200 and 125 minutes); an appliance switches on and off on a
chain of its own (mean stays of 50 minutes off, 20 on); the power draw is 60 W, plus 290 W when
occupied, plus 180 W while the appliance runs, plus noise of 40 W, and the meter reads 0 for a
minute with probability 0.5 % (a drop-out), so ``--bin power_w:100,300`` gives three levels and
all six (occupied, level) states are seen.  Opt-outs are short: ``EVENTS[h]`` windows of
``WINDOW`` = 3 minutes in home ``h`` (``optout = 1``: 11 windows in three homes, 33 private
rows; the three other homes opted out of nothing), the case the default release designs record by
record.  ``ts`` is the minute; the rows come in a random order
(a table exported without sorting), so a release needs ``--order-by ts``.

Usage: python benchmarks/meter_table.py OUT.csv [--homes H] [--days D] [--seed S] [--home h02]
(``--home`` keeps one home's rows.)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

ALPHA, BETA = 0.005, 0.008
APPLIANCE = (0.02, 0.05)
EVENTS = (0, 4, 0, 4, 3, 0)
WINDOW = 3
SEED = 37


def chain_values(n: int, rng: np.random.Generator, alpha: float = ALPHA, beta: float = BETA) -> np.ndarray:
    """``n`` records of the stationary two-state chain (alpha, beta)."""
    x = np.empty(n, dtype=np.int64)
    x[0] = rng.random() < alpha / (alpha + beta)
    u = rng.random(n)
    for t in range(1, n):
        x[t] = (u[t] < alpha) if x[t - 1] == 0 else (u[t] >= beta)
    return x


def make_meter(seed: int = SEED, *, homes: int = 6, days: int = 2, events: tuple[int, ...] = EVENTS,
               window: int = WINDOW, shuffle: bool = True) -> pd.DataFrame:
    """Columns ``home``, ``ts``, ``occupied``, ``power_w``, ``optout`` (module docstring)."""
    rng = np.random.default_rng(seed)
    m = days * 1440
    start = pd.Timestamp("2024-03-04 00:00:00")
    parts = []
    for h in range(homes):
        x = chain_values(m, rng)
        on = chain_values(m, rng, *APPLIANCE)
        power = 60.0 + 290.0 * x + 180.0 * on + rng.normal(0.0, 40.0, m)
        power = np.round(np.where(rng.random(m) < 0.005, 0.0, power), 1)
        flag = np.zeros(m, dtype=np.int64)
        k = events[h % len(events)]
        if k:  # k windows, one in each of k equal stretches of the sequence (never touching)
            edges = np.linspace(0, m, k + 1).astype(int)
            for a, b in zip(edges[:-1], edges[1:]):
                s = int(rng.integers(a + 30, b - 30 - window))
                flag[s:s + window] = 1
        parts.append(pd.DataFrame({"home": f"h{h + 1:02d}", "ts": start + pd.to_timedelta(np.arange(m), unit="min"),
                                   "occupied": x, "power_w": power, "optout": flag}))
    df = pd.concat(parts, ignore_index=True)
    if shuffle:
        df = df.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    return df


def write_meter(path: Path, *, home: str | None = None, **kw) -> Path:
    df = make_meter(**kw)
    if home is not None:
        df = df[df["home"] == home]
    df.to_csv(path, index=False)
    return path


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--homes", type=int, default=6)
    ap.add_argument("--days", type=int, default=2)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--home", default=None)
    a = ap.parse_args()
    write_meter(Path(a.out), homes=a.homes, days=a.days, seed=a.seed, home=a.home)
