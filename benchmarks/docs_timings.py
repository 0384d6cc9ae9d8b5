"""Every timing in README.md and docs/*.md, re-measured: documented against measured (issue 37, item 6).

Usage:
  python benchmarks/docs_timings.py --check                  # no measuring: docs and catalogue agree
  python benchmarks/docs_timings.py [--out DIR] [--only PATTERN] [--quick] [--repeat N] [--list]

The catalogue below (``CATALOGUE``) holds one entry per documented timing: the doc file, a *needle*
(a short substring of the doc, whitespace-normalised, that holds the figure), its *kind* and, for a
figure that the shipped code can reproduce, how to re-measure it:

* ``Cli``: the command the doc shows, run as a user would (a fresh process, its wall time, the best
  of ``--repeat``; ``redactopt`` starts a supervisor process, which is part of what the user waits
  for);
* ``Py``: a library call in a fresh interpreter, timed around the call (imports excluded, as the
  docs' library figures are);
* ``Bench``: a benchmark script of ``benchmarks/`` run once into a temporary folder, the figure read
  from the CSV it writes (the script does its own repeats; several entries share one run).

Figures that are not re-measurable by design are catalogued too, and printed, with a reason:
``history`` (an earlier version: "took 1,888 s before"), ``experiment`` (something tried and not
shipped), ``limit`` (a time limit, a default, a target: "--time-limit default 60 s"),
``data`` (not a time of the software: "2,880 minutes" of data, "a state lasts 5.3 h") and
``unmeasured`` (a current figure whose instance the doc does not pin down, with why).

``--check`` (also ``tests/test_docs_timings.py`` in the default test run) measures nothing: every
timing phrase that ``TIME_RE`` finds in README.md and docs/*.md must lie inside a catalogued needle,
every needle must be found exactly once in its doc, and a measured entry's figure must be in its
needle.  It exits 1 naming what is uncatalogued or stale.

Measure mode prints doc | phrase | documented | measured | ratio | verdict and writes
``docs_timings.csv`` / ``.md`` into ``--out DIR`` (default ``bench-out``; ``--out
benchmarks/results`` updates the committed results) with the machine: cores, CPU model, RAM, load
average before and after, date, Python and package versions.  ``ratio`` is measured time over
documented time (for a rate, documented rate over measured rate: above 1 is slower either way; a
range is compared by its geometric middle); the verdict is ``ok`` within a factor 2, else
``slower`` / ``faster``, or ``ok on cpu`` when the wall time is more than twice the documented one
but the run's CPU time (``cpu``) is within a factor 2 of it: the machine's load, not the code.  For
a benchmark script's figure ``cpu`` is an estimate, the figure times the script's CPU share (its CPU
seconds over its wall seconds, at most 1).  ``--quick`` skips entries whose documented time or measuring cost exceeds
60 s; ``--only PATTERN`` keeps entries whose doc, needle or script matches the regular expression.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# --------------------------------------------------------------------------------------------------
# Finding timing phrases in the docs
# --------------------------------------------------------------------------------------------------

_SUP = "⁰¹²³⁴⁵⁶⁷⁸⁹"
#: A number (digits with , or . inside, optionally ·10ⁿ or a superscript exponent), optionally a range
#: ("0.6–1.2", "1.3 – 5.4"), then a unit of time or a rate.  Not inside a longer number or word.
_NUM = rf"\d[\d.,]*(?:·10[{_SUP}⁻]+|[{_SUP}]+)?"
TIME_RE = re.compile(
    rf"(?<![\w.,·{_SUP}⁻]){_NUM}(?:\s?[–-]\s?{_NUM})?\s?"
    r"(?:ms|s|min|minutes?|seconds?|hours?|h|records/s)(?![\w/])")

_UNIT = {"ms": 1e-3, "s": 1.0, "second": 1.0, "seconds": 1.0, "min": 60.0, "minute": 60.0, "minutes": 60.0,
         "h": 3600.0, "hour": 3600.0, "hours": 3600.0, "records/s": 1.0}


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md and docs/*.md: the files whose timings the catalogue covers."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def normalise(text: str) -> str:
    """Whitespace runs (line breaks included) as one space: needles survive a re-wrapped paragraph."""
    return " ".join(text.split())


def doc_texts(root: Path = ROOT) -> dict[str, str]:
    """``{"README.md": text, "docs/x.md": text, ...}``, normalised."""
    return {str(p.relative_to(root)): normalise(p.read_text(encoding="utf-8")) for p in doc_files(root)}


def _number(s: str) -> float:
    s = s.replace(",", "")
    if "·10" in s:
        mant, exp = s.split("·10")
        return float(mant) * 10.0 ** _sup_int(exp)
    m = re.match(rf"^(\d[\d.]*)([{_SUP}⁻]+)$", s)
    if m:  # "10⁷"
        return float(m.group(1)) ** _sup_int(m.group(2)) if m.group(1) != "10" else 10.0 ** _sup_int(m.group(2))
    return float(s)


def _sup_int(s: str) -> int:
    table = {c: str(i) for i, c in enumerate(_SUP)}
    table["⁻"] = "-"
    return int("".join(table[c] for c in s))


def parse_figure(phrase: str) -> tuple[float, float, bool]:
    """(low, high, is_rate) of a timing phrase, in seconds (or records/s): "0.6–1.2 s" -> (0.6, 1.2, False).

    "9 min 47 s" is 587 s."""
    phrase = normalise(phrase)
    m = re.fullmatch(r"(\d+) min (\d+) s", phrase)
    if m:
        v = 60.0 * int(m.group(1)) + int(m.group(2))
        return v, v, False
    m = re.fullmatch(rf"({_NUM})(?:\s?[–-]\s?({_NUM}))?\s?(ms|s|min|minutes?|seconds?|hours?|h|records/s)", phrase)
    if not m:
        raise ValueError(f"not a timing phrase: {phrase!r}")
    lo = _number(m.group(1))
    hi = _number(m.group(2)) if m.group(2) else lo
    if m.group(2) and "·10" in m.group(2) and "·10" not in m.group(1):  # "2–3·10⁶": the exponent is shared
        lo *= hi / float(m.group(2).split("·10")[0].replace(",", ""))
    f = _UNIT[m.group(3)]
    return lo * f, hi * f, m.group(3) == "records/s"


# --------------------------------------------------------------------------------------------------
# How to measure
# --------------------------------------------------------------------------------------------------


class Context:
    """A run's shared state: a scratch folder, prepared inputs, cached benchmark runs, the repeat count."""

    def __init__(self, work: Path, repeat: int) -> None:
        self.work = work.resolve()  # commands run in folders of their own: every path given them is absolute
        self.repeat = repeat
        self.prepared: dict[str, Path] = {}
        self.bench_runs: dict[tuple, Any] = {}

    def redactopt(self) -> list[str]:
        exe = Path(sys.executable).with_name("redactopt")
        return [str(exe)] if exe.exists() else [sys.executable, "-m", "redactopt"]

    def prepare(self, name: str) -> Path:
        """Inputs the commands need, made once per run: ``data`` (the shipped occupancy file), ``meter``
        (the issue-37 table of benchmarks/meter_table.py), ``one``/``public`` (one home, the three homes
        without private rows), ``walk`` (the walk-through's report.json, from the README command)."""
        if name in self.prepared:
            return self.prepared[name]
        if name == "data":
            out = subprocess.run([*self.redactopt(), "datasets", "path", "occupancy"], capture_output=True,
                                 text=True, check=True).stdout.strip()
            path = Path(out)
        elif name in ("meter", "one", "public"):
            sys.path.insert(0, str(HERE))
            from meter_table import make_meter

            df = make_meter()
            for key, part in (("meter", df), ("one", df[df["home"] == "h02"]),
                              ("public", df[df["home"].isin(["h01", "h03", "h06"])])):
                p = self.work / f"{key}.csv"
                part.to_csv(p, index=False)
                self.prepared[key] = p
            return self.prepared[name]
        elif name == "walk":
            path = self.work / "walk-report.json"
            subprocess.run([*self.redactopt(), "apply", str(self.prepare("data")), "--column", "Occupancy",
                            "--private", "1120-1179", "--eps", "1", "--seed", "2015", "--quiet", "--force",
                            "--out", str(self.work / "walk-released.csv"), "--report", str(path)],
                           capture_output=True, text=True, check=True)
        else:
            raise KeyError(name)
        self.prepared[name] = path
        return path


