"""Signals (issue 37): the time from SIGINT or SIGTERM to the exit of every long command, and what is left.

Usage: python benchmarks/signals.py [--out DIR] [--quick] [--repeat R] [--baseline]

Writes signals.csv / .md into DIR (default bench-out).

Each long command is started as ``python -m redactopt ...`` in a session of its own, watched through
``/proc`` until it is in its heavy phase (it has spent some seconds of CPU, or its design workers are
up), then sent the signal.  Each row gives the seconds from the signal to the exit (the fastest,
the median and the slowest of ``--repeat`` runs, default 3; ``--quick``: one run and fewer
commands), the exit status and the line on standard error, and what survived: processes ever
seen below the command still alive, processes of its session, files beside the inputs or in the
temporary folder, POSIX semaphores the command mapped.  The target: within 2 s, nothing left.

A stop within about 1 s is the command's own (Python's handler ran: the stack unwound and the pool
was terminated); about 1.0-1.3 s is the supervisor's: the command was in a compiled call for
longer than the grace period (``redactopt.interface.supervise.GRACE``) and everything below the
supervisor was frozen and killed, its temporary files and semaphores removed.  ``--baseline``
adds the same runs without the supervisor (``REDACTOPT_NO_SUPERVISOR=1``: the handlers in the
command's own process, the way commands ran before; capped at 120 s a run).

The commands: a design inside SCIP (global branch and bound, n = 14); a scan-class design at
n = 2880 (the issue's slowly mixing chain); a release of 900 sequences (900 distinct designs) with
two design processes; the same on Dask; the issue's categorical release (6 homes x 2880 minutes,
two protected columns, one binned, 33 private rows) with per-record optima, signalled after 4 s
and again after 60 s of CPU (then inside long compiled calls); ``audit --attack`` with 5e7
samples; ``report --html`` of a release with twelve designs.
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import out_dir, parser, write_table  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
NAMES = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}


# --------------------------------------------------------------------------
# /proc
# --------------------------------------------------------------------------
def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2:].split()


def _below(root: int) -> dict[int, list[str]]:
    table = {int(d): f for d in os.listdir("/proc") if d.isdigit() and (f := _stat(int(d))) is not None}
    children: dict[int, list[int]] = {}
    for pid, f in table.items():
        children.setdefault(int(f[1]), []).append(pid)
    found, todo = {}, [root]
    while todo:
        for c in children.get(todo.pop(), []):
            found[c] = table[c]
            todo.append(c)
    return found


def _alive(pid: int, start: str) -> bool:
    f = _stat(pid)
    return f is not None and f[19] == start and f[0] != "Z"


def _session(sid: int) -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit() and (f := _stat(int(d))) is not None
            and int(f[3]) == sid and f[0] != "Z"]


def _semaphores(pids: list[int]) -> set[str]:
    inodes = set()
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
                if " /dev/shm/" in line:
                    inodes.add(int(line.split()[4]))
        except (OSError, ValueError):
            continue
    return {e.path for e in os.scandir("/dev/shm") if e.inode() in inodes} if inodes else set()


def _fresh() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.setsid()


# --------------------------------------------------------------------------
# one run
# --------------------------------------------------------------------------
def stop_once(argv: list[str], inputs: list[Path], ready, sig: int, *, baseline: bool) -> dict:
    """Start ``argv`` in a fresh folder holding links to ``inputs``, wait for ``ready``, send ``sig``."""
    work = Path(tempfile.mkdtemp(prefix="signals-"))
    tmp = work / "tmp"
    run = work / "run"
    tmp.mkdir()
    run.mkdir()
    for p in inputs:
        (run / p.name).symlink_to(p)
    before = sorted(os.listdir(run))
    env = dict(os.environ, TMPDIR=str(tmp))
    env.pop("REDACTOPT_NO_SUPERVISOR", None)
    if baseline:
        env["REDACTOPT_NO_SUPERVISOR"] = "1"
    proc = subprocess.Popen([sys.executable, "-m", "redactopt", *argv], cwd=run, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_fresh)
    seen: dict[int, str] = {}
    shm: set[str] = set()
    root = proc.pid
    try:
        while True:
            below = _below(root)
            seen.update({pid: f[19] for pid, f in below.items()})
            shm |= _semaphores([root, *below])
            if proc.poll() is not None:
                raise RuntimeError(f"{argv[0]} ended before its heavy phase: {proc.stderr.read().strip()}")
            # the command's processes: below the supervisor, or the process itself without one
            mine = below if not baseline else {root: _stat(root) or [], **below}
            cpu = sum(int(f[11]) + int(f[12]) for f in mine.values() if len(f) > 12) / TICK
            if ready(cpu, below, root):
                break
            time.sleep(0.05)
        t0 = time.perf_counter()
        proc.send_signal(sig)
        try:
            _, err = proc.communicate(timeout=120 if baseline else 60)
            seconds = time.perf_counter() - t0
        except subprocess.TimeoutExpired:
            seconds = float("inf")
            os.killpg(root, signal.SIGKILL)
            _, err = proc.communicate()
        time.sleep(0.2)  # (the supervisor has waited for everything; this is for the baseline's orphans)
        survivors = [pid for pid, start in seen.items() if _alive(pid, start)]
        session = _session(root)
        for pid in set(survivors) | set(session):  # the baseline's orphans: not left on the machine
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        files = sorted(set(os.listdir(run)) - set(before)) + [f"TMPDIR/{n}" for n in os.listdir(tmp)]
        sems = sorted(p for p in shm if os.path.exists(p))
        for p in sems:
            os.unlink(p)
        return {"seconds": seconds, "status": proc.returncode, "stderr": err.strip().replace("\n", " | "),
                "survivors": len(set(survivors) | set(session)), "files_left": len(files), "semaphores_left": len(sems),
                "left": ", ".join(files[:3] + [Path(s).name for s in sems[:2]])}
    finally:
        if proc.poll() is None:
            os.killpg(root, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)


def cpu(seconds: float):
    return lambda c, below, root: c >= seconds


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def workers(count: int, seconds: float):
    """At least ``count`` design workers (children of the pool's fork server) and ``seconds`` of CPU."""
    def ready(c, below, root):
        servers = {pid for pid in below if b"multiprocessing.forkserver" in _cmdline(pid)}
        return sum(1 for f in below.values() if int(f[1]) in servers) >= count and c >= seconds
    return ready


# --------------------------------------------------------------------------
# the inputs
# --------------------------------------------------------------------------
def many_sequences(folder: Path) -> Path:
    """900 sequences of 2000 rows, three private rows each at shifting offsets: 900 distinct designs."""
    rng = np.random.default_rng(0)
    k, n = 900, 2000
    o = np.zeros(k * n, dtype=np.int8)
    for i in range(k):
        o[i * n + 1000] = 1
        o[i * n + 1005 + 3 * (i % 300)] = 1
        o[i * n + 1950 - 7 * (i // 300)] = 1
    path = folder / "big.csv"
    pd.DataFrame({"sid": np.repeat(np.arange(k), n), "x": rng.integers(0, 2, k * n), "o": o}).to_csv(path, index=False)
    return path


def homes(folder: Path, *, count: int = 6, optout: tuple[int, ...] = (1, 3, 4), name: str = "meter.csv") -> Path:
    """The issue's table: ``count`` homes x 2 days of minutes, occupancy (a chain with alpha 0.01, beta 0.02)
    and a power draw that predicts it, opt-out windows of 11 minutes in the homes ``optout``, shuffled."""
    rng = np.random.default_rng(36)
    m = 2 * 1440
    parts = []
    for h in range(count):
        x = np.empty(m, dtype=np.int64)
        x[0] = rng.random() < 1 / 3
        u = rng.random(m)
        for t in range(1, m):
            x[t] = (u[t] < 0.01) if x[t - 1] == 0 else (u[t] >= 0.02)
        power = np.round(np.where(x == 1, 350.0, 60.0) + rng.normal(0.0, 40.0, m), 1)
        flag = np.zeros(m, dtype=np.int64)
        if h in optout:
            a = int(rng.integers(60, m - 71))
            flag[a:a + 11] = 1
        parts.append(pd.DataFrame({"home": f"h{h + 1:02d}", "ts": pd.Timestamp("2024-03-04")
                                   + pd.to_timedelta(np.arange(m), unit="min"), "occupied": x, "power_w": power,
                                   "optout": flag}))
    path = folder / name
    pd.concat(parts, ignore_index=True).sample(frac=1.0, random_state=36).to_csv(path, index=False)
    return path


def report_of_twelve(folder: Path) -> Path:
    table = homes(folder, count=12, optout=tuple(range(12)), name="twelve.csv")
    rep = folder / "twelve.json"
    subprocess.run([sys.executable, "-m", "redactopt", "apply", str(table), "--protect", "occupied,power_w", "--bin",
                    "power_w:100,300", "--by", "home", "--private-column", "optout", "--eps", "1", "--order-by", "ts",
                    "--accept-model", "--quiet", "--out", str(folder / "twelve-out.csv"), "--report", str(rep)],
                   check=True, stdout=subprocess.DEVNULL)
    return rep


def commands(data: Path, quick: bool) -> list[tuple[str, list[str], list[Path], object]]:
    big, meter = many_sequences(data), homes(data)
    cases = [
        ("design (SCIP, n=14)", ["design", "--n", "14", "--private", "7", "--eps", "1", "--method", "global",
                                 "--time-limit", "120", "--format", "json", "--out", "d.json"], [], cpu(2.5)),
        ("apply, 900 sequences, 2 workers", ["apply", big.name, "--column", "x", "--by", "sid", "--private-column", "o",
                                             "--eps", "1", "--alpha", "0.003", "--beta", "0.012", "--workers", "2",
                                             "--out", "o.csv", "--report", "r.json"], [big], workers(1, 3.0)),
        ("apply categorical (6 homes, optimal)", ["apply", meter.name, "--protect", "occupied,power_w", "--bin",
                                                  "power_w:100,300", "--by", "home", "--private-column", "optout",
                                                  "--eps", "1", "--order-by", "ts", "--accept-model", "--method",
                                                  "optimal", "--out", "o.csv", "--report", "r.json"], [meter], cpu(4.0)),
    ]
    if quick:
        return cases
    rep = report_of_twelve(data)
    late = cases[2][1]
    return cases + [
        ("apply categorical, late (60 s of CPU)", late, [meter], cpu(60.0)),
        ("apply --backend dask, 900 sequences", ["apply", big.name, "--column", "x", "--by", "sid", "--private-column",
                                                 "o", "--eps", "1", "--alpha", "0.003", "--beta", "0.012", "--backend",
                                                 "dask", "--out", "out", "--report", "r.json"], [big], cpu(4.0)),
        ("design --class scan (n=2880)", ["design", "--class", "scan", "--n", "2880", "--eps", "1", "--private", "181",
                                          "--alpha", "0.00773908", "--beta", "0.0024669", "--time-limit", "60",
                                          "--out", "s.json"], [], cpu(3.0)),
        ("audit --attack (5e7 samples)", ["audit", "--method", "3r", "--n", "10", "--eps", "0.5", "--attack",
                                          "--samples", "50000000", "--time-limit", "3000"], [], cpu(3.0)),
        ("report --html (12 designs)", ["report", rep.name, "--html", "m.html"], [rep], cpu(2.5)),
    ]


def main(argv: list[str] | None = None) -> list[dict]:
    ap = parser(__doc__)
    ap.add_argument("--repeat", type=int, default=None, help="runs per command and signal (default 3; --quick 1)")
    ap.add_argument("--baseline", action="store_true",
                    help="also run without the supervisor (REDACTOPT_NO_SUPERVISOR=1), as commands ran before")
    args = ap.parse_args(argv)
    out = out_dir(args.out)
    repeat = args.repeat or (1 if args.quick else 3)
    data = Path(tempfile.mkdtemp(prefix="signals-data-"))
    rows = []
    try:
        for name, cmd, inputs, ready in commands(data, args.quick):
            for sig in (signal.SIGINT, signal.SIGTERM):
                for baseline in ((False, True) if args.baseline else (False,)):
                    runs = [stop_once(cmd, inputs, ready, sig, baseline=baseline) for _ in range(repeat)]
                    times = [r["seconds"] for r in runs]
                    worst = max(runs, key=lambda r: (r["survivors"] + r["files_left"] + r["semaphores_left"],
                                                      r["seconds"]))
                    rows.append({"command": name, "signal": NAMES[sig],
                                 "supervisor": "no (baseline)" if baseline else "yes", "runs": repeat,
                                 "min_s": round(min(times), 3), "median_s": round(statistics.median(times), 3),
                                 "max_s": round(max(times), 3), "within_2s": max(times) <= 2.0,
                                 "status": ",".join(sorted({str(r["status"]) for r in runs})),
                                 "stderr": worst["stderr"][:70], "survivors": worst["survivors"],
                                 "files_left": worst["files_left"], "semaphores_left": worst["semaphores_left"],
                                 "left": worst["left"]})
                    r = rows[-1]
                    print(f"{name:<38} {r['signal']:<7} {'baseline ' if baseline else ''}{r['min_s']:6.2f} / "
                          f"{r['median_s']:6.2f} / {r['max_s']:6.2f} s  status {r['status']:<4} survivors "
                          f"{r['survivors']} files {r['files_left']} semaphores {r['semaphores_left']}  "
                          f"{r['stderr']}", flush=True)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    good = [r for r in rows if r["supervisor"] == "yes"]
    ok = [r for r in good if r["within_2s"] and not (r["survivors"] or r["files_left"] or r["semaphores_left"])]
    print(f"{len(ok)} of {len(good)} command x signal pairs stop within 2 s with nothing left")
    write_table(rows, out / "signals", "Time from the signal to the exit (benchmarks/signals.py): min / median / max "
                "seconds, and what survived")
    return rows


if __name__ == "__main__":
    main()
