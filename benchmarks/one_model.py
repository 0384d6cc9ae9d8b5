"""One model for every chain (issue 25): the same cases timed on two source trees in one run, before and after.

Usage: python benchmarks/one_model.py [--out DIR] [--quick] [--before REV] [--repeat R] [--rounds N]

Writes one_model.csv / .md into DIR (default bench-out) and prints the table.  The two trees:

* BEFORE: commit ``--before`` (default ``cd96fb6``, the last commit before the issue-25 work),
  read with ``git archive`` from the repository this script lives in (nothing in the
  repository changes);
* AFTER: the working tree of that repository (copied when the script starts, uncommitted
  changes included; the header says which commit and how many files differ).

Each tree becomes a temporary import root, ``ROOT/redactopt``, laid out as its
``pyproject.toml`` installs it (``package-dir``: ``src/redactopt``, and ``solvers/`` as
``redactopt.solvers`` where the tree has it at the top level).  Every timing runs in a
subprocess with ``PYTHONPATH=ROOT``; each subprocess checks that every ``redactopt`` module
it loaded comes from its root (an editable or regular install elsewhere must not answer)
and the script stops otherwise.  The roots, data and outputs live in a temporary folder,
removed at the end (also on Ctrl-C); nothing needs the network.

Cases (the same data and arguments for both trees):

* in-process, best of ``--repeat`` calls after a warm-up, in ``--rounds`` worker processes
  per tree run alternately (BEFORE, AFTER, BEFORE, ...), the best over the rounds:
  exact leakage of one private record in the middle of ``n = 10^6`` records that can all be
  redacted (binary, 2x2 matrix, k = 3); the leakage and the audit of a 400-row window inside
  ``n = 10^6`` records published otherwise; ``design`` of the README's main job
  (``MarkovChain(0.01, 0.8)``, n = 10, eps = 1, p = 0); k-state designs on
  ``P3 = [[0.6,0.3,0.1],[0.2,0.5,0.3],[0.3,0.3,0.4]]`` (n = 100, p = 50 and n = 10, p = 3)
  and ``kdim_enumerate`` at n = 1000; ``MarkovChain(0.1, 0.2)`` against its matrix
  ``[[0.9,0.1],[0.2,0.8]]`` (design at n = 100, p = 50, dense leakage at n = 10^6);
* command line, wall time of a fresh ``python -m redactopt ...`` process (interpreter start
  and imports included), one warm-up each, then ``--repeat`` runs alternating BEFORE and
  AFTER (three times as many for commands under a second): the README's main job, its
  ``compare`` command (with and without ``--plot``), the walk-through on the bundled
  occupancy data (``fit``, ``apply``, ``audit``), the many-sequence release (2,000
  sequences of 500 records, the command of ``benchmarks/many_speed.py``'s CSV case) and the
  k-state fit of a categorical column of 10^6 rows (``fit --categorical``: read whole with
  pandas before, streamed chunk by chunk through the one estimator after) and its release with 60
  private records in the middle (``apply --categorical``: one whole-sequence design before, the
  one release planner's placed design after).

The matrix form goes through the name each tree has for it: ``kleakage``/``kdesign`` on
``KChain`` before, the one ``leakage``/``design`` on ``Chain`` after (the rows say which).
A case a tree cannot run is ``n/a`` with the reason.  Every case records a value (leakage,
utility, the printed result) that must agree between the trees; ``values`` says ``MISMATCH``
where it does not (floats agree within 1e-9 relative).

Targets (issue 25, speed kept): binary exact leakage >= 1e7 records/s (after); the README's
design, compare, walk-through and many-sequence times after/before <= 1.10; k-state windows
(window leakage and audit of k-state chains, k-state designs, kdim) at least as fast as
before, allowing 5 % for noise (after/before <= 1.05); k = 2 given as a 2x2 matrix as fast
as binary (matrix after <= 1.10 x binary after).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

P3 = [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]]
P2 = [[0.9, 0.1], [0.2, 0.8]]  # MarkovChain(0.1, 0.2) as a matrix
MAIN = (0.01, 0.8)  # the README's chain (Fig. 3)
K2 = (0.1, 0.2)
MANY = {"alpha": 0.003, "beta": 0.012, "length": 500}
#: Rows of the categorical column of the k-state fit case (the chain P3).
CATEGORICAL_ROWS = 10 ** 6
COLUMNS = ["case", "form", "n", "before_s", "after_s", "after/before", "value_before", "value_after",
           "target", "met", "values"]

# ----------------------------------------------------------------------------------------------
# worker: runs inside PYTHONPATH=ROOT, imports only that tree, prints one JSON line


def _best(fn, repeat: int) -> float:
    from _common import best_time  # the benchmarks folder is on sys.path (scripts and workers)

    return best_time(fn, repeat)


def _check_root(root: str) -> dict:
    """Every loaded redactopt module must come from ``root``; returns the two files to print."""
    import redactopt
    import redactopt.solvers

    root_r = os.path.realpath(root) + os.sep
    bad = [name for name, mod in list(sys.modules.items())
           if (name == "redactopt" or name.startswith("redactopt."))
           and getattr(mod, "__file__", None) and not os.path.realpath(mod.__file__).startswith(root_r)]
    files = {"redactopt": redactopt.__file__, "redactopt.solvers": redactopt.solvers.__file__}
    if bad or not all(os.path.realpath(f).startswith(root_r) for f in files.values()):
        raise SystemExit(f"worker: modules outside {root}: {files} {bad[:5]}")
    return files


def _first_name(*paths: str) -> object:
    """The object at the first ``module:name`` of ``paths`` that this tree has."""
    import importlib

    for path in paths:
        module, _, name = path.partition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    raise SystemExit(f"worker: none of {paths} in this tree")


def _worker(root: str, data: str, repeat: int) -> None:
    import numpy as np

    from redactopt.engine.design import design
    from redactopt.judge.audit import audit
    from redactopt.judge.leakage import leakage
    from redactopt.model import chain as chain_mod
    from redactopt.model.chain import MarkovChain

    # the k-prefixed names of a tree before issue 25, or the one name they became (issue 35 removed the old ones)
    kdesign = _first_name("redactopt.engine.kdesign:kdesign", "redactopt.engine.design:design")
    kaudit = _first_name("redactopt.judge.kaudit:kaudit", "redactopt.judge.audit:kaudit")
    kleakage = _first_name("redactopt.judge.kleakage:kleakage", "redactopt.judge.leakage:leakage")
    KChain = _first_name("redactopt.model.kchain:KChain", "redactopt.model.chain:Chain")
    kdim_enumerate = _first_name("redactopt.solvers.kdim:kdim_enumerate", "redactopt.solvers.dim:dim_enumerate")

    Chain = getattr(chain_mod, "Chain", None)  # the one chain type (after issue 25)
    unified = Chain is not None
    d = Path(data)
    arrays = {name: np.load(d / f"{name}.npy") for name in ("q2", "q3", "w2", "w3")}
    n = len(arrays["q2"])
    p = n // 2
    main = MarkovChain(*MAIN)
    main_matrix = Chain.from_binary(main) if unified else KChain.from_binary(main)
    k3 = Chain(P3) if unified else KChain(P3)
    k2b = MarkovChain(*K2)
    k2m = Chain(P2) if unified else KChain(P2)
    if not np.allclose(KChain.from_binary(k2b).transition_matrix, P2, rtol=0, atol=1e-15):
        raise SystemExit(f"worker: MarkovChain{K2} is not {P2}")
    leak_k = ("leakage(Chain)", leakage) if unified else ("kleakage(KChain)", kleakage)
    design_k = ("design(Chain)", design) if unified else ("kdesign(KChain)", kdesign)
    out: dict[str, dict] = {}

    def run(key: str, api: str, fn, value, reps: int = repeat) -> None:
        try:
            t = _best(fn, reps)
            out[key] = {"seconds": t, "value": float(value()), "api": api}
        except Exception as exc:  # an API this tree does not have: n/a with the reason
            out[key] = {"seconds": None, "value": None, "api": api,
                        "reason": f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"}

    def util(chain, cand) -> float:
        return float(((1.0 - np.asarray(cand.redact_prob)) @ np.asarray(chain.stationary)).mean())

    # 1, 6: dense leakage (binary, matrix k = 2 of the main chain, k = 3)
    q2, q3, w2, w3 = arrays["q2"], arrays["q3"], arrays["w2"], arrays["w3"]
    run("dense/binary", "leakage(MarkovChain)", lambda: leakage(main, q2, p), lambda: leakage(main, q2, p).leakage)
    run("dense/matrix", leak_k[0], lambda: leak_k[1](main_matrix, q2, p),
        lambda: leak_k[1](main_matrix, q2, p).leakage)
    run("dense/k3", leak_k[0], lambda: leak_k[1](k3, q3, p), lambda: leak_k[1](k3, q3, p).leakage)
    run("k2dense/binary", "leakage(MarkovChain)", lambda: leakage(k2b, q2, p), lambda: leakage(k2b, q2, p).leakage)
    run("k2dense/matrix", leak_k[0], lambda: leak_k[1](k2m, q2, p), lambda: leak_k[1](k2m, q2, p).leakage)
    # 2: a 400-row window inside n records
    run("window/binary", "leakage(MarkovChain)", lambda: leakage(main, w2, p), lambda: leakage(main, w2, p).leakage)
    run("window/matrix", leak_k[0], lambda: leak_k[1](main_matrix, w2, p),
        lambda: leak_k[1](main_matrix, w2, p).leakage)
    run("window/k3", leak_k[0], lambda: leak_k[1](k3, w3, p), lambda: leak_k[1](k3, w3, p).leakage)
    run("audit/binary", "audit(MarkovChain)", lambda: audit(main, w2, private=[p], eps=5.0),
        lambda: audit(main, w2, private=[p], eps=5.0)["leakage"])
    kc = Chain.from_binary(main) if unified else KChain.from_binary(main)
    run("audit/matrix", "kaudit", lambda: kaudit(kc, w2, private=[p], eps=5.0),
        lambda: kaudit(kc, w2, private=[p], eps=5.0)["leakage"])
    run("audit/k3", "kaudit", lambda: kaudit(k3, w3, private=[p], eps=5.0),
        lambda: kaudit(k3, w3, private=[p], eps=5.0)["leakage"])
    # 3: the README's main job
    res = {}
    run("main/design", "design(MarkovChain)",
        lambda: res.__setitem__("main", design(main, 10, eps=1.0, p=0)), lambda: res["main"].utility)
    # 5: k-state designs and windows
    for nn, pp in ((100, 50), (10, 3)):
        run(f"k3/kdesign/{nn}", "kdesign(KChain)",
            lambda: res.__setitem__(nn, kdesign(KChain(P3), nn, eps=1.0, p=pp)), lambda: res[nn].utility)
    run("k3/design/100", "design(KChain)",
        lambda: res.__setitem__("d3", design(KChain(P3), 100, eps=1.0, p=50)), lambda: res["d3"].utility)
    run("k3/kdim", "kdim_enumerate(KChain)",
        lambda: res.__setitem__("kdim", kdim_enumerate(KChain(P3), 1000, eps=1.0, p=500)),
        lambda: util(KChain(P3), res["kdim"]))
    # 6: k = 2 as binary and as a matrix
    run("k2design/binary", "design(MarkovChain)",
        lambda: res.__setitem__("k2b", design(k2b, 100, eps=1.0, p=50)), lambda: res["k2b"].utility)
    run("k2design/matrix", design_k[0],
        lambda: res.__setitem__("k2m", design_k[1](k2m, 100, eps=1.0, p=50)), lambda: res["k2m"].utility)
    files = _check_root(root)
    print(json.dumps({"files": files, "cases": out, "n": n}))


# ----------------------------------------------------------------------------------------------
# driver


def _git(*args: str, binary: bool = False) -> str | bytes:
    r = subprocess.run(["git", "-C", str(REPO), "--no-optional-locks", *args], capture_output=True,
                       text=not binary, check=False)
    if r.returncode != 0:
        err = r.stderr if isinstance(r.stderr, str) else r.stderr.decode(errors="replace")
        raise SystemExit(f"git {' '.join(args)}: {err.strip()}")
    return r.stdout


def _package_dirs(tree: Path) -> dict[str, str]:
    """``[tool.setuptools] package-dir`` of the tree's pyproject (default: ``src`` layout)."""
    import tomllib

    try:
        cfg = tomllib.loads((tree / "pyproject.toml").read_text())
        dirs = dict(cfg["tool"]["setuptools"]["package-dir"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        dirs = {"": "src"}
    if (tree / "solvers" / "__init__.py").is_file():
        dirs.setdefault("redactopt.solvers", "solvers")
    return dirs


def _build_root(tree: Path, root: Path) -> None:
    """``root/redactopt`` laid out as the tree's pyproject installs it."""
    dirs = _package_dirs(tree)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(tree / dirs.get("", "src") / "redactopt", root / "redactopt", ignore=ignore)
    for pkg, folder in dirs.items():
        if pkg.startswith("redactopt."):
            dst = root.joinpath(*pkg.split("."))
            if dst.exists():
                shutil.rmtree(dst)
            shutil.copytree(tree / folder, dst, ignore=ignore)


def _before_tree(rev: str, dst: Path) -> str:
    full = _git("rev-parse", "--verify", f"{rev}^{{commit}}").strip()
    names = set(_git("ls-tree", "--name-only", full).split())
    wanted = [x for x in ("src", "solvers", "pyproject.toml") if x in names]
    data = _git("archive", "--format=tar", full, *wanted, binary=True)
    dst.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(dst, **kw)
    subject = _git("log", "-1", "--format=%h %ad %s", "--date=short", full).strip()
    return f"{full[:12]} ({subject[:90]})"


def _after_desc() -> str:
    head = _git("log", "-1", "--format=%h %s").strip()
    dirty = [ln for ln in _git("status", "--porcelain", "--untracked-files=no").splitlines() if ln.strip()]
    return f"working tree of {REPO} at {head[:90]}" + (f" + uncommitted changes in {len(dirty)} file(s)"
                                                       if dirty else " (clean)")


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # byte code cached in the root, as in an installed package
    env["MPLBACKEND"] = "Agg"
    return env


def _check_cli_root(root: Path) -> dict:
    code = ("import json, sys, redactopt, redactopt.solvers, redactopt.interface.cli, runpy; "
            "print(json.dumps({m: getattr(sys.modules[m], '__file__', None) for m in sys.modules "
            "if m == 'redactopt' or m.startswith('redactopt.')}))")
    r = subprocess.run([sys.executable, "-c", code], env=_env(root), capture_output=True, text=True,
                       cwd=root.parent)
    if r.returncode != 0:
        raise SystemExit(f"import check in {root} failed: {r.stderr.strip()[-500:]}")
    files = json.loads(r.stdout.strip().splitlines()[-1])
    rr = os.path.realpath(root) + os.sep
    bad = [m for m, f in files.items() if f and not os.path.realpath(f).startswith(rr)]
    if bad:
        raise SystemExit(f"{root}: modules imported from elsewhere: {bad[:5]} ({files[bad[0]]})")
    return {"redactopt": files["redactopt"], "redactopt.solvers": files["redactopt.solvers"]}


def _make_data(d: Path, n: int, sequences: int) -> Path:
    import numpy as np

    rng = np.random.default_rng(0)
    p = n // 2
    for k in (2, 3):
        q = rng.uniform(0.3, 1.0, (n, k))
        q[p] = 1.0
        np.save(d / f"q{k}.npy", q)
        w = np.zeros((n, k))
        w[p - 200: p + 200] = rng.uniform(0.3, 1.0, (400, k))
        w[p] = 1.0
        np.save(d / f"w{k}.npy", w)
    # many sequences: each a stationary two-state chain of its own, one opted-out record each
    a, b, m = MANY["alpha"], MANY["beta"], MANY["length"]
    rng = np.random.default_rng(1)
    x = np.empty((sequences, m), dtype=np.int8)
    x[:, 0] = rng.random(sequences) < a / (a + b)
    u = rng.random((sequences, m))
    for t in range(1, m):
        prev = x[:, t - 1]
        x[:, t] = np.where(prev == 1, u[:, t] >= b, u[:, t] < a)
    opt = np.zeros((sequences, m), dtype=np.int8)
    opt[np.arange(sequences), rng.integers(0, m, sequences)] = 1
    path = d / "many.csv"
    with open(path, "w", newline="") as fh:
        fh.write("sid,t,Occupancy,optout\n")
        tt = np.arange(m)
        for i in range(sequences):
            fh.write("".join(f"s{i:06d},{t},{v},{o}\n" for t, v, o in zip(tt, x[i], opt[i])))
    # a categorical column: 10^6 minutes of the three-state chain P3 (the k-state fit, CLI)
    P = np.array(P3)
    u = rng.random(CATEGORICAL_ROWS)
    states = np.empty(CATEGORICAL_ROWS, dtype=np.int64)
    states[0] = 0
    cum = np.cumsum(P, axis=1)
    for t in range(1, CATEGORICAL_ROWS):
        states[t] = int(np.searchsorted(cum[states[t - 1]], u[t]))
    names = np.array(["low", "mid", "high"])[states]
    with open(d / "levels.csv", "w", newline="") as fh:
        fh.write("t,level\n")
        fh.write("".join(f"{t},{v}\n" for t, v in enumerate(names.tolist())))
    return path


def _run_workers(roots: dict[str, Path], data: Path, repeat: int, rounds: int) -> dict[str, dict]:
    results: dict[str, dict] = {"before": {}, "after": {}}
    files: dict[str, dict] = {}
    for r in range(rounds):
        for tree in ("before", "after"):
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", str(roots[tree]),
                                   "--data", str(data), "--repeat", str(repeat)],
                                  env=_env(roots[tree]), capture_output=True, text=True, cwd=data, timeout=1200)
            if proc.returncode != 0:
                raise SystemExit(f"worker {tree} failed:\n{proc.stderr[-2000:]}")
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            files[tree] = got["files"]
            for key, c in got["cases"].items():
                old = results[tree].get(key)
                if old is None:
                    results[tree][key] = c
                    continue
                if c["value"] != old["value"]:
                    old["unstable"] = f"{old['value']!r} then {c['value']!r}"
                if c["seconds"] is not None and (old["seconds"] is None or c["seconds"] < old["seconds"]):
                    old["seconds"] = c["seconds"]
            print(f"  in-process round {r + 1}/{rounds} {tree}: {time.perf_counter() - t0:.1f} s", flush=True)
    results["files"] = files
    return results


