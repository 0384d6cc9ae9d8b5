"""The package's shape: layer folders, old flat paths as aliases, ``python -m redactopt``."""

import subprocess
import sys

import pytest

import redactopt


#: the flat module paths of release 0.1, deprecated for one release (0.4.0) and removed by issue 35
OLD_FLAT_PATHS = ("chain", "influence", "leakage", "exact", "attack", "certify", "audit", "mechanisms", "design",
                  "tuning", "joint", "compare", "data", "fit", "apply", "dask_backend", "cli", "cli_data", "report",
                  "bench")


def test_old_flat_paths_are_gone_and_top_level_functions_stay():
    code = ("import importlib, redactopt\n"
            f"for old in {OLD_FLAT_PATHS!r}:\n"
            "    try:\n"
            "        importlib.import_module('redactopt.' + old)\n"
            "    except ModuleNotFoundError:\n"
            "        continue\n"
            "    raise SystemExit('still importable: redactopt.' + old)\n"
            "assert callable(redactopt.design) and redactopt.design.__module__ == 'redactopt.engine.design'\n"
            "assert callable(redactopt.audit) and redactopt.audit.__module__ == 'redactopt.judge.audit'\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr + out.stdout


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