@dataclass(frozen=True)
class Cli:
    """A ``redactopt`` command line: ``{data}``, ``{meter}``, ``{one}``, ``{public}``, ``{walk}`` name
    prepared inputs, ``{tmp}`` a fresh folder for the outputs.  Wall time of the process, best of N."""

    argv: tuple[str, ...]
    cost: float = 10.0  # seconds one run takes, roughly (for --quick)
    env: tuple[tuple[str, str], ...] = ()

    def script(self) -> str:
        return "redactopt " + " ".join(self.argv)

    def measure(self, ctx: Context) -> tuple[float, float, float | None]:
        best, best_cpu = math.inf, None
        for _ in range(ctx.repeat):
            tmp = Path(tempfile.mkdtemp(dir=ctx.work))
            subs = {k: str(ctx.prepare(k)) for k in ("data", "meter", "one", "public", "walk")
                    if any("{" + k + "}" in a for a in self.argv)}
            subs["tmp"] = str(tmp)
            argv = [a.format(**subs) for a in self.argv]
            c0 = _children_cpu()
            t = time.perf_counter()
            r = subprocess.run([*ctx.redactopt(), *argv], capture_output=True, text=True, cwd=tmp,
                               env={**os.environ, **dict(self.env)})
            dt = time.perf_counter() - t
            cpu = _children_cpu() - c0
            shutil.rmtree(tmp, ignore_errors=True)
            if r.returncode != 0:
                raise RuntimeError(f"exit {r.returncode}: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
            if dt < best:
                best, best_cpu = dt, cpu
        return best, best, best_cpu


def _children_cpu() -> float:
    """User + system CPU seconds of every finished child process (and what they waited for)."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


@dataclass(frozen=True)
class Clis:
    """Several command lines, one figure: the range of their best wall times (the documented range);
    the CPU time is the geometric middle of the fastest and the slowest command's."""

    cmds: tuple[tuple[str, ...], ...]
    cost: float = 30.0

    def script(self) -> str:
        return f"{len(self.cmds)} commands: redactopt " + " | ".join(" ".join(c) for c in self.cmds[:2]) + \
            (" | ..." if len(self.cmds) > 2 else "")

    def measure(self, ctx: Context) -> tuple[float, float, float | None]:
        got = [Cli(c).measure(ctx) for c in self.cmds]
        lo = min(got, key=lambda g: g[0])
        hi = max(got, key=lambda g: g[0])
        return lo[0], hi[0], math.sqrt(lo[2] * hi[2])


_PY_HARNESS = """
import json, sys, time
ns = {"time": time}
c0 = time.process_time()
exec(sys.argv[1], ns)
print("DOCS_TIMINGS", json.dumps([ns["result"], ns.get("cpu", time.process_time() - c0)]))
"""


@dataclass(frozen=True)
class Py:
    """Library code run in a fresh interpreter; it sets ``result`` (seconds, timed around the call, or
    ``[low, high]`` for a documented range) and ``cpu`` (the process's CPU seconds in the call).
    ``runs`` overrides ``--repeat`` (for code that repeats or takes long by itself)."""

    code: str
    cost: float = 10.0
    runs: int | None = None

    def script(self) -> str:
        call = [ln for ln in self.code.strip().splitlines() if "perf_counter();" in ln]
        return "python: " + (call[-1].split(";")[2].strip() if call else self.code.strip().splitlines()[-1])

    def measure(self, ctx: Context) -> tuple[float, float, float | None]:
        best: tuple[float, float, float | None] = (math.inf, math.inf, None)
        for _ in range(self.runs or ctx.repeat):
            r = subprocess.run([sys.executable, "-c", _PY_HARNESS, self.code], capture_output=True, text=True,
                               cwd=ctx.work, env={**os.environ, "PYTHONPATH": str(HERE)})
            if r.returncode != 0:
                raise RuntimeError((r.stderr or r.stdout).strip().splitlines()[-1:])
            line = [x for x in r.stdout.splitlines() if x.startswith("DOCS_TIMINGS ")][-1]
            res, cpu = json.loads(line.split(" ", 1)[1])
            lo, hi = (res, res) if isinstance(res, (int, float)) else res
            if hi < best[1]:
                best = (float(lo), float(hi), None if cpu is None else float(cpu))
        return best


Where = Callable[[dict[str, str]], bool]


def where(**cols: str) -> Where:
    """Rows whose columns equal the given strings (``records="4000000"``)."""
    return lambda row: all(row.get(k.rstrip("_")) == v for k, v in cols.items())


@dataclass(frozen=True)
class Bench:
    """A figure from a benchmark script's CSV: the rows selected by ``rows``, column ``column``,
    summarised by ``stat`` (``min``, ``max``, ``range`` (min, max), ``iqr`` (quartiles), ``median``)."""

    script_name: str
    args: tuple[str, ...]
    csv_name: str
    rows: Where
    column: str
    stat: str = "min"
    cost: float = 60.0  # the script's whole run

    def script(self) -> str:
        return f"benchmarks/{self.script_name} " + " ".join(self.args) + f" -> {self.csv_name}.csv[{self.column}]"

    def _run(self, ctx: Context) -> Path:
        key = (self.script_name, self.args)
        if key not in ctx.bench_runs:
            out = Path(tempfile.mkdtemp(prefix=self.script_name.replace(".py", "") + ".", dir=ctx.work))
            c0, t = _children_cpu(), time.perf_counter()
            r = subprocess.run([sys.executable, str(HERE / self.script_name), "--out", str(out), *self.args],
                               capture_output=True, text=True, cwd=ROOT)
            share = (_children_cpu() - c0) / max(time.perf_counter() - t, 1e-9)
            ctx.bench_runs[key] = (out, r.returncode, r.stderr, share)
        out, rc, err, _ = ctx.bench_runs[key]
        if rc != 0 and not (out / f"{self.csv_name}.csv").exists():
            raise RuntimeError(f"{self.script_name}: exit {rc}: {err.strip().splitlines()[-1:]}")
        return out

    def measure(self, ctx: Context) -> tuple[float, float, float | None]:
        """The figure (its CPU time: see :meth:`share`)."""
        lo, hi = self._figure(ctx)
        return lo, hi, None

    def share(self, ctx: Context) -> float:
        """The script's CPU seconds over its wall seconds (at most 1 for the estimate)."""
        return ctx.bench_runs[(self.script_name, self.args)][3]

    def _figure(self, ctx: Context) -> tuple[float, float]:
        out = self._run(ctx)
        with open(out / f"{self.csv_name}.csv", newline="") as fh:
            vals = [float(r[self.column]) for r in csv.DictReader(fh) if self.rows(r) and r[self.column] != ""]
        if not vals:
            raise RuntimeError(f"no row of {self.csv_name}.csv matched")
        if self.stat == "min":
            return min(vals), min(vals)
        if self.stat == "max":
            return max(vals), max(vals)
        if self.stat == "median":
            m = statistics.median(vals)
            return m, m
        if self.stat == "iqr":
            if len(vals) < 4:
                return min(vals), max(vals)
            q = statistics.quantiles(vals, n=4)
            return q[0], q[2]
        return min(vals), max(vals)


Measure = Cli | Clis | Py | Bench

# --------------------------------------------------------------------------------------------------
# The catalogue
# --------------------------------------------------------------------------------------------------

KINDS = ("measured", "history", "experiment", "limit", "data", "example", "unmeasured")


@dataclass(frozen=True)
class Timing:
    """One documented timing: where (doc, needle), what (phrase within the needle) and how to re-measure."""

    doc: str
    needle: str
    kind: str
    how: Measure | None = None
    phrase: str = ""  # the figure measured (a substring of the needle); "" = the needle's only phrase
    reason: str = ""
    note: str = ""  # conditions of the measurement, printed with it

    def figure(self) -> str:
        if self.phrase:
            return self.phrase
        found = TIME_RE.findall(self.needle)
        return found[0] if len(found) == 1 else ""

    def documented(self) -> tuple[float, float, bool] | None:
        return parse_figure(self.figure()) if self.kind == "measured" else None

    def cost(self) -> float:
        doc = self.documented()
        return max(doc[1] if doc and not doc[2] else 0.0, getattr(self.how, "cost", 0.0))


def M(doc: str, needle: str, how: Measure, phrase: str = "", note: str = "") -> Timing:
    return Timing(doc, needle, "measured", how, phrase, note=note)


def H(doc: str, needle: str, reason: str) -> Timing:
    return Timing(doc, needle, "history", reason=reason)


def X(doc: str, needle: str, reason: str) -> Timing:
    return Timing(doc, needle, "experiment", reason=reason)


def L(doc: str, needle: str, reason: str) -> Timing:
    return Timing(doc, needle, "limit", reason=reason)


def D(doc: str, needle: str, reason: str = "minutes of data, not a time of the software") -> Timing:
    return Timing(doc, needle, "data", reason=reason)


def E(doc: str, needle: str, reason: str = "an example of an output's format, not a claim about speed") -> Timing:
    return Timing(doc, needle, "example", reason=reason)


def U(doc: str, needle: str, reason: str) -> Timing:
    return Timing(doc, needle, "unmeasured", reason=reason)


R, BM, BL, CM, KS, MA, OC, RE = ("README.md", "docs/benchmarks.md", "docs/beyond_local.md", "docs/commands.md",
                                 "docs/kstate.md", "docs/mathematics.md", "docs/occupancy.md", "docs/releases.md")

_GLOBAL16 = """
from redactopt.engine.design import design
from redactopt.model.chain import MarkovChain
c = MarkovChain(0.01, 0.8)
t = time.perf_counter(); c0 = time.process_time(); design(c, {n}, eps=1.0, p={p}, method="global", time_limit=120)
result = time.perf_counter() - t; cpu = time.process_time() - c0
"""

_SGP = """
from redactopt.engine.design import design
from redactopt.model.chain import MarkovChain
c = MarkovChain(0.003, 0.012)
t = time.perf_counter(); c0 = time.process_time(); design(c, 300, eps=1.0, p=150, method="sgp")
result = time.perf_counter() - t; cpu = time.process_time() - c0
"""

_REDACT = """
import numpy as np, apply_speed as a
from redactopt.release.redactor import Redactor
from redactopt.release.plan import SequencePlan
from redactopt.release.bits import SeededBits
rng = np.random.default_rng(0); values = rng.integers(0, 2, a.CHUNK).astype(np.int8)
q = rng.uniform(0.0, 1.0, (a.CHUNK, 2)); q[q == 0.0] = 0.5
r = Redactor([SequencePlan(None, a.CHUNK, (), a._Table(q))], SeededBits(1)); a._step(r, values, 1, True)
t = time.perf_counter(); c0 = time.process_time(); a._step(r, values, 20, True)
result = 20 * a.CHUNK / (time.perf_counter() - t); cpu = 20 * a.CHUNK / (time.process_time() - c0)
"""

_DEFAULT = """
from redactopt.engine.design import design
from redactopt.model.chain import MarkovChain
c = MarkovChain(0.01, 0.8)
t = time.perf_counter(); c0 = time.process_time(); design(c, {n}, eps={eps}, p={p})
result = time.perf_counter() - t; cpu = time.process_time() - c0
"""

_SCAN = """
from redactopt.engine.class_judge import design_scan
from redactopt.model.chain import MarkovChain
c = {chain}
t = time.perf_counter(); c0 = time.process_time(); design_scan(c, {n}, eps={eps}, p={p}, time_limit=10.0)
result = time.perf_counter() - t; cpu = time.process_time() - c0
"""

_OWNER = """
from redactopt.solvers.owner_lp import class_bound
from redactopt.model.mechanism_classes import as_kchain
from redactopt.model.chain import Chain, MarkovChain
c = as_kchain({chain})
t = time.perf_counter(); c0 = time.process_time(); class_bound(c, {n}, 0, 1.0, False, None, [])
result = time.perf_counter() - t; cpu = time.process_time() - c0
"""

_K3 = "Chain([[0.5, 0.3, 0.2], [0.2, 0.6, 0.2], [0.1, 0.3, 0.6]])"

def _scale(commands: tuple[str, ...], sizes: tuple[int, ...]) -> tuple[tuple[str, ...], ...]:
    """design_scale.py's command lines: Fig. 3 chain, eps 1, the private record first, in the middle, last."""
    out = []
    for cmd in commands:
        for n in sizes:
            for p in (1, n // 2, n):
                out.append((cmd, "--n", str(n), "--eps", "1", "--private", str(p), "--alpha", "0.01", "--beta", "0.8",
                            "--out", "{tmp}/out.txt", "--force", "--quiet"))
    return tuple(out)


#: Shared benchmark runs (one run of a script serves every entry that reads it).
LEAK = ("leakage_speed.py", ())
APPLY4 = ("apply_speed.py", ("--sizes", "4000000"))
APPLY16 = ("apply_speed.py", ("--sizes", "16000000"))
FF_REL = ("fast_first.py", ("--part", "release"))
FF_K = ("fast_first.py", ("--part", "kstate"))
FF_SCAN = ("fast_first.py", ("--part", "scan"))
FF_GAP = ("fast_first.py", ("--part", "gap"))
RUNS_WALK = ("runs_speed.py", ("--part", "walk"))
RUNS_GRID = ("runs_speed.py", ("--part", "grid"))
SWEEP = ("kstate_certify_sweep.py", ())
KSPEED = ("kstate_speed.py", ())
MANY = ("many_speed.py", ())
DASK = ("dask_speed.py", ())
ATTACK = ("attack_speed.py", ())
STATES = ("states_stream.py", ())
POL_T = ("price_of_locality.py", ("--part", "targets"))
SIGNALS = ("signals.py", ("--repeat", "1"))
HTML = ("html_report.py", ())
KREL = ("kstate_release.py", ())
LEDGER = ("ledger_extend.py", ())
PROGRESS = ("progress_overhead.py", ())
STARTUP = ("startup.py", ())
RUNSCAN = ("run_scan.py", ())

_COST = {LEAK: 15, APPLY4: 150, APPLY16: 500, FF_REL: 90, FF_K: 15, FF_SCAN: 40, FF_GAP: 70,
         RUNS_WALK: 100, RUNS_GRID: 900, SWEEP: 500, KSPEED: 400, MANY: 400, DASK: 200, ATTACK: 60,
         STATES: 600, POL_T: 300, SIGNALS: 300, HTML: 90, KREL: 120, LEDGER: 90, PROGRESS: 200, STARTUP: 150,
         RUNSCAN: 900}


def B(run: tuple[str, tuple[str, ...]], csv_name: str, rows: Where, column: str, stat: str = "min") -> Bench:
    return Bench(run[0], run[1], csv_name, rows, column, stat, cost=_COST[run])


def _apply_row(fmt: str, case: str, records: str) -> Where:
    return where(benchmark=f"release {fmt}", case=case, records=records)


_APPLY_COLS = [("raw pyarrow copy", "raw copy"), ("alpha, beta given", "given"), ("alpha, beta fitted", "fitted"),
               ("alpha, beta given, keep all", "given, keep all"),
               ("alpha, beta fitted, keep all", "fitted, keep all")]
_APPLY_TABLE = {  # docs/benchmarks.md's table, row by row: (label, format, records, run, figures in column order)
    "4·10⁶ | CSV": ("csv", "4000000", APPLY4, ["0.78 s", "1.15 s", "2.34 s", "1.69 s", "2.94 s"]),
    "1.6·10⁷ | CSV": ("csv", "16000000", APPLY16, ["3.32 s", "2.09 s", "5.03 s", "3.56 s", "6.91 s"]),
    "4·10⁶ | Parquet": ("parquet", "4000000", APPLY4, ["0.39 s", "0.89 s", "2.20 s", "1.30 s", "2.57 s"]),
    "1.6·10⁷ | Parquet": ("parquet", "16000000", APPLY16, ["1.70 s", "0.99 s", "4.21 s", "2.00 s", "4.96 s"]),
}


def _apply_table() -> list[Timing]:
    """One entry per cell of docs/benchmarks.md's release table (needle: the row up to that cell)."""
    out = []
    for label, (fmt, records, run, figs) in _APPLY_TABLE.items():
        for (case, _), fig in zip(_APPLY_COLS, figs):
            out.append(M(BM, _row_prefix(label, fig), B(run, "apply_speed", _apply_row(fmt, case, records), "seconds"),
                         phrase=fig))
    return out


_TABLE_LINES = {
    "4·10⁶ | CSV": "| 4·10⁶ | CSV | 0.78 s | 1.15 s | 1.47× | 2.34 s | 3.01× | 1.69 s | 2.17× | 2.94 s | 3.77× |",
    "1.6·10⁷ | CSV": "| 1.6·10⁷ | CSV | 3.32 s | 2.09 s | 0.63× | 5.03 s | 1.52× | 3.56 s | 1.07× | 6.91 s | 2.08× |",
    "4·10⁶ | Parquet": "| 4·10⁶ | Parquet | 0.39 s | 0.89 s | 2.27× | 2.20 s | 5.62× | 1.30 s | 3.33× | 2.57 s | 6.55× |",
    "1.6·10⁷ | Parquet": "| 1.6·10⁷ | Parquet | 1.70 s | 0.99 s | 0.58× | 4.21 s | 2.47× | 2.00 s | 1.18× | 4.96 s | "
                         "2.92× |",
}


def _row_prefix(label: str, fig: str) -> str:
    """The table row up to and including the cell ``fig``."""
    line = _TABLE_LINES[label]
    return line[: line.index(f"| {fig} |") + len(f"| {fig} |")]


_W = "the walk-through release (docs/occupancy.md)"

CATALOGUE: list[Timing] = [
    # ---------------------------------------------------------------- README.md
    M(R, "What the main job prints (about 2 s on the development machine)", Cli(("design", "--n", "10", "--eps", "1"))),
    M(R, "exact leakage: 1.1·10⁷ records/s", B(LEAK, "leakage_speed", where(case="throughput", n="1000000"),
                                               "records_per_s", "max")),
    M(R, "certified global optimum at n = 16 in 0.9 s", Py(_GLOBAL16.format(n=16, p=0), cost=10)),
    M(R, "at n = 10⁸: 0.6–1.2 s and 62 MB", Clis(_scale(("design", "compare"), (10 ** 8,)), cost=40),
      note="design_scale.py's commands at n = 10⁸, the private record first, in the middle, last"),
    M(R, "at 4·10⁶ rows the designs' fixed 2.3–4.5 s", B(APPLY4, "apply_speed",
                                                         lambda r: r["records"] == "4000000" and r["design_s"] != "",
                                                         "design_s", "range")),
    M(R, "redacting at 4.5·10⁷ records/s", Py(_REDACT),
      note="apply_speed.py's redaction step, every record random (dense), seeded bits"),
    M(R, "renormalisation (≈10⁷ records/s)", B(LEAK, "leakage_speed", where(case="throughput", n="1000000"),
                                                "records_per_s", "max")),
    M(R, "gap 7·10⁻⁷ in 8–18 s on the shared 2-core machine", B(RUNSCAN, "run_scan", where(n="100"), "seconds",
                                                                 "range"), note="run_scan.py's cases at n = 100"),
    # ---------------------------------------------------------------- docs/benchmarks.md: issue 39, progress, startup
    M(BM, "**13.8 s against 10.4 s**", B(LEDGER, "ledger_extend", lambda r: True, "extension_s"), phrase="13.8 s"),
    M(BM, "**13.8 s against 10.4 s**", B(LEDGER, "ledger_extend", lambda r: True, "fresh_s"), phrase="10.4 s"),
    M(BM, "a quiet machine on 2026-12-03: 5.6 s against 3.0 s", B(LEDGER, "ledger_extend", lambda r: True,
                                                                   "extension_s"), phrase="5.6 s"),
    M(BM, "5.6 s against 3.0 s, 1.9×", B(LEDGER, "ledger_extend", lambda r: True, "fresh_s"), phrase="3.0 s"),
    H(BM, "relaxed to one record: 226 s, 40×", "before the candidates were screened exactly (issue 39)"),
    M(BM, "the default design at n = 3000 1.10 s vs 1.12 s", B(PROGRESS, "progress_overhead", where(case="design n=3000"),
                                                                "unwatched_s"), phrase="1.10 s"),
    M(BM, "the default design at n = 3000 1.10 s vs 1.12 s", B(PROGRESS, "progress_overhead", where(case="design n=3000"),
                                                                "with_bars_s"), phrase="1.12 s"),
    M(BM, "(its event handler at work) 5.42 s vs 5.64 s", B(PROGRESS, "progress_overhead",
                                                            where(case="design global n=120"), "unwatched_s"),
      phrase="5.42 s"),
    M(BM, "(its event handler at work) 5.42 s vs 5.64 s", B(PROGRESS, "progress_overhead",
                                                            where(case="design global n=120"), "with_bars_s"),
      phrase="5.64 s"),
    M(BM, "a release of 3,000 rows 0.70 s vs 0.68 s", B(PROGRESS, "progress_overhead", where(case="apply 3000 rows"),
                                                        "unwatched_s"), phrase="0.70 s"),
    M(BM, "a release of 3,000 rows 0.70 s vs 0.68 s", B(PROGRESS, "progress_overhead", where(case="apply 3000 rows"),
                                                        "with_bars_s"), phrase="0.68 s"),
    M(BM, "varied more from run to run (32–43 s)", B(PROGRESS, "progress_overhead", where(case="class scan n=300"),
                                                     "with_bars_s")),
    M(BM, "(≤ 10⁻⁴ records) in 9–21 s", B(RUNSCAN, "run_scan", where(n="100"), "seconds", "range")),
    M(BM, "gaps 0.49–6.4 records in 95–98 s", B(RUNSCAN, "run_scan", where(n="1000"), "seconds", "range")),
    M(BM, "gaps 4.2 / 2.0 records in 106 s", B(RUNSCAN, "run_scan", where(n="2880"), "seconds")),
    M(BM, "a side's linear program takes 0.6–0.9 s (windows of 470–568",
      B(RUNSCAN, "run_scan", lambda r: r["n"] != "100", "s_per_program", "range")),
    H(BM, "`import redactopt.interface.cli` 0.78 s →", "startup.py's before: the commit 025b192"),
    U(BM, "→ 0.79 s (×1.006)", "startup.py measures the import in µs (-X importtime), not in wall seconds"),
    H(BM, "`python -m redactopt --version` 0.956 s →", "startup.py's before: the commit 025b192"),
    M(BM, "→ 0.965 s (×1.009)", B(STARTUP, "startup", where(case="python -m redactopt --version (s)"), "after_median")),
    H(BM, "`redactopt design --n 10 --eps 1` 3.14 s →", "startup.py's before: the commit 025b192"),
    M(BM, "→ 3.20 s (×1.021", B(STARTUP, "startup", where(case="python -m redactopt design --n 10 --eps 1 (s)"),
                                 "after_median")),
    # ---------------------------------------------------------------- docs/benchmarks.md: fast first (issue 37)
    D(BM, "6 homes × 2,880 minutes of a slowly mixing", "the table's length in minutes of data"),
    H(BM, "took **1,888 s** with the default method before", "the default method before issue 37's fast first"),
    M(BM, "against 2.2 s for `--method dim`", B(FF_REL, "fast_first_release", where(table="6 homes", method="dim"),
                                                "seconds")),
    H(BM, "**832 s and 3.1 GB**", "one home with the default method before issue 37's fast first"),
    M(BM, "**6 homes 3.1 s, 171 MB;", B(FF_REL, "fast_first_release", where(table="6 homes", method="default"),
                                       "seconds")),
    M(BM, "one home 1.6 s, 173 MB**", B(FF_REL, "fast_first_release", where(table="one home", method="default"),
                                       "seconds")),
    M(BM, "(here the window again): 23.2 s (one home", B(FF_REL, "fast_first_release",
                                                          where(table="one home", method="optimal, --time-limit 20"),
                                                          "seconds")),
    M(BM, "and 26.5 s (6 homes, 283 MB; its design phase 23 s with `--workers 1`, about 2 s over 1.1 T + 1",
      B(FF_REL, "fast_first_release", where(table="6 homes", method="optimal, --time-limit 20"), "seconds"),
      phrase="26.5 s"),
    M(BM, "and 26.5 s (6 homes, 283 MB; its design phase 23 s with `--workers 1`, about 2 s over 1.1 T + 1",
      Cli(("apply", "{meter}", "--protect", "occupied,power_w", "--bin", "power_w:100,300", "--by", "home",
           "--private-column", "optout", "--eps", "1", "--order-by", "ts", "--seed", "1", "--quiet", "--force",
           "--method", "optimal", "--time-limit", "20", "--workers", "1", "--out", "{tmp}/o.csv"), cost=30),
      phrase="23 s", note="the whole release with --workers 1 (the doc's figure is its design phase)"),
    M(BM, "to 1.95·10⁻⁷ in 3.1 s", B(FF_K, "fast_first_kstate", where(run="default"), "seconds")),
    M(BM, "(`--certify-time 30`: the same in 2.1 s)", B(FF_K, "fast_first_kstate", where(run="--certify-time 30"),
                                                        "seconds")),
    H(BM, "--time-limit 10` ran 350 s (gap 0.011)", "before issue 37's time limits (the issue's report)"),
    M(BM, "it now ends in 10.1 s (gap 0.0062)", B(FF_SCAN, "fast_first_scan", where(n="2880"), "seconds")),
    M(BM, "n = 300 in 9.3 s (0.0082)", B(FF_SCAN, "fast_first_scan", where(n="300"), "seconds")),
    M(BM, "n = 600 in 9.1 s (0.020)", B(FF_SCAN, "fast_first_scan", where(n="600"), "seconds")),
    L(BM, "a certified gap ≤ 10⁻⁶ in ≤ 10 s for slowly mixing chains", "issue 37's target"),
    M(BM, "`--time-limit 10` (wall 10.1–10.9 s)", B(FF_GAP, "fast_first_gap", lambda r: True, "seconds", "range")),
    X(BM, "Given 120 s the last one at n = 2,880 reaches 0.0019",
      "a one-off run with --time-limit 120 (a longer limit than the benchmark's), not in fast_first.py"),
    U(BM, "windows of 150–600 records on these chains (0.3–5 s per solve)",
      "the time of one bound LP inside the scan search, not timed separately by any shipped script"),
    # ---------------------------------------------------------------- docs/benchmarks.md: runs (issue 34)
    L(BM, "every design verified; 143 in ≤ 10 s", "issue 34's target of 10 s per case"),
    M(BM, "the four misses the occupancy chain at n = 200 (11–24 s under load",
      B(RUNS_GRID, "runs_grid", lambda r: r["n"] == "200" and float(r["seconds"]) > 10.0, "seconds", "range"),
      note="the cases of runs_grid over 10 s"),
    M(BM, "at 366 MB, in 15.1 s (load", B(RUNS_WALK, "runs_walk", where(method="optimal"), "seconds")),
    H(BM, "1.1–1.4; 65 s before, when", "the walk-through's optimal release before its zone rule used auto's designs"),
    L(BM, "— within the 30 s target;", "issue 34's target"),
    M(BM, "(within 0.04 records of optimal; bound 457.96) in 11.1 s", B(RUNS_WALK, "runs_walk", where(method="auto"),
                                                                     "seconds")),
    # ---------------------------------------------------------------- docs/benchmarks.md: design
    M(BM, "exact leakage: 10⁶ records in 88 ms", B(LEAK, "leakage_speed", where(case="throughput", n="1000000"),
                                                  "exact_s")),
    M(BM, "(1.1·10⁷ records/s); 156× faster", B(LEAK, "leakage_speed", where(case="throughput", n="1000000"),
                                               "records_per_s", "max")),
    M(BM, "certified global optimum: n = 10 in 0.7 s", Py(_GLOBAL16.format(n=10, p=0))),
    M(BM, "n = 16 in 0.9 s (gap < 10⁻⁶;", Py(_GLOBAL16.format(n=16, p=0))),
    H(BM, "2.0 s and 1.9 s in `results/design_speed.md`", "design_speed.py's committed run (2026-12-01)"),
    M(BM, "two-sided n = 7 in 7.4 s", Py(_GLOBAL16.format(n=7, p=3), cost=15)),
    M(BM, "at ε = 1: 300-record window in 2.7 s", Py(_SGP)),
    M(BM, "`design` (with its comparison lines) takes 0.61–1.16 s",
      Clis(_scale(("design",), (10 ** 7, 10 ** 8)), cost=40), note="design_scale.py's commands"),
    M(BM, "and `compare` 0.61–0.88 s at n = 10⁷", Clis(_scale(("compare",), (10 ** 7, 10 ** 8)), cost=40),
      note="design_scale.py's commands"),
    M(BM, "their time at n = 10⁴ (0.59–1.28 s)", Clis(_scale(("design", "compare"), (10 ** 4,)), cost=40),
      note="design_scale.py's commands"),
    H(BM, "500000` 10.5 s and 968 MB, `compare` the same 8.7 s and 968 MB; n = 10⁷ 103 s and 15.4 GB",
      "before issue 24's sparse design"),
    M(BM, "the side-frontier optimum there takes about 25 s and 1.1 GB",
      Cli(("design", "--n", "10000", "--eps", "1", "--private", "5000", "--alpha", "0.003", "--beta", "0.012",
           "--out", "{tmp}/out.txt", "--force", "--quiet"), cost=30),
      note="design_scale.py --occupancy's case at n = 10⁴, the record in the middle"),
    H(R, "re-measured on 2026-12-03 — 0.8–1.5 s and", "apply_speed.py's committed run (2026-12-01)"),
    M(BM, "redaction step: 4.5·10⁷ records/s", Py(_REDACT),
      note="apply_speed.py's redaction step, every record random (dense), seeded bits"),
    # ---------------------------------------------------------------- docs/benchmarks.md: releases
    *_apply_table(),
    M(BM, "(CSV given 2.85 s,", B(APPLY4, "apply_speed", _apply_row("csv", "alpha, beta given", "4000000"), "seconds")),
    M(BM, "Parquet given 2.62 s, of which", B(APPLY4, "apply_speed",
                                             _apply_row("parquet", "alpha, beta given", "4000000"), "seconds")),
    M(BM, "of which the designs 2.3–4.5 s,", B(APPLY4, "apply_speed",
                                               lambda r: r["records"] == "4000000" and r["design_s"] != "",
                                               "design_s", "range")),
    H(BM, "against 0.8–1.5 s here)", "the table's run (2026-12-01)"),
    M(BM, "(CSV 1.04 s)", B(APPLY4, "apply_speed", _apply_row("csv", "raw pyarrow copy", "4000000"), "seconds")),
    M(BM, "the designs take 0.84–0.92 s with the chain given",
      B(APPLY4, "apply_speed", lambda r: r["records"] == "4000000" and "given" in r["case"], "design_s", "range")),
    M(BM, "and 1.48–1.54 s fitted (the fit zone",
      B(APPLY4, "apply_speed", lambda r: r["records"] == "4000000" and "fitted" in r["case"], "design_s", "range")),
    M(BM, "against a raw copy that ran in 0.39–0.78 s today",
      B(APPLY4, "apply_speed", where(records="4000000", case="raw pyarrow copy"), "seconds", "range")),
    H(BM, "(0.86–1.86 s on 2026-11-30, when these targets were met", "the raw copy's time on an earlier date"),
    M(BM, "CSV given 2.82–2.92 s against", B(APPLY4, "apply_speed", _apply_row("csv", "alpha, beta given", "4000000"),
                                            "seconds"), phrase="2.82–2.92 s",
      note="the same release as the table's (apply_speed.py)"),
    X(BM, "against 2.54–2.63 s without it", "the A/B's other side: the check switched off by patching the code"),
    M(BM, "CSV fitted 5.48–5.74 s against", B(APPLY4, "apply_speed",
                                             _apply_row("csv", "alpha, beta fitted", "4000000"), "seconds"),
      phrase="5.48–5.74 s"),
    X(BM, "against 5.00–5.73 s, Parquet", "the A/B's other side: the check switched off by patching the code"),
    M(BM, "Parquet given 2.41–3.32 s against", B(APPLY4, "apply_speed",
                                                _apply_row("parquet", "alpha, beta given", "4000000"), "seconds"),
      phrase="2.41–3.32 s"),
    X(BM, "against 1.75–2.16 s, Parquet fitted", "the A/B's other side: the check switched off by patching the code"),
    M(BM, "Parquet fitted 5.50–6.89 s against", B(APPLY4, "apply_speed",
                                                 _apply_row("parquet", "alpha, beta fitted", "4000000"), "seconds"),
      phrase="5.50–6.89 s"),
    X(BM, "against 4.71–5.63 s — about 0.3 s (CSV) and 0.5–0.7 s (Parquet",
      "the A/B's other side and the differences: the check switched off by patching the code"),
    M(BM, "Most of a release at 4·10⁶ rows is the design: 0.8–1.5 s",
      B(APPLY4, "apply_speed", lambda r: r["records"] == "4000000" and r["design_s"] != "", "design_s", "range")),
    H(BM, "It was 2–3 s earlier in this issue", "the design time earlier in issue 15"),
    H(BM, "(4·10⁶ rows: CSV 15.5 s, Parquet 8.4 s)", "before issue 15"),
    M(BM, "at 10⁶ rows 1.5–1.9 s and 558 MB", B(STATES, "states_stream",
                                               lambda r: r["rows"] == "1000000" and "one column" in r["case"],
                                               "after s", "range")),
    H(BM, "against 5.8–8.8 s and 1.3–1.4 GB", "the commit that read the table into pandas (states_stream.py's before)"),
    M(BM, "at 10⁷ rows 5.2 s (CSV to CSV", B(STATES, "states_stream",
                                            where(rows="10000000", case="one column, CSV -> CSV (keep all)"),
                                            "after s")),
    M(BM, "and 8.5 s (CSV to Parquet)", B(STATES, "states_stream", where(rows="10000000",
                                                                        case="one column, CSV -> Parquet"),
                                         "after s")),
    H(BM, "against 62–97 s at 11.4 GB", "the commit that read the table into pandas (states_stream.py's before)"),
    M(BM, "at 10⁶ rows: 4.3 s against", B(STATES, "states_stream",
                                          lambda r: r["rows"] == "1000000" and "together" in r["case"], "after s"),
      phrase="4.3 s"),
    H(BM, "against 7.5 s. *", "the commit that read the table into pandas (states_stream.py's before)"),
    M(BM, "samples the 298 records of its segment: about 15 s",
      Cli(("audit", "{walk}", "--attack", "--samples", "200000"), cost=40),
      note="on the report of the README's walk-through release"),
    M(BM, "(7 minutes on 2026-12-03,", B(ATTACK, "attack_speed", lambda r: "projected" in r["case"], "seconds")),
    H(BM, "13–22 minutes before, projected", "attack_speed.py's earlier runs"),
    H(BM, "about 9 hours before issue 15", "before issue 15"),
    M(BM, "(10⁶ rows, CSV) 6.7 s with the default workers",
      B(MANY, "many_speed", where(case="csv (issue command)", workers="all"), "seconds_best")),
    M(BM, "and 4.7–5.4 s with `--workers 1`", B(MANY, "many_speed", where(case="csv (issue command)", workers="1"),
                                               "seconds_best")),
    H(BM, "794 s before issue 16; target ≤ 10 s", "before issue 16 (and issue 16's target)"),
    M(BM, "(5·10⁶ rows, Parquet) 7.5–8.2 s", B(MANY, "many_speed", where(case="parquet", sequences="10000"),
                                              "seconds_best")),
    M(BM, "(5·10⁷ rows) 38.7–40.8 s (target ≤ 5 min)",
      B(MANY, "many_speed", where(case="parquet", sequences="100000"), "seconds_best"), phrase="38.7–40.8 s"),
    L(BM, "(5·10⁷ rows) 38.7–40.8 s (target ≤ 5 min)", "issue 16's target"),
    M(BM, "on a `LocalCluster` of 2 worker processes: 49.8–59.4 s",
      B(MANY, "many_speed", lambda r: r["case"].startswith("dask"), "seconds_best")),
    M(BM, "in each): 14.7 s and 31.1 s against 20.5 s and 35.3 s for the in-memory path",
      B(DASK, "dask_speed", lambda r: r["backend"].startswith("dask"), "seconds"), phrase="14.7 s",
      note="dask_speed.py's default case; the doc's second figure (31.1 s) has no case in the script"),
    M(BM, "in each): 14.7 s and 31.1 s against 20.5 s and 35.3 s for the in-memory path",
      B(DASK, "dask_speed", lambda r: r["backend"].startswith("in-memory"), "seconds"), phrase="20.5 s"),
    # ---------------------------------------------------------------- docs/beyond_local.md
    H(BL, "stalled: 1 717 boxes and 6 s for the Fig. 3 chain", "the monotone bound alone, before the interpolated one"),
    M(BL, "against 123 boxes and 0.4 s", Py(_SCAN.format(chain="MarkovChain(0.01, 0.8)", n=10, eps=1.0, p=4)),
      note="design_scan at n = 10, p = 5 (1-based), eps 1 (price_of_locality.py's call)"),
    L(BL, "this took the gap after 10 s from 1.6·10⁻⁴", "the time limit of the comparison"),
    H(BL, "(2.3·10⁻⁴ after 10 s)", "the axis-parallel search before the rotated boxes"),
    X(BL, "axis-parallel 2 s, rotated not closed in 8 s", "each search run alone (an internal switch, not shipped)"),
    M(BL, "binary n = 8 owner has 16 384 and solves in 0.1 s", Py(_OWNER.format(chain="MarkovChain(0.01, 0.8)", n=8)),
      phrase="0.1 s", note="the owner LP on all n records (class_bound), Fig. 3 chain, p = 1, eps 1"),
    M(BL, "n = 10 in 3 s; k = 3, n = 7 in 0.5 s", Py(_OWNER.format(chain="MarkovChain(0.01, 0.8)", n=10), cost=15),
      phrase="3 s", note="the owner LP on all n records (class_bound), Fig. 3 chain, p = 1, eps 1"),
    M(BL, "n = 10 in 3 s; k = 3, n = 7 in 0.5 s", Py(_OWNER.format(chain=_K3, n=7)),
      phrase="0.5 s", note="the owner LP on all n records (class_bound), a k = 3 chain of the tests, p = 1, eps 1"),
    U(BL, "solves in 7 s instead of not in 60", "the instance (a k = 3 chain with a 10⁻⁶ transition) is not pinned "
      "down by the doc; tests/test_class_edges.py holds such cases with generous limits"),
    L(BL, "all 24 within 10⁻⁶ in ≤ 10 s", "issue 26's target"),
    M(BL, "in ≤ 10 s, 0.2–5.9 s (the machine", B(POL_T, "price_of_locality_targets",
                                                lambda r: r["case"] == "scan" and r["p"] != "1", "seconds", "range"),
      phrase="0.2–5.9 s"),
    M(BL, "took 4.3, 5.9 and 3.9 s for n = 100, 10³, 10⁴",
      B(POL_T, "price_of_locality_targets", lambda r: r["case"] == "scan" and r["p"] != "1" and r["alpha"] == "0.05"
        and r["beta"] == "0.05" and r["n"] != "10", "seconds", "range"), phrase="3.9 s",
      note="the three figures as a range (3.9–5.9 s)"),
    H(BL, "the axis-parallel search had stopped at 10 s", "the axis-parallel search before the rotated boxes"),
    U(BL, "3.2 → 1.6 ms", "one bound LP inside the scan search (before → after), not timed by a shipped script"),
    M(BL, "is now the slowest (5.5 s at n = 100", B(POL_T, "price_of_locality_targets",
                                                   lambda r: r["case"] == "scan" and r["p"] != "1" and r["n"] == "100"
                                                   and r["alpha"] == "0.7" and r["beta"] == "0.9", "seconds")),
    # ---------------------------------------------------------------- docs/commands.md
    H(CM, "until they return (10 s and more were measured)", "why the supervisor exists: the handlers' delay without it"),
    M(CM, "3 runs each): 0.02–0.5 s where the command stops itself",
      B(SIGNALS, "signals", lambda r: r["supervisor"] == "yes" and float(r["median_s"]) < 1.0, "max_s", "range"),
      note="signals.py --repeat 1 (the doc: 3 runs each)"),
    M(CM, "1.03–1.21 s where a compiled call held it",
      B(SIGNALS, "signals", lambda r: r["supervisor"] == "yes" and float(r["median_s"]) >= 1.0, "max_s", "range")),
    L(CM, "the categorical release signalled after 60 s of CPU", "when the benchmark sends the signal"),
    H(CM, "against 119 s and 6–22 s for the same two without the supervisor",
      "without the supervisor (REDACTOPT_NO_SUPERVISOR=1, the behaviour before it): signals.py --baseline"),
    M(CM, "--eps 1 --private 50000000` takes about 1.5 s and 62 MB",
      Cli(("design", "--n", "100000000", "--eps", "1", "--private", "50000000"))),
    H(CM, "(15.4 GB and 103 s at n = 10⁷ before", "before issue 24's sparse design"),
    M(CM, "(gap 5.1e-5) in about 2 s", Py(_DEFAULT.format(n=10, p=4, eps=0.5)),
      note="design() with its defaults at n = 10, p = 5, eps 0.5 (optimum_speed.py's case)"),
    L(CM, "— 60 s of SCIP reach 0.5617", "SCIP given a 60 s limit"),
    L(CM, "gap 6.2e-4 within the default 60 s", "the default --time-limit"),
    L(CM, "more states: n ≤ 8 either side, 10 s at most", "SCIP's default share in `optimal`"),
    M(CM, "to 2·10⁻⁷ by default, in about 2 s", B(FF_K, "fast_first_kstate", where(run="default"), "seconds")),
    M(CM, "200 000 samples on the walk-through's 8143-record mechanism take about 15 s",
      Cli(("audit", "{walk}", "--attack", "--samples", "200000"), cost=40)),
    H(CM, "instead of about 9 hours", "sampling every record, before issue 15"),
    L(CM, "than `--time-limit` (default 600 s)", "the default --time-limit of audit --attack"),
    M(CM, "9.1·10⁻⁴ at the nominal chain, in about 7 s",
      Cli(("design", "--n", "10", "--eps", "1", "--alpha", "0.005:0.02", "--beta", "0.6:0.9"))),
    M(CM, "other work running, about 140 s against 24 s",
      Cli(("apply", "{data}", "--column", "Occupancy", "--private", "1120-1179", "--eps", "1", "--seed", "2015",
           "--robust", "0.95", "--quiet", "--out", "robust.csv", "--report", "robust.json"), cost=150),
      phrase="140 s"),
    M(CM, "other work running, about 140 s against 24 s",
      Cli(("apply", "{data}", "--column", "Occupancy", "--private", "1120-1179", "--eps", "1", "--seed", "2015",
           "--quiet", "--out", "released.csv", "--report", "report.json"), cost=30), phrase="24 s"),
    L(CM, "(measured within 10 % + 1 s:", "the time limit's tolerance (benchmarks/class_time_limits.py measures it)"),
    M(CM, "holder 0.887 (about 10 s for all four)",
      Cli(("compare", "--class", "local,scan,owner,holder", "--n", "10", "--eps", "0.5"), cost=20)),
    M(CM, "The full run takes 9 min 47 s on the 2-core", Cli(("bench", "--out-dir", "{tmp}/bench"), cost=600),
      phrase="9 min 47 s"),
    U(CM, "(gap table 494 s, audit 64 s)", "parts of the full bench run, printed by it but not timed apart here"),
    M(CM, "`--quick` about 50 s.", Cli(("bench", "--quick", "--out-dir", "{tmp}/bench"), cost=150)),
    L(CM, "each in under 10 s). `best_diagonal`", "the gap table's per-row bound"),
    L(CM, "k = 3, n = 8 problems certify within 30 s on all 40", "issue 17's target"),
    M(CM, "chains measured, mostly in 0.2–1.2 s;", B(SWEEP, "kstate_certify_sweep", lambda r: True, "seconds", "iqr"),
      note="the quartiles of the 80 problems"),
    M(CM, "is released in 2.3 s with `--workers 1`", B(KREL, "kstate_release", where(rows="1000000", workers="1"),
                                                       "seconds")),
    M(CM, "and 2.3 s with both cores", B(KREL, "kstate_release", where(rows="1000000", workers="every core"),
                                         "seconds")),
    H(CM, "20 s and 13 s on 2026-12-01", "kstate_release.py's committed run (2026-12-01)"),
    M(CM, "(2–3·10⁶ records/s at k = 4", B(KSPEED, "kstate_speed",
                                           lambda r: r["case"].startswith("leakage throughput") and r["n"] == "1000000",
                                           "records_per_s", "range")),
    E(CM, "`redactopt design: 9.25 s (local 1.69 s, scan 6.85 s)`"),
    E(CM, "`redactopt apply: 22.4 s (read 0.029 s, fit 0.019 s, design 21.6 s, check 0.0026 s, write 0.0308 s, draw "
      "0.000382 s, report 0.00911 s)`"),
    M(CM, "it closes to 7·10⁻⁷ in 9–21 s", B(RUNSCAN, "run_scan", where(n="100"), "seconds", "range")),
    # ---------------------------------------------------------------- docs/kstate.md
    L(KS, "k = 3, n = 8, p = 1 problems within 30 s.", "issue 17's target"),
    L(KS, "| within 30 s, gap closed |", "issue 17's target"),
    M(KS, "| one-sided | 20 / 20 | 0.6 s |", B(SWEEP, "kstate_certify_sweep_summary",
                                             where(family="random", side="one-sided (p=0)"), "median_s"),
      phrase="0.6 s"),
    M(KS, "| one-sided | 20 / 20 | 0.6 s | 0.8 s |", B(SWEEP, "kstate_certify_sweep_summary",
                                                      where(family="random", side="one-sided (p=0)"), "slowest_s"),
      phrase="0.8 s"),
    M(KS, "| two-sided | 20 / 20 | 0.3 s |", B(SWEEP, "kstate_certify_sweep_summary",
                                             where(family="random", side="two-sided (p=1)"), "median_s"),
      phrase="0.3 s"),
    M(KS, "| two-sided | 20 / 20 | 0.3 s | 2.8 s |", B(SWEEP, "kstate_certify_sweep_summary",
                                                      where(family="random", side="two-sided (p=1)"), "slowest_s"),
      phrase="2.8 s"),
    M(KS, "| one-sided | 18 / 20 | 0.9 s |", B(SWEEP, "kstate_certify_sweep_summary",
                                             where(family="sticky", side="one-sided (p=0)"), "median_s"),
      phrase="0.9 s"),
    L(KS, "| 18 / 20 | 0.9 s | 60 s (stopped) |", "the slowest case stopped by certify_time=60"),
    M(KS, "| two-sided | 17 / 20 | 0.4 s |", B(SWEEP, "kstate_certify_sweep_summary",
                                             where(family="sticky", side="two-sided (p=1)"), "median_s"),
      phrase="0.4 s"),
    L(KS, "| 17 / 20 | 0.4 s | 60 s (stopped) |", "the slowest case stopped by certify_time=60"),
    L(KS, "So 75 of the 80 problems certify within 30 s", "issue 17's target"),
    H(KS, "seed 7 one-sided in 34 s and seed 20 two-sided in 51 s", "the sweep's run before (2026-12-01)"),
    M(KS, "51 s, now 17 s each", B(SWEEP, "kstate_certify_sweep", where(family="sticky", side="one-sided (p=0)",
                                                                      seed="7"), "seconds"), phrase="17 s",
      note="seed 7 one-sided"),
    M(KS, "now 17 s each)", B(SWEEP, "kstate_certify_sweep", where(family="sticky", side="two-sided (p=1)",
                                                                 seed="20"), "seconds"),
      note="seed 20 two-sided"),
    L(KS, "The five that do not stop at 60 s", "certify_time=60"),
    U(KS, "`redactopt.solvers.klocal.propose_kmultistart`, about 3 s here",
      "one step inside kdesign(..., method='optimal'), not timed apart by a shipped script"),
    L(KS, "0.551 after 30 s and 0.527 after 300 s", "SCIP's bound after given times"),
    L(KS, "(gap 0.034 at 60 s)", "certify_time=60"),
    X(KS, "does *not* close it in 30 s (none of it is shipped)", "experiments, not shipped"),
    X(KS, "root bound 0.621, 0.537 after 120 s of branching", "an experiment, not shipped"),
    X(KS, "(0.584 after 60 s)", "an experiment, not shipped"),
    X(KS, "proves 0.505248 optimal in 11 s; from distance 6 on the optimum is 0.497852 (8.5 s), from distance 7 on "
      "0.490456 (22 s)", "SCIP on restricted classes; the scripts are not shipped"),
    X(KS, "0.5448 after 40 s and 0.5170 after 1500 s", "SCIP on one class; the scripts are not shipped"),
    X(KS, "bound 0.5289 after 60 s", "SCIP on a fixed skeleton; the scripts are not shipped"),
    X(KS, "certifies seed 7 in 29.9 s against 27.8 s for one core", "SCIP's concurrent solve; not shipped"),
    X(KS, "saves a quarter on seed 7 (21 s of SCIP) but costs more elsewhere (86 s on seed 20",
      "a split search; not shipped"),
    M(KS, "sticky chains of seeds 1 and 4 close in 0.5–2.3 s",
      B(KSPEED, "kstate_speed", lambda r: "two-sided" in r["case"] and ("mild" in r["case"] or "seed 1," in r["case"]
                                                                        or "seed 4," in r["case"]), "best_s",
        "range")),
    H(KS, "(3–6 s on 2026-11-30)", "an earlier run of kstate_speed.py"),
    L(KS, "and 0.060 (ε = 1) after 60 s", "certify_time=60"),
    X(KS, "n = 5 closes in 8.5 s (utility 0.372466)", "SCIP on shorter horizons; the scripts are not shipped"),
    X(KS, "n = 7 at gap 0.023 after 60 s", "SCIP on shorter horizons; the scripts are not shipped"),
    X(KS, "(0.623 after 30 s, worse)", "a model variant; not shipped"),
    D(KS, "here the 7221 minutes more than 431 minutes from"),
    D(KS, "≈ 506 minutes on average", "a level's mean stay in minutes of data"),
    D(KS, "block grows to 894 minutes"),
    D(KS, "fits its chain on the 4894 minutes"),
    D(KS, "a zone of 512 minutes around each weekday"),
    D(KS, "1884 minutes in all"),
    # ---------------------------------------------------------------- docs/mathematics.md
    M(MA, "over millions of records (about 10⁷ records/s)", B(LEAK, "leakage_speed",
                                                               where(case="throughput", n="1000000"),
                                                               "records_per_s", "max")),
    M(MA, "About 2–3·10⁶ records/s at k = 4", B(KSPEED, "kstate_speed",
                                               lambda r: r["case"].startswith("leakage throughput")
                                               and r["n"] == "1000000", "records_per_s", "range")),
    L(MA, "closes within 30 s on 75 of 80", "issue 17's target"),
    M(MA, "seeded chains, mostly in 0.2–1.2 s", B(SWEEP, "kstate_certify_sweep", lambda r: True, "seconds", "iqr"),
      note="the quartiles of the 80 problems"),
    L(MA, "0.029–0.051 after 60 s on the hardest", "certify_time=60"),
    L(MA, "`optimal` runs SCIP by default (10 s)", "SCIP's default share in `optimal`"),
    M(MA, "at n = 1,440 and 10⁴ in 0.2–5.9 s", Py("""
import numpy as np, varying_chain as v
rng = np.random.default_rng(33); v._leakage_rows(rng, False)  # the script's random stream, up to its designs
t = time.perf_counter(); c0 = time.process_time(); rows = v._design_rows(rng, False)
s = [r["seconds"] for r in rows if r["case"] in ("design two-sided", "design one-sided")]
result = [min(s), max(s)]; cpu = None
""", cost=60, runs=1), note="varying_chain.py's one- and two-sided designs (its own functions: the script "
      "itself stops at its occupancy part on this commit)"),
    # ---------------------------------------------------------------- docs/occupancy.md
    D(OC, "redacting those 60 minutes alone"),
    D(OC, "1/α ≈ 5.3 h (empty) or 1/β ≈ 1.4 h (occupied)", "the mean stays of the data's states"),
    D(OC, "the 7571 rows more than 256 minutes from"),
    D(OC, "16:09 on 2015-02-05 (380 minutes)"),
    D(OC, "the 60 minutes as one *run*"),
    D(OC, "0.953334 (380 minutes redacted"),
    D(OC, "(the run's window, 388 minutes a side)"),
    M(OC, "| design time | 10–30 s", Cli(("apply", "{data}", "--column", "Occupancy", "--private", "1120-1179", "--eps",
                                         "1", "--seed", "2015", "--quiet", "--out", "released.csv", "--report",
                                         "report.json"), cost=30),
      note="the whole release (the design is most of it)"),
    D(OC, "a published minute 60 minutes away"),
    D(OC, "saves 50 minutes at ε = 1"),
    M(OC, "cuts the chain, which is exact by the Markov property): about 2 s",
      Cli(("audit", "{walk}", "--attack", "--samples", "20000"))),
    D(OC, "the 7059 rows more than 512 minutes"),
    # ---------------------------------------------------------------- docs/releases.md
    L(RE, "`--time-limit T` (default 60 s;", "the default --time-limit"),
    D(RE, "6 homes × 2,880 minutes with two"),
    U(RE, "whose frontier tables take ~8 s on the occupancy", "a phase inside the class release, not timed apart by "
      "a shipped script"),
    M(RE, "`--class scan --time-limit 10` there spends ~25 s", Cli(
        ("apply", "{data}", "--column", "Occupancy", "--private", "1120-1179", "--eps", "1", "--seed", "2015",
         "--class", "scan", "--time-limit", "10", "--quiet", "--out", "released.csv", "--report", "report.json"),
        cost=30)),
    L(RE, "(a relaxation; the side frontier, 2 s, else Lemma 2)", "the side frontier's time budget there"),
    H(RE, "the default took 1,888 s and now", "the default method before issue 37's fast first"),
    M(RE, "Apart from the design (2–4 s for the benchmark's 62 private records",
      B(APPLY4, "apply_speed", lambda r: r["records"] == "4000000" and r["design_s"] != "", "design_s", "range")),
    M(RE, "in the middle: 0.2 s, 30 MB)", Py("""
from redactopt.engine.joint import design_joint_sparse
from redactopt.model.chain import MarkovChain
c = MarkovChain(0.01, 0.8); n = 10**8
t = time.perf_counter(); c0 = time.process_time(); design_joint_sparse(c, n, eps=1.0, private=[0, n // 2, n - 1])
result = time.perf_counter() - t; cpu = time.process_time() - c0
"""), note="design_joint_sparse on the Fig. 3 chain, private records first, middle, last, eps 1"),
    M(RE, "The redaction step runs at 4.5·10⁷ records/s", Py(_REDACT),
      note="apply_speed.py's redaction step, every record random (dense), seeded bits"),
    D(RE, "3 opt-out windows of 11 minutes", "the test table's opt-out windows in minutes of data"),
    M(RE, "usable at 10⁵ sequences: 1.2 MB, rendered in 0.3 s", B(HTML, "html_report",
                                                                  lambda r: r["case"].startswith("--by: 100,000"),
                                                                  "render_median_s")),
    M(RE, "weighs 154 KB and renders in 0.2 s", B(HTML, "html_report", where(case="walk-through"),
                                                  "render_median_s")),
    M(RE, "(CSV, the command above) take 5–7 s end to end",
      B(MANY, "many_speed", where(case="csv (issue command)"), "seconds_best", "range")),
    H(RE, "end to end instead of 794 s", "before issue 16"),
    M(RE, "(5·10⁷ rows, Parquet) about 40 s", B(MANY, "many_speed", where(case="parquet", sequences="100000"),
                                               "seconds_best")),
    D(RE, "fitted on the 7571 rows more than 256 minutes"),
    D(RE, "Designing for the 60 minutes jointly"),
]


# --------------------------------------------------------------------------------------------------
# --check
# --------------------------------------------------------------------------------------------------


def check(texts: dict[str, str], catalogue: list[Timing] = CATALOGUE) -> list[str]:
    """Problems between the docs and the catalogue (empty: they agree)."""
    problems: list[str] = []
    spans: dict[str, list[tuple[int, int]]] = {d: [] for d in texts}
    for e in catalogue:
        if e.kind not in KINDS:
            problems.append(f"{e.doc}: {e.needle!r}: unknown kind {e.kind!r}")
        if e.doc not in texts:
            problems.append(f"{e.doc}: no such doc (catalogue entry {e.needle!r})")
            continue
        text = texts[e.doc]
        at = text.find(e.needle)
        if at < 0:
            problems.append(f"{e.doc}: stale catalogue entry, needle not found: {e.needle!r}")
            continue
        if text.find(e.needle, at + 1) >= 0:
            problems.append(f"{e.doc}: needle found more than once: {e.needle!r}")
        spans[e.doc].append((at, at + len(e.needle)))
        if not TIME_RE.search(e.needle):
            problems.append(f"{e.doc}: needle holds no timing phrase: {e.needle!r}")
        if e.kind == "measured":
            fig = e.figure()
            if not fig or fig not in e.needle or not TIME_RE.fullmatch(fig) and not re.fullmatch(r"\d+ min \d+ s", fig):
                problems.append(f"{e.doc}: measured entry without one timing phrase in its needle: {e.needle!r}")
            if e.how is None:
                problems.append(f"{e.doc}: measured entry without a measure: {e.needle!r}")
        elif not e.reason:
            problems.append(f"{e.doc}: {e.kind} entry without a reason: {e.needle!r}")
    for doc, text in texts.items():
        for m in TIME_RE.finditer(text):
            if not any(a <= m.start() and m.end() <= b for a, b in spans[doc]):
                ctx = text[max(0, m.start() - 40): m.end() + 20]
                problems.append(f"{doc}: uncatalogued timing {m.group()!r} in ...{ctx}...")
    return problems


# --------------------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------------------


def _version(pkg: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return "-"


def machine_info() -> dict[str, Any]:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "?"
    try:
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
        ram = f"{kb / 1024 ** 2:.1f} GB"
    except (OSError, AttributeError):
        pass
    return {"date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "cores": os.cpu_count(),
            "cpu": model, "ram": ram, "platform": platform.platform(), "python": platform.python_version(),
            "versions": ", ".join(f"{p} {_version(p)}" for p in ("redactopt", "numpy", "scipy", "pyarrow", "pandas",
                                                                 "highspy", "PySCIPOpt", "ortools", "dask"))}


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def _fmt_s(lo: float, hi: float, rate: bool) -> str:
    """"0.61–1.16 s", "88 ms", "1.1e+07 records/s"."""
    if rate:
        return f"{lo:.2g}" + ("" if math.isclose(lo, hi, rel_tol=1e-9) else f"–{hi:.2g}") + " records/s"
    unit, f = ("ms", 1e3) if hi < 0.1 else ("s", 1.0)
    if math.isclose(lo, hi, rel_tol=1e-9):
        return f"{lo * f:.3g} {unit}"
    return f"{lo * f:.3g}–{hi * f:.3g} {unit}"


def compare(doc: tuple[float, float, bool], got: tuple[float, float],
            cpu: float | None = None) -> tuple[float, str]:
    """(ratio, verdict): measured over documented time (geometric middles); a rate the other way round.

    ``ok`` within a factor 2; ``slower`` / ``faster`` beyond; ``ok on cpu`` when the wall time is more
    than twice the documented one but the run's CPU time is within a factor 2 of it (the machine's load,
    not the code: on a quiet machine a one-process command's wall time is about its CPU time).  CPU time
    only ever excuses a slow wall time; it never condemns one (a command of several processes uses more
    CPU than wall time).  For a rate, ``cpu`` is the rate per CPU second."""
    d = math.sqrt(doc[0] * doc[1])
    g = math.sqrt(max(got[0], 1e-12) * max(got[1], 1e-12))
    ratio = d / g if doc[2] else g / d
    if 0.5 <= ratio <= 2.0:
        return ratio, "ok"
    if ratio < 0.5:
        return ratio, "faster"
    if cpu is not None and cpu > 0 and (d / cpu if doc[2] else cpu / d) <= 2.0:
        return ratio, "ok on cpu"
    return ratio, "slower"


FIELDS = ["doc", "phrase", "kind", "documented", "measured", "cpu", "ratio", "verdict", "how", "note", "load_before",
          "load_after", "date", "needle"]


def _key(row: dict) -> tuple[str, str, str, str]:
    return row["doc"], row["needle"], row["phrase"], row["how"]


def measure(entries: list[Timing], ctx: Context, on_row: Callable[[dict], None]) -> list[dict]:
    rows = []
    for e in entries:
        row = {"doc": e.doc, "phrase": e.figure() or e.needle, "kind": e.kind, "documented": "", "measured": "",
               "cpu": "", "ratio": "", "verdict": e.kind, "how": e.how.script() if e.how else "",
               "note": e.note or e.reason, "load_before": "", "load_after": "",
               "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M"), "needle": e.needle}
        if e.kind == "measured":
            doc = e.documented()
            row["documented"] = _fmt_s(*doc)
            row["load_before"] = _load()
            try:
                got = e.how.measure(ctx)
            except Exception as exc:  # noqa: BLE001 - reported in the table, the run goes on
                row["verdict"] = "error"
                row["note"] = f"{type(exc).__name__}: {exc}"[:300]
            else:
                share = e.how.share(ctx) if isinstance(e.how, Bench) else math.nan
                if share > 0:  # the figure as if the script had had a core to itself (nan: a reused run)
                    g, f = math.sqrt(got[0] * got[1]), min(1.0, share)
                    got = (got[0], got[1], g / f if doc[2] else g * f)
                ratio, verdict = compare(doc, got[:2], got[2])
                row.update(measured=_fmt_s(got[0], got[1], doc[2]), ratio=f"{ratio:.2f}", verdict=verdict,
                           cpu="" if got[2] is None else f"{got[2]:.3g}")
            row["load_after"] = _load()
        rows.append(row)
        on_row(row)
    return rows


def _not_run(e: Timing) -> dict:
    """The row of a measured entry this run (and the merged earlier ones) did not measure."""
    doc = e.documented()
    return {"doc": e.doc, "phrase": e.figure(), "kind": e.kind, "documented": _fmt_s(*doc), "measured": "",
            "cpu": "", "ratio": "", "verdict": "not run", "how": e.how.script(),
            "note": f"not measured in this table (about {e.cost():.0f} s to measure)", "load_before": "",
            "load_after": "", "date": "", "needle": e.needle}


def _catalogue_rows() -> list[dict]:
    """The catalogue's keys, in order (to sort merged results)."""
    return [{"doc": e.doc, "needle": e.needle, "phrase": e.figure() or e.needle,
             "how": e.how.script() if e.how else ""} for e in CATALOGUE]


def _print_row(r: dict) -> None:
    print(f"{r['doc']:<20} {r['phrase'][:34]:<34} {r['documented']:>16} {r['measured']:>16} {r['cpu']:>6} {r['ratio']:>6} "
          f"{r['verdict']:<10} {r['note'][:70] if r['kind'] != 'measured' or r['verdict'] == 'error' else ''}",
          flush=True)


def write_results(rows: list[dict], out: Path, info: dict[str, Any], load_before: str, load_after: str,
                  command: str) -> None:
    with open(out / "docs_timings.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    lines = ["# Documented timings, re-measured (benchmarks/docs_timings.py)", "",
             f"{info['date']} · {info['cores']} cores · {info['cpu']} · {info['ram']} RAM · {info['platform']}",
             f"Python {info['python']} · {info['versions']}",
             f"load average (1, 5, 15 min) of the last run: before {load_before}, after {load_after} "
             "(each row: its own date and 1-min load before → after)", "", f"`{command}`", "",
             "Verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) +
             " (ratio = measured / documented wall time; ok within a factor 2; `ok on cpu`: the wall time is more "
             "than twice the documented one but the run's CPU time is within a factor 2 of it — the load, not "
             "the code).", "",
             "`cpu`: user + system CPU seconds of the measured run (the command and its processes, or the "
             "library call's process): on a loaded machine the wall time exceeds it, on a quiet one the wall "
             "time of a one-process command is about it.", "",
             "| doc | phrase | documented | measured | cpu s | ratio | verdict | when: load | how / why |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        how = r["how"] + (f" ({r['note']})" if r["note"] else "") if r["kind"] == "measured" else r["note"]
        load = (f"{r['date'][5:]}: {r['load_before'].split()[0]} → {r['load_after'].split()[0]}"
                if r["load_before"] else "")
        cells = [r["doc"], r["phrase"], r["documented"], r["measured"], r["cpu"], r["ratio"], r["verdict"], load,
                 how]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    (out / "docs_timings.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Details: the docstring at the top of the script.")
    ap.add_argument("--check", action="store_true", help="measure nothing: every timing phrase of the docs "
                    "catalogued, every needle found (exit 1 naming what is not)")
    ap.add_argument("--list", action="store_true", help="print the catalogue and how each entry is measured")
    ap.add_argument("--out", default="bench-out", metavar="DIR",
                    help="directory for docs_timings.csv/.md (default bench-out, ignored by git; --out "
                         "benchmarks/results updates the committed results)")
    ap.add_argument("--only", metavar="PATTERN", help="only entries whose doc, needle or how matches this regex")
    ap.add_argument("--quick", action="store_true", help="skip entries whose documented time or cost exceeds 60 s")
    ap.add_argument("--max-cost", type=float, default=None, metavar="SECONDS",
                    help="skip entries whose documented time or measuring cost exceeds SECONDS (--quick: 60)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each command or call, the best kept (default 3)")
    ap.add_argument("--measured-only", action="store_true", help="leave out the history/limit/... entries")
    ap.add_argument("--missing", action="store_true", help="with --merge: only the entries DIR/docs_timings.csv "
                    "has no measurement of (not run, or an error)")
    ap.add_argument("--reuse", action="append", default=[], metavar="SCRIPT=DIR",
                    help="read SCRIPT's figures from DIR, the --out of a run of it with the arguments the "
                         "catalogue gives (repeatable), instead of running it")
    ap.add_argument("--merge", action="store_true", help="keep the rows of DIR/docs_timings.csv that this run "
                    "does not measure (several partial runs into one table, each row with its date and load)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    texts = doc_texts()
    problems = check(texts)
    if args.check:
        for p in problems:
            print(p)
        n = sum(len(TIME_RE.findall(t)) for t in texts.values())
        print(f"{len(CATALOGUE)} catalogue entries, {n} timing phrases in {len(texts)} docs: "
              + ("all catalogued, every needle found" if not problems else f"{len(problems)} problem(s)"))
        return 1 if problems else 0
    if problems:
        print(f"warning: {len(problems)} catalogue problem(s); run --check", file=sys.stderr)
    entries = list(CATALOGUE)
    if args.only:
        pat = re.compile(args.only)
        entries = [e for e in entries if pat.search(e.doc) or pat.search(e.needle)
                   or (e.how and pat.search(e.how.script()))]
    if args.measured_only:
        entries = [e for e in entries if e.kind == "measured"]
    limit = 60.0 if args.quick else args.max_cost
    if limit is not None:
        entries = [e for e in entries if e.kind != "measured" or e.cost() <= limit]
    entries.sort(key=lambda e: e.cost() if e.kind == "measured" else 0.0)  # cheap first; the table keeps doc order
    if args.list:
        for e in entries:
            print(f"{e.doc:<20} {e.kind:<10} {e.figure() or e.needle[:40]:<30} "
                  f"{e.how.script() if e.how else e.reason}")
        return 0
    out = Path(args.out)
    if not out.parent.is_dir():
        raise SystemExit(f"--out {out}: directory {out.parent} does not exist")
    out.mkdir(exist_ok=True)
    info = machine_info()
    load_before = _load()
    command = " ".join([Path(sys.executable).name, *sys.argv]) if argv is None else "docs_timings.py " + " ".join(argv)
    print(f"{info['cores']} cores, {info['cpu']}, {info['ram']}; load average {load_before}", flush=True)
    print(f"{'doc':<20} {'phrase':<34} {'documented':>16} {'measured':>16} {'cpu s':>6} {'ratio':>6} verdict",
          flush=True)
    rows: list[dict] = []
    earlier: list[dict] = []
    if args.merge and (out / "docs_timings.csv").exists():
        with open(out / "docs_timings.csv", newline="") as fh:
            earlier = [{k: r.get(k, "") for k in FIELDS} for r in csv.DictReader(fh)]
    order = {_key(r): i for i, r in enumerate(_catalogue_rows())}
    if args.missing:
        done = {_key(r) for r in earlier if r["verdict"] not in ("not run", "error")}
        entries = [e for e in entries if e.kind == "measured" and _key(_not_run(e)) not in done]

    def merged() -> list[dict]:
        now = {_key(r) for r in rows}
        keep = [r for r in earlier if _key(r) not in now and _key(r) in order and r["verdict"] != "not run"]
        have = now | {_key(r) for r in keep}
        missing = [_not_run(e) for e in CATALOGUE if e.kind == "measured" and _key(_not_run(e)) not in have
                   and not args.measured_only]
        return sorted(keep + rows + missing, key=lambda r: order.get(_key(r), len(order)))

    with tempfile.TemporaryDirectory(prefix="_docs_timings.", dir=out) as work:
        ctx = Context(Path(work), args.repeat)
        for item in args.reuse:
            name, _, folder = item.partition("=")
            for e in entries:
                if isinstance(e.how, Bench) and e.how.script_name == name:
                    ctx.bench_runs[(name, e.how.args)] = (Path(folder), 0, "", math.nan)

        def on_row(r: dict) -> None:
            rows.append(r)
            _print_row(r)
            write_results(merged(), out, info, load_before, _load(), command)  # partial results survive a stop

        measure(entries, ctx, on_row)
    load_after = _load()
    write_results(merged(), out, info, load_before, load_after, command)
    bad = [r for r in rows if r["verdict"] in ("slower", "faster", "error")]
    print(f"{len(rows)} entries; {sum(r['kind'] == 'measured' for r in rows)} measured, {len(bad)} off by more "
          f"than 2x or failed; load average {load_before} -> {load_after}; {out / 'docs_timings.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
