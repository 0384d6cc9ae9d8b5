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


_REBIND = """
import warnings, importlib
warnings.simplefilter("ignore", DeprecationWarning)
import redactopt
from redactopt import _legacy
before = {name: getattr(redactopt, name) for name in redactopt.__all__ if name not in redactopt._LAZY}
for old in _legacy.MOVED:
    exec(f"import redactopt.{old}")
    mod = importlib.import_module(f"redactopt.{old}")
    assert mod is importlib.import_module("redactopt." + _legacy.MOVED[old])
    if hasattr(mod, old):
        exec(f"from redactopt.{old} import {old}")
bad = [name for name, obj in before.items() if getattr(redactopt, name) is not obj]
assert not bad, bad
assert redactopt.leakage(redactopt.MarkovChain(0.1, 0.2), [[1, 1], [0, 0]], 0).leakage > 0
print("ok")
"""


def test_old_paths_never_rebind_top_level_names():
    # issue 25: after `from redactopt.leakage import leakage`, redactopt.leakage was the module
    out = subprocess.run([sys.executable, "-c", _REBIND], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_old_path_warns_in_a_fresh_interpreter():
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "try:\n import redactopt.leakage\nexcept DeprecationWarning as e: print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "redactopt.leakage moved to redactopt.judge.leakage" in out


def test_python_dash_m_runs_the_cli():
    res = subprocess.run([sys.executable, "-m", "redactopt", "--version"], capture_output=True, text=True)
    assert res.returncode == 0 and redactopt.__version__ in res.stdout


def _module_graph():
    """Module-level imports between redactopt's own modules (src/redactopt and the top-level solvers/)."""
    import ast
    from pathlib import Path

    here = Path(__file__).resolve().parents[1]
    roots = {"redactopt": here / "src" / "redactopt", "redactopt.solvers": here / "solvers"}
    mods = {}
    for pkg, root in roots.items():
        for f in root.rglob("*.py"):
            parts = [x for x in f.relative_to(root).with_suffix("").parts if x != "__init__"]
            mods[".".join([pkg] + parts)] = f
    graph = {}
    for name, f in mods.items():
        deps = set()
        for node in ast.parse(f.read_text()).body:
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("redactopt"):
                deps.add(node.module)
                deps |= {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
        graph[name] = {d for d in deps if d in mods and d not in (name, "redactopt")}
    return graph


def test_no_import_cycles():
    graph = _module_graph()
    state: dict[str, int] = {}

    def visit(v, path):
        state[v] = 1
        for w in graph[v]:
            assert state.get(w) != 1, "import cycle: " + " -> ".join(path + [v, w])
            if w not in state:
                visit(w, path + [v])
        state[v] = 2

    for v in graph:
        if v not in state:
            visit(v, [])


def test_solvers_live_at_the_top_level():
    # the design card's layout: solvers/ beside src/, installed as redactopt.solvers
    from pathlib import Path

    import redactopt.solvers

    here = Path(__file__).resolve().parents[1]
    assert not (here / "src" / "redactopt" / "solvers").exists()
    assert (here / "solvers" / "__init__.py").is_file()
    # an editable install resolves to the top-level folder, a wheel installs it as redactopt/solvers
    where = Path(redactopt.solvers.__file__).resolve().parent
    assert where == here / "solvers" or (where.name == "solvers" and where.parent.name == "redactopt")


def test_solvers_propose_and_never_judge():
    # solvers return Candidates; only redactopt.engine.design verifies and certifies
    graph = _module_graph()
    assert any(name.startswith("redactopt.solvers.") for name in graph)
    for name, deps in graph.items():
        if name.startswith("redactopt.solvers"):
            assert "redactopt.judge.certify" not in deps, name
            assert not any(d.startswith("redactopt.engine") for d in deps), name


def test_import_redactopt_stays_light():
    code = ("import sys, redactopt\n"
            "print(','.join(m for m in ('scipy', 'cvxpy', 'pandas', 'pyarrow', 'pyscipopt', 'ortools', 'matplotlib')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""