# command-line cases: value parsers of the printed text

def _field(text: str, name: str) -> str:
    m = re.search(rf"^{re.escape(name)}\s*:\s*(.+)$", text, re.M)
    return m.group(1).strip() if m else "?"


def _v_design(out: str, _: Path) -> str:
    return "utility " + _field(out, "utility")


def _v_compare(out: str, cwd: Path) -> str:
    rows = [ln for ln in out.splitlines() if ln.startswith("|")]
    head = [c.strip() for c in rows[0].strip("|").split("|")] if rows else []
    if "optimal" not in head:
        return "?"
    i = head.index("optimal")
    vals = [r.strip("|").split("|")[i].strip() for r in rows[2:]]
    plot = " +plot" if (cwd / "compare.png").is_file() else ""
    return "optimal " + ",".join(vals) + plot


def _v_fit(out: str, _: Path) -> str:
    return f"alpha {_field(out, 'alpha').split()[0]} beta {_field(out, 'beta').split()[0]}"


def _v_kfit(out: str, _: Path) -> str:
    rows = [ln for ln in out.splitlines() if ln.startswith(("records", "states", "            "))]
    return " | ".join(" ".join(ln.split()) for ln in rows)


def _v_kapply(out: str, _: Path) -> str:
    wrote = re.search(r"\((\d+) rows, (\d+) redacted\)", out)
    return f"{wrote.group(2) if wrote else '?'} redacted; leakage {_field(out, 'leakage').split()[0]}"


