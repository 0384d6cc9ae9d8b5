"""The package's shape: layer folders, old flat paths as aliases, ``python -m redactopt``."""

import subprocess
import sys
import warnings

import pytest

import redactopt
from redactopt import _legacy


@pytest.mark.parametrize("old,new", sorted(_legacy.MOVED.items()))
def test_old_flat_path_is_the_moved_module(old, new):
    import importlib

    moved = importlib.import_module(f"redactopt.{new}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        alias = importlib.import_module(f"redactopt.{old}")
    assert alias is moved
    assert moved.__spec__.name == f"redactopt.{new}"


def test_top_level_functions_survive_old_module_imports():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from redactopt.design import design  # noqa: F401
        import redactopt.audit  # noqa: F401
    assert callable(redactopt.design) and callable(redactopt.audit)
    assert redactopt.design.__module__ == "redactopt.engine.design"


def test_old_path_warns_in_a_fresh_interpreter():
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "try:\n import redactopt.leakage\nexcept DeprecationWarning as e: print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "redactopt.leakage moved to redactopt.judge.leakage" in out


def test_python_dash_m_runs_the_cli():
    res = subprocess.run([sys.executable, "-m", "redactopt", "--version"], capture_output=True, text=True)
    assert res.returncode == 0 and redactopt.__version__ in res.stdout
