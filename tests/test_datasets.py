"""The shipped occupancy data: installed with the package, loaded, located from the command line."""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import redactopt
from redactopt import datasets

# sha256 of the two files as published by UCI (Occupancy Detection, CC BY 4.0)
SHA256 = {
    "training": "b2c4d0ce2b9e4e453c476f7125ef31aeec2d1f5c7f5572d0e80de3df6521ab56",
    "test": "1b92c7c1b2838963464fa891a610cf3c5db4becb7189189b29b330107a584c7f",
}


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as fh:
        return list(csv.reader(fh))


@pytest.mark.parametrize("split,rows,first,last", [("training", 8143, "2015-02-04 17:51:00", "2015-02-10 09:33:00"),
                                                   ("test", 2665, "2015-02-02 14:19:00", "2015-02-04 10:43:00")])
def test_shipped_files_are_the_published_ones(split, rows, first, last):
    path = datasets.path("occupancy", split=split)
    assert Path(redactopt.__file__).parent in path.parents  # inside the installed package
    assert hashlib.sha256(path.read_bytes()).hexdigest() == SHA256[split]
    table = _rows(path)
    assert table[0] == ["date", "Temperature", "Humidity", "Light", "CO2", "HumidityRatio", "Occupancy"]
    body = table[1:]
    assert len(body) == rows and all(len(r) == 8 for r in body)  # a row id before the 7 named fields
    assert body[0][1] == first and body[-1][1] == last


@pytest.mark.parametrize("split", ["training", "test"])
def test_loader_matches_the_file(split):
    df = datasets.occupancy(split)
    body = _rows(datasets.path("occupancy", split=split))[1:]
    assert list(df.columns) == ["date", "Temperature", "Humidity", "Light", "CO2", "HumidityRatio", "Occupancy"]
    assert df.index.name == "id" and df.index.tolist() == [int(r[0]) for r in body]
    assert np.array_equal(df["Occupancy"].to_numpy(), [int(r[7]) for r in body])
    assert set(np.unique(df["Occupancy"])) == {0, 1}
    assert str(df["date"].iloc[0]) == body[0][1]
    assert df["CO2"].iloc[-1] == float(body[-1][5])


def test_attribution_names_source_authors_and_license():
    text = datasets.attribution("occupancy")
    for needle in ("Candanedo", "Feldheim", "Energy and Buildings", "UCI", "CC BY 4.0"):
        assert needle in text


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="unknown data set"):
        datasets.path("weather")
    with pytest.raises(ValueError, match="split"):
        datasets.path("occupancy", split="validation")


def test_cli_path_list_info(run, capsys):
    assert run(["datasets", "path", "occupancy"]) == 0
    assert capsys.readouterr().out.strip() == str(datasets.path("occupancy"))
    assert run(["datasets", "path", "occupancy", "--split", "test", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d == {"name": "occupancy", "split": "test", "path": str(datasets.path("occupancy", split="test"))}
    assert run(["datasets", "list", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "occupancy": {s: str(datasets.path("occupancy", split=s)) for s in ("training", "test")}}
    assert run(["datasets", "info", "occupancy"]) == 0
    assert "CC BY 4.0" in capsys.readouterr().out


@pytest.mark.parametrize("argv,needle", [
    (["datasets", "path", "weather"], "unknown data set 'weather'"),
    (["datasets", "path"], "needs a data set name"),
    (["datasets", "list", "occupancy"], "name"),
    (["datasets", "info", "occupancy", "--split", "test"], "--split applies to 'path' only"),
    (["datasets", "path", "occupancy", "--split", "x"], "split must be one of"),
])
def test_cli_bad_usage(run, capsys, argv, needle):
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("redactopt datasets: error: ") and needle in err


def test_python_dash_m_datasets():
    proc = subprocess.run([sys.executable, "-m", "redactopt.datasets", "path", "occupancy"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == str(datasets.path("occupancy"))