def _v_apply(out: str, _: Path) -> str:
    wrote = re.search(r"\((\d+) rows, (\d+) redacted\)", out)
    leak = _field(out, "leakage").split()[0]
    util = _field(out, "utility")
    return f"{wrote.group(2) if wrote else '?'} redacted; leakage {leak}; utility {util}"


def _v_audit(out: str, _: Path) -> str:
    return f"leakage {_field(out, 'leakage').split()[0]}; {_field(out, 'result')}"


def _cli_cases(data_file: Path, many: Path, sequences: int) -> list[dict]:
    walk = [str(data_file), "--column", "Occupancy"]
    return [
        {"key": "cli/design", "case": "3 README main job (CLI)", "form": "design --n 10 --eps 1", "n": 10,
         "argv": ["design", "--n", "10", "--eps", "1"], "value": _v_design, "target": "readme"},
        {"key": "cli/compare", "case": "4 README compare (CLI)", "form": "compare --n 10 --eps 0.25,0.5,1,2",
         "n": 10, "argv": ["compare", "--n", "10", "--eps", "0.25,0.5,1,2"], "value": _v_compare,
         "target": "readme"},
        {"key": "cli/compare-plot", "case": "4 README compare (CLI)", "form": "... --plot compare.png (README form)",
         "n": 10, "argv": ["compare", "--n", "10", "--eps", "0.25,0.5,1,2", "--plot", "compare.png"],
         "value": _v_compare, "target": "readme"},
        {"key": "cli/fit", "case": "4 walk-through (CLI)", "form": "fit occupancy --column Occupancy", "n": 8143,
         "argv": ["fit", *walk], "value": _v_fit, "target": "readme"},
        {"key": "cli/apply", "case": "4 walk-through (CLI)",
         "form": "apply occupancy --private 1120-1179 --eps 1 --seed 2015", "n": 8143,
         "argv": ["apply", *walk, "--private", "1120-1179", "--eps", "1", "--seed", "2015", "--out", "released.csv",
                  "--report", "report.json"], "value": _v_apply, "target": "readme", "keep": "report.json"},
        {"key": "cli/audit", "case": "4 walk-through (CLI)", "form": "audit report.json (its own apply's)",
         "n": 8143, "argv": ["audit", "{report}"], "value": _v_audit, "target": "readme"},
        {"key": "cli/kfit", "case": "7 k-state fit (CLI)",
         "form": f"fit levels.csv --column level --categorical ({CATEGORICAL_ROWS} rows, 3 states)",
         "n": CATEGORICAL_ROWS, "argv": ["fit", str(many.parent / "levels.csv"), "--column", "level",
                                         "--categorical"], "value": _v_kfit, "target": "kstate"},
        {"key": "cli/kapply", "case": "7 k-state fit (CLI)",
         "form": f"apply levels.csv --column level --categorical --private 500001-500060 ({CATEGORICAL_ROWS} rows)",
         "n": CATEGORICAL_ROWS, "argv": ["apply", str(many.parent / "levels.csv"), "--column", "level",
                                         "--categorical", "--private", "500001-500060", "--eps", "1", "--seed", "1",
                                         "--out", "levels_out.csv", "--force"],
         "value": _v_kapply, "target": "kstate"},
        {"key": "cli/many", "case": "4 many sequences (CLI)",
         "form": f"apply many.csv --by sid ({sequences} x {MANY['length']}, CSV)", "n": sequences * MANY["length"],
         "argv": ["apply", str(many), "--column", "Occupancy", "--by", "sid", "--private-column", "optout", "--eps",
                  "1", "--alpha", str(MANY["alpha"]), "--beta", str(MANY["beta"]), "--seed", "1", "--out", "out.csv",
                  "--report", "rep.json"], "value": _v_apply, "target": "readme"},
    ]


