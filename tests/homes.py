"""A data engineer's table (issue 36), generated with a seed: homes x days of minutes, an opt-out flag, a power column.

Each home's occupancy is a two-state chain (``ALPHA`` = Pr(0 -> 1), ``BETA`` = Pr(1 -> 0) per minute);
its power draw predicts occupancy (about 350 W occupied, 60 W empty, noisy); the homes of
``optout_homes`` opted out for one window of ``window`` minutes each (``optout = 1``); ``ts`` is the
minute.  With ``shuffle`` the rows come in a random order (as a table exported without sorting).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

ALPHA, BETA = 0.01, 0.02


def chain_values(n: int, rng: np.random.Generator, alpha: float = ALPHA, beta: float = BETA) -> np.ndarray:
    """``n`` records of the stationary two-state chain (alpha, beta)."""
    x = np.empty(n, dtype=np.int64)
    x[0] = rng.random() < alpha / (alpha + beta)
    u = rng.random(n)
    for t in range(1, n):
        x[t] = (u[t] < alpha) if x[t - 1] == 0 else (u[t] >= beta)
    return x


def make_homes(seed: int = 36, *, homes: int = 6, days: int = 2, optout_homes: tuple[int, ...] = (1, 3, 4),
               window: int = 11, shuffle: bool = True) -> pd.DataFrame:
    """The table: columns ``home``, ``ts``, ``occupied``, ``power_w``, ``optout`` (module docstring)."""
    rng = np.random.default_rng(seed)
    m = days * 1440
    start = pd.Timestamp("2024-03-04 00:00:00")
    parts = []
    for h in range(homes):
        x = chain_values(m, rng)
        power = np.round(np.where(x == 1, 350.0, 60.0) + rng.normal(0.0, 40.0, m), 1)
        flag = np.zeros(m, dtype=np.int64)
        if h in optout_homes:
            a = int(rng.integers(60, m - 60 - window))
            flag[a:a + window] = 1
        parts.append(pd.DataFrame({"home": f"h{h + 1:02d}", "ts": start + pd.to_timedelta(np.arange(m), unit="min"),
                                   "occupied": x, "power_w": power, "optout": flag}))
    df = pd.concat(parts, ignore_index=True)
    if shuffle:
        df = df.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    return df
