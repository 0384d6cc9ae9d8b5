"""Data sets shipped with redactopt, for examples and tests.

``occupancy`` — the UCI *Occupancy Detection* data (Candanedo & Feldheim, "Accurate
occupancy detection of an office room from light, temperature, humidity and CO2
measurements using statistical learning models", Energy and Buildings 112 (2016) 28–39;
CC BY 4.0, see ``occupancy/ATTRIBUTION.md`` beside this file): whether an office was
occupied, minute by minute, with the room's sensor readings.  Two files:
``"training"`` (8143 minutes, 2015-02-04 17:51 to 2015-02-10 09:33) and ``"test"``
(2665 minutes, 2015-02-02 14:19 to 2015-02-04 10:43).

>>> from redactopt import datasets
>>> df = datasets.occupancy()                       # a pandas DataFrame, one row per minute
>>> path = datasets.path("occupancy")               # the CSV file itself, for the command line

On the command line: ``redactopt datasets path occupancy`` prints the file's path (also
``python -m redactopt.datasets path occupancy``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["NAMES", "SPLITS", "path", "occupancy", "attribution"]

#: Shipped data sets and their files, one per split.
_FILES = {"occupancy": {"training": "datatraining.txt", "test": "datatest.txt"}}
NAMES: tuple[str, ...] = tuple(_FILES)
SPLITS: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in _FILES.items()}


def _folder(name: str) -> Path:
    if name not in _FILES:
        raise ValueError(f"unknown data set {name!r}; shipped: {', '.join(NAMES)}")
    return Path(str(resources.files(__name__).joinpath(name)))


def path(name: str = "occupancy", *, split: str = "training") -> Path:
    """The file of a shipped data set (a path inside the installed package).

    Parameters
    ----------
    name : str
        ``"occupancy"``.
    split : str
        ``"training"`` (default) or ``"test"``.
    """
    folder = _folder(name)
    if split not in _FILES[name]:
        raise ValueError(f"split must be one of {', '.join(_FILES[name])}, got {split!r}")
    return folder / _FILES[name][split]


def attribution(name: str = "occupancy") -> str:
    """Source, authors and license of a shipped data set (Markdown)."""
    return (_folder(name) / "ATTRIBUTION.md").read_text(encoding="utf-8")


def occupancy(split: str = "training") -> Any:
    """The occupancy data as a :class:`pandas.DataFrame`, one row per minute.

    Columns ``date`` (datetime), ``Temperature``, ``Humidity``, ``Light``, ``CO2``,
    ``HumidityRatio`` and ``Occupancy`` (0/1, ``int8``); the index is the file's row id
    (named ``id``; 1..8143 for ``"training"``).  Row ``i`` of the training file is
    position ``i`` on the command line (``--private``), and position ``i - 1`` in the
    Python API.
    """
    import pandas as pd  # pandas only when a frame is asked for: `import redactopt` stays light

    df = pd.read_csv(path("occupancy", split=split), index_col=0, parse_dates=["date"])
    df.index = df.index.astype("int64")  # the ids are quoted in the file
    df.index.name = "id"
    df["Occupancy"] = df["Occupancy"].astype("int8")
    return df