#: command-line cases whose warm-up took less than SHORT seconds run SHORT_FACTOR times as often (start-up noise)
SHORT, SHORT_FACTOR = 1.0, 3


def _run_cli(roots: dict[str, Path], work: Path, cases: list[dict], repeat: int) -> dict[str, dict]:
    results: dict[str, dict] = {"before": {}, "after": {}}
    kept: dict[str, Path] = {}
    counter = 0

    def once(tree: str, spec: dict) -> tuple[float, int, str, str]:
        nonlocal counter
        counter += 1
        cwd = work / f"run{counter:04d}"
        cwd.mkdir()
        argv = [a.replace("{report}", str(kept.get(tree, cwd / "missing.json"))) for a in spec["argv"]]
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "redactopt", *argv], env=_env(roots[tree]), cwd=cwd,
                              capture_output=True, text=True, timeout=900)
        seconds = time.perf_counter() - t
        value = spec["value"](proc.stdout, cwd) if proc.returncode == 0 else ""
        err = (proc.stderr.strip().splitlines() or [""])[-1][:160]
        if spec.get("keep") and proc.returncode == 0 and tree not in kept:
            kept[tree] = cwd / spec["keep"]  # the walk-through's report, audited below
        else:
            shutil.rmtree(cwd)
        return seconds, proc.returncode, value, err

    for spec in cases:
        t0 = time.perf_counter()
        live = []
        warm = 0.0
        for tree in ("before", "after"):  # warm-up (file cache, byte code) and the value
            s, rc, value, err = once(tree, spec)
            warm = max(warm, s)
            if rc != 0:
                results[tree][spec["key"]] = {"seconds": None, "value": None, "reason": f"exit {rc}: {err}"}
            else:
                results[tree][spec["key"]] = {"seconds": math.inf, "value": value, "runs": []}
                live.append(tree)
        for _ in range(repeat * (SHORT_FACTOR if warm < SHORT else 1)):
            for tree in live:
                s, rc, value, err = once(tree, spec)
                r = results[tree][spec["key"]]
                if rc != 0:
                    raise SystemExit(f"{spec['key']} ({tree}) failed after a good warm-up: exit {rc}: {err}")
                if value != r["value"]:
                    r["unstable"] = f"{r['value']} then {value}"
                r["runs"].append(s)
                r["seconds"] = min(r["seconds"], s)
        print(f"  {spec['key']}: {time.perf_counter() - t0:.1f} s", flush=True)
    return results


# ----------------------------------------------------------------------------------------------
# the table

IN_PROCESS = [  # key, case, form, n (None: the dense n), target kind
    ("dense/binary", "1 exact leakage, dense, p = n/2", "binary MarkovChain(0.01, 0.8)", None, "rate"),
    ("dense/matrix", "1 exact leakage, dense, p = n/2", "matrix k=2 (same chain)", None, "none"),
    ("dense/k3", "1 exact leakage, dense, p = n/2", "k=3 P3", None, "none"),
    ("window/binary", "2 leakage, 400-row window", "binary MarkovChain(0.01, 0.8)", None, "none"),
    ("window/matrix", "2 leakage, 400-row window", "matrix k=2 (same chain)", None, "kstate"),
    ("window/k3", "2 leakage, 400-row window", "k=3 P3", None, "kstate"),
    ("audit/binary", "2 audit, 400-row window", "binary audit()", None, "none"),
    ("audit/matrix", "2 audit, 400-row window", "matrix k=2 kaudit()", None, "kstate"),
    ("audit/k3", "2 audit, 400-row window", "k=3 kaudit()", None, "kstate"),
    ("main/design", "3 README main job (library)", "design(MarkovChain(0.01, 0.8), 10, eps=1, p=0)", 10, "readme"),
    ("k3/kdesign/100", "5 k-state design", "kdesign(P3, 100, eps=1, p=50)", 100, "kstate"),
    ("k3/kdesign/10", "5 k-state design", "kdesign(P3, 10, eps=1, p=3)", 10, "kstate"),
    ("k3/design/100", "5 k-state design", "design(P3, 100, eps=1, p=50)", 100, "kstate"),
    ("k3/kdim", "5 k-state window optimum", "kdim_enumerate(P3, 1000, eps=1, p=500)", 1000, "kstate"),
    ("k2design/binary", "6 k=2: design n=100 p=50", "binary MarkovChain(0.1, 0.2)", 100, "none"),
    ("k2design/matrix", "6 k=2: design n=100 p=50", "matrix [[0.9,0.1],[0.2,0.8]]", 100, "k2:k2design/binary"),
    ("k2dense/binary", "6 k=2: exact leakage, dense", "binary MarkovChain(0.1, 0.2)", None, "none"),
    ("k2dense/matrix", "6 k=2: exact leakage, dense", "matrix [[0.9,0.1],[0.2,0.8]]", None, "k2:k2dense/binary"),
]

TARGETS = {"rate": ">= 1e7 records/s (after)", "readme": "after/before <= 1.10",
           "kstate": "after/before <= 1.05 (at least as fast; 5 % noise)", "none": "—"}


def _agree(a, b) -> str:
    if a is None or b is None:
        return "n/a"
    if isinstance(a, float) and isinstance(b, float):
        return "agree" if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) else "MISMATCH"
    return "agree" if a == b else "MISMATCH"


def _secs(c: dict | None) -> str:
    if c is None:
        return "n/a"
    if c.get("seconds") is None:
        return f"n/a ({c.get('reason', 'not run')})"
    return f"{c['seconds']:.4g}"


def _val(c: dict | None) -> str:
    if c is None or c.get("value") is None:
        return "n/a"
    v = c["value"]
    return f"{v:.12g}" if isinstance(v, float) else str(v)


def _rows(res: dict, n_dense: int, cli: list[dict]) -> tuple[list[dict], list[str]]:
    specs = [(k, case, form, n if n is not None else n_dense, tgt) for k, case, form, n, tgt in IN_PROCESS]
    order = {"1": 0, "2": 1, "3": 2, "4": 3, "5": 4, "6": 5, "7": 6}
    specs += [(c["key"], c["case"], c["form"], c["n"], c["target"]) for c in cli]
    specs.sort(key=lambda s: order[s[1][0]])
    rows, notes = [], []
    for key, case, form, n, tgt in specs:
        b, a = res["before"].get(key), res["after"].get(key)
        sb = b.get("seconds") if b else None
        sa = a.get("seconds") if a else None
        ratio = sa / sb if sa and sb else None
        if tgt.startswith("k2:"):
            ref = res["after"].get(tgt[3:], {}).get("seconds")
            target = "matrix after <= 1.10 x binary after"
            met = "n/a" if not (sa and ref) else (f"{'yes' if sa <= 1.10 * ref else 'NO'} "
                                                   f"(matrix/binary {sa / ref:.3f})")
        else:
            target = TARGETS[tgt]
            if tgt == "rate":
                met = "n/a" if not sa else f"{'yes' if n / sa >= 1e7 else 'NO'} ({n / sa:.3g} rec/s after; " + (
                    f"{n / sb:.3g} before)" if sb else "before n/a)")
            elif tgt == "readme":
                met = "n/a" if ratio is None else ("yes" if ratio <= 1.10 else "NO")
            elif tgt == "kstate":
                met = "n/a" if ratio is None else ("yes" if ratio <= 1.05 else "NO")
            else:
                met = "—"
        rows.append({"case": case, "form": form, "n": n, "before_s": _secs(b), "after_s": _secs(a),
                     "after/before": f"{ratio:.3f}" if ratio is not None else "n/a",
                     "value_before": _val(b), "value_after": _val(a), "target": target, "met": met,
                     "values": _agree(b.get("value") if b else None, a.get("value") if a else None)})
        apis = [f"{tree} `{c['api']}`" for tree, c in (("before", b), ("after", a)) if c and c.get("api")]
        if apis:
            notes.append(f"{case} / {form}: " + ", ".join(apis))
        for tree, c in (("before", b), ("after", a)):
            if c and c.get("unstable"):
                notes.append(f"{key} {tree}: value changed between runs ({c['unstable']})")
    return rows, notes


def _write(rows: list[dict], header: list[str], notes: list[str], stem: Path) -> str:
    with open(stem.with_suffix(".csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    esc = lambda s: str(s).replace("|", "\\|")  # noqa: E731
    lines = ["# One model for every chain: before/after (benchmarks/one_model.py)", "", *header, "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(esc(r[k]) for k in COLUMNS) + " |" for r in rows]
    lines += ["", "The names each tree was called through (in-process cases; a value that changed between runs is "
              "listed too):", ""] + [f"* {x}" for x in notes]
    text = "\n".join(lines) + "\n"
    stem.with_suffix(".md").write_text(text)
    return text


def main(argv: list[str] | None = None) -> list[dict]:
    sys.dont_write_bytecode = True  # no __pycache__ left in benchmarks/
    sys.path.insert(0, str(HERE))
    from _common import machine, out_dir, parser

    ap = parser(__doc__)
    ap.add_argument("--before", default="cd96fb6", metavar="REV", help="the BEFORE commit (default cd96fb6)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per case, the best counts (default 5)")
    ap.add_argument("--rounds", type=int, default=2,
                    help="worker processes per tree for the in-process cases, run alternately (default 2)")
    args = ap.parse_args(argv)
    out = out_dir(args.out)
    repeat, rounds = (1, 1) if args.quick else (max(1, args.repeat), max(1, args.rounds))
    n_dense, sequences = (10**5, 200) if args.quick else (10**6, 2000)
    m = machine()
    load0 = os.getloadavg()
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="one_model_") as tmp:
        tmp = Path(tmp)
        print("building the two trees ...", flush=True)
        before_desc = _before_tree(args.before, tmp / "tree_before")
        after_desc = _after_desc()
        roots = {"before": tmp / "root_before", "after": tmp / "root_after"}
        _build_root(tmp / "tree_before", roots["before"])
        _build_root(REPO, roots["after"])
        shutil.rmtree(tmp / "tree_before")
        files = {tree: {k: v.replace(str(tmp), "$TMP") for k, v in _check_cli_root(root).items()}
                 for tree, root in roots.items()}
        for tree, f in files.items():
            print(f"  {tree}: redactopt {f['redactopt']}  solvers {f['redactopt.solvers']}", flush=True)
        data = tmp / "data"
        data.mkdir()
        occ = [r / "redactopt" / "datasets" / "occupancy" / "datatraining.txt" for r in roots.values()]
        data_file = data / "datatraining.txt"
        shutil.copyfile(occ[1], data_file)
        same_data = occ[0].read_bytes() == occ[1].read_bytes()
        print("generating data ...", flush=True)
        many = _make_data(data, n_dense, sequences)
        print("in-process cases ...", flush=True)
        res = _run_workers(roots, data, repeat, rounds)
        for tree in ("before", "after"):
            for key, f in res["files"][tree].items():
                if not f.startswith(str(roots[tree])):
                    raise SystemExit(f"{tree}: {key} imported from {f}")
        print("command-line cases ...", flush=True)
        work = tmp / "work"
        work.mkdir()
        cli = _cli_cases(data_file, many, sequences)
        cres = _run_cli(roots, work, cli, repeat)
        for tree in ("before", "after"):
            res[tree].update(cres[tree])
        total = time.perf_counter() - t_start
        load1 = os.getloadavg()
        header = [
            f"{m['date']} · Python {m['python']} · numpy {m['numpy']} · {m['cpus']} CPUs · {m['platform']} · "
            f"load average {load0[0]:.2f} at start, {load1[0]:.2f} at end · {total:.0f} s in all",
            "",
            f"`{m['command']}`",
            "",
            f"* BEFORE: `{args.before}` = {before_desc}",
            f"* AFTER: {after_desc}",
            f"* imports checked in every worker process and, for the command line, once per tree in the same "
            f"environment: before `{files['before']['redactopt']}`, "
            f"`{files['before']['redactopt.solvers']}`; after `{files['after']['redactopt']}`, "
            f"`{files['after']['redactopt.solvers']}` ($TMP: the script's temporary folder)",
            f"* in-process cases: best of {repeat} calls after a warm-up, in {rounds} worker process(es) per tree run "
            f"alternately, best over them; command-line cases: wall time of `python -m redactopt ...`, one warm-up "
            f"per tree then {repeat} runs alternating BEFORE/AFTER ({SHORT_FACTOR * repeat} for those under "
            f"{SHORT:g} s), the best; n = {n_dense} for the dense and window cases",
            f"* the walk-through's data: the occupancy file shipped in AFTER, passed by path to both trees "
            f"(BEFORE's copy {'identical' if same_data else 'DIFFERS'})",
            "* values: floats agree within 1e-9 relative; the command-line values are the printed results",
        ]
    rows, notes = _rows(res, n_dense, cli)
    text = _write(rows, header, notes, out / "one_model")
    print(text)
    return rows


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        import argparse

        wp = argparse.ArgumentParser()
        wp.add_argument("--worker")
        wp.add_argument("--data")
        wp.add_argument("--repeat", type=int)
        wa = wp.parse_args()
        _worker(wa.worker, wa.data, wa.repeat)
    else:
        main()
