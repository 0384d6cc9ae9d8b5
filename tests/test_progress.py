"""Progress on every long run (issue 37, item 3): bars on standard error only when it is a terminal,
nothing under ``--quiet`` or without a terminal, the same standard output either way, and the time of
each phase under ``--format json``.

The command-line tests run ``python -m redactopt`` -- the real entry, through its supervisor process
(:mod:`redactopt.interface.supervise`) -- with standard error on a pseudo-terminal (:mod:`pty`, a bare
one that reports no size) or on a pipe, and standard output on a pipe.  ``REDACTOPT_PROGRESS_DELAY=0``
shows bars at once, so that short deterministic commands can be compared byte for byte; one test keeps
the default delay on a run of several seconds.  The unit tests drive :mod:`redactopt._progress` with a
clock of their own, so phase times are checked exactly.
"""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from redactopt import _progress
from redactopt.interface.progress import Bars, watched

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminals and the supervisor")

#: A design of a few seconds that ends the same way every time (no time limit reached): n = 3000.
DESIGN = ["design", "--n", "3000", "--eps", "1"]


# --------------------------------------------------------------------------
# running a command
# --------------------------------------------------------------------------
def _run(args: list[str], *, tty: bool, cwd: Path | None = None, delay: str | None = "0",
         stop: tuple[int, bytes] | None = None, timeout: float = 240.0) -> tuple[int, bytes, bytes, float]:
    """``redactopt ARGS`` with stderr on a pseudo-terminal (``tty``) or a pipe; stdout on a pipe.

    ``stop=(signal, marker)``: send the signal once ``marker`` has appeared on stderr.  Returns the exit
    status, stdout, stderr and the wall time measured here (start to exit)."""
    env = dict(os.environ)
    env.pop("REDACTOPT_NO_SUPERVISOR", None)
    env.pop("REDACTOPT_PROGRESS_DELAY", None)
    if delay is not None:
        env["REDACTOPT_PROGRESS_DELAY"] = delay
    master = None
    if tty:
        master, slave = pty.openpty()
        err_target = slave
    else:
        err_target = subprocess.PIPE
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "redactopt", *args], stdout=subprocess.PIPE, stderr=err_target,
                            stdin=subprocess.DEVNULL, cwd=cwd, env=env, start_new_session=True)
    if tty:
        os.close(slave)
    err_fd = master if tty else proc.stderr.fileno()
    out_fd = proc.stdout.fileno()
    out, err = bytearray(), bytearray()
    open_fds = {out_fd, err_fd}
    sent = False
    deadline = time.monotonic() + timeout
    try:
        while open_fds:
            if time.monotonic() > deadline:
                raise AssertionError(f"redactopt {' '.join(args)} did not end in {timeout} s")
            ready, _, _ = select.select(list(open_fds), [], [], 0.2)
            for fd in ready:
                try:
                    data = os.read(fd, 65536)
                except OSError:  # the pty's other end closed (EIO)
                    data = b""
                if not data:
                    open_fds.discard(fd)
                    continue
                (out if fd == out_fd else err).extend(data)
            if stop is not None and not sent and stop[1] in err:
                os.kill(proc.pid, stop[0])
                sent = True
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        if master is not None:
            os.close(master)
    wall = time.perf_counter() - t0
    return proc.returncode, bytes(out), bytes(err), wall


def _last_line(text: str) -> str:
    """The last line a terminal shows: escape sequences dropped, what a carriage return overwrote dropped."""
    last = text.rstrip().splitlines()[-1]
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", last).split("\r")[-1].strip()


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> Path:
    """A 0/1 column of 3000 rows of a two-state chain (alpha 0.05, beta 0.1), fixed by its seed."""
    folder = tmp_path_factory.mktemp("progress")
    rng = np.random.default_rng(1)
    x = [0]
    for _ in range(2999):
        flip = rng.random() < (0.05 if x[-1] == 0 else 0.1)
        x.append(1 - x[-1] if flip else x[-1])
    path = folder / "t.csv"
    path.write_text("v\n" + "\n".join(map(str, x)) + "\n")
    return path


APPLY = ["apply", "t.csv", "--column", "v", "--private", "1500-1509", "--eps", "1", "--alpha", "0.05",
         "--beta", "0.1", "--seed", "3", "--out", "o.csv", "--force"]


# --------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------
def test_a_design_shows_progress_on_a_terminal_and_nothing_else_changes():
    """On a terminal the design draws its phase line and the optimisers' bar (through the supervisor);
    on a pipe standard error stays empty; standard output is the same bytes both ways."""
    rc_t, out_t, err_t, _ = _run(DESIGN, tty=True)
    rc_p, out_p, err_p, _ = _run(DESIGN, tty=False)
    assert rc_t == rc_p == 0
    assert out_t == out_p and out_t.startswith(b"design: n=3000")
    assert err_p == b""
    text = err_t.decode("utf-8", "replace")
    assert "redactopt design: frontier" in text  # the phase line, naming the optimiser running
    assert re.search(r"design: \d/\d", text)  # the optimisers' bar: done of all
    assert "\r" in text  # drawn in place
    # the last line says where the time went
    assert _last_line(text).startswith("redactopt design: ") and "frontier" in _last_line(text)


def test_quiet_silences_progress_even_on_a_terminal():
    rc, out, err, _ = _run(DESIGN + ["--quiet"], tty=True)
    assert rc == 0 and out.startswith(b"design: n=3000")
    assert err == b""


def test_a_release_shows_its_phases_and_writes_the_same_release(table):
    """apply: rows read, the design, the draws and the writing, on a terminal only; the release and its
    summary are the same bytes either way."""
    cwd = table.parent
    rc_t, out_t, err_t, _ = _run(APPLY, tty=True, cwd=cwd)
    released_t = (cwd / "o.csv").read_bytes()
    rc_p, out_p, err_p, _ = _run(APPLY, tty=False, cwd=cwd)
    released_p = (cwd / "o.csv").read_bytes()
    assert rc_t == rc_p == 0
    assert out_t == out_p and released_t == released_p
    assert err_p == b""
    text = err_t.decode("utf-8", "replace")
    for phase in ("redactopt apply: read", "redactopt apply: design", "redactopt apply: write"):
        assert phase in text
    assert "scan: " in text and "rows" in text  # the rows read
    last = _last_line(text)
    assert last.startswith("redactopt apply: ") and "read" in last and "design" in last and "write" in last


def test_json_carries_the_phase_times_within_the_wall_time(table):
    """``--format json``: every existing key stays, ``phases`` is added; each time is >= 0 and they sum to
    no more than the wall time measured here (the command's own start is later than this test's)."""
    rc, out, err, wall = _run(APPLY + ["--format", "json"], tty=False, cwd=table.parent)
    assert rc == 0 and err == b""
    d = json.loads(out)
    for key in ("output", "rows", "leakage", "utility", "designs", "randomness", "warnings"):
        assert key in d  # the summary as before
    assert d["rows"] == 3000
    phases = d["phases"]
    assert {"read", "design", "draw", "write"} <= set(phases)
    assert all(isinstance(v, float) and v >= 0.0 for v in phases.values())
    assert sum(phases.values()) <= wall

    rc, out, err, wall = _run(DESIGN + ["--format", "json"], tty=True)
    assert rc == 0
    d = json.loads(out)
    assert list(d)[:-1] == ["format", "states", "chain", "n", "private", "eps", "blocks", "method", "utility",
                            "leakage", "certificate"]  # the mechanism file as before, then the times
    assert d["n"] == 3000 and d["leakage"] <= 1.0
    phases = d["phases"]
    assert "frontier" in phases and "judge" in phases  # a lone design: its optimisers are its phases
    assert all(v >= 0.0 for v in phases.values()) and sum(phases.values()) <= wall


def test_a_class_design_shows_progress_with_the_default_delay():
    """``design --class scan`` (a run of several seconds, default delay of one second): its class stages
    and the split search appear; the JSON carries the stages' times."""
    args = ["design", "--class", "scan", "--n", "600", "--eps", "1", "--private", "181", "--alpha", "0.00773908",
            "--beta", "0.0024669", "--time-limit", "4", "--format", "json"]
    rc, out, err, wall = _run(args, tty=True, delay=None)
    assert rc == 0
    text = err.decode("utf-8", "replace")
    assert "redactopt design: scan" in text  # the phase line: the scan stage and its parts
    d = json.loads(out)
    assert d["phases"].keys() == {"local", "scan"}
    assert all(v >= 0.0 for v in d["phases"].values()) and sum(d["phases"].values()) <= wall
    assert _last_line(text).startswith("redactopt design: ")


def test_ctrl_c_with_bars_on_a_terminal_still_stops_with_one_line():
    """Progress does not change how a signal stops a command: exit 130, the supervisor's one line last
    (after clearing the bar's line), nothing on standard output."""
    args = ["design", "--class", "scan", "--n", "2000", "--eps", "1", "--private", "181", "--alpha", "0.00773908",
            "--beta", "0.0024669", "--time-limit", "60"]
    rc, out, err, _ = _run(args, tty=True, stop=(signal.SIGINT, b"redactopt design: "))
    assert rc == 130
    assert out == b""
    assert _last_line(err.decode("utf-8", "replace")) == "redactopt design: interrupted"


# --------------------------------------------------------------------------
# the library: redactopt._progress and the bars
# --------------------------------------------------------------------------
class _Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch) -> _Clock:
    c = _Clock()
    monkeypatch.setattr(_progress.time, "perf_counter", c)
    return c


def test_phases_give_time_to_the_innermost_and_never_overlap(clock):
    with _progress.watching() as w:
        with _progress.phase("read"):
            clock.t += 2.0
        with _progress.phase("fit"):
            clock.t += 1.0
            with _progress.phase("design"):  # pauses fit
                clock.t += 5.0
            clock.t += 0.5
        clock.t += 3.0  # in no phase: not counted
        with _progress.phase("read"):  # a phase again: added up
            clock.t += 0.25
    assert w.seconds() == {"read": 2.25, "fit": 1.5, "design": 5.0}
    assert sum(w.seconds().values()) <= clock.t - 100.0


def test_sub_phases_split_a_lone_design_but_not_a_release(clock):
    with _progress.watching() as w:
        with _progress.phase("frontier", sub=True):
            clock.t += 1.0
        with _progress.phase("design"):
            with _progress.phase("frontier", sub=True):  # part of the release's design phase
                clock.t += 4.0
    assert w.seconds() == {"frontier": 1.0, "design": 4.0}


def test_reports_reach_the_listener_only_while_watched(clock):
    got = []

    class Listener:
        def __call__(self, stage, done, total):
            got.append((stage, done, total))

        def note(self, stage, text):
            got.append(("note", stage, text))

        def phase(self, name):
            got.append(("phase", name))

    _progress.report("lost", 1, 2)  # nobody watches: nothing happens
    assert not _progress.active()
    with _progress.watching(Listener()):
        assert _progress.active()
        _progress.report("rows", 5, None, note="x")
        with _progress.phase("fit"):
            with _progress.phase("frontier", sub=True):
                pass
    assert got == [("note", "rows", "x"), ("rows", 5, None), ("phase", "fit"), ("phase", "fit > frontier"),
                   ("phase", "fit")]
    assert not _progress.active()


def test_other_threads_report_but_are_not_timed(clock):
    got = []
    with _progress.watching(lambda *a: got.append(a)) as w:
        def work():
            with _progress.phase("elsewhere"):
                _progress.report("designs", 1, 2)

        t = threading.Thread(target=work)
        t.start()
        t.join()
    assert got == [("designs", 1, 2)]
    assert w.seconds() == {}


def test_a_listener_that_fails_does_not_break_the_run():
    def broken(*a):
        raise RuntimeError("terminal gone")

    with _progress.watching(broken):
        _progress.report("rows", 1, None)  # swallowed


def test_bars_draw_stages_and_close_them_at_their_total():
    buf = io.StringIO()
    bars = Bars(True, file=buf, delay=0.0, title="redactopt x")
    bars.phase("design")
    bars.note("design", "frontier")
    bars("design", 1, 3)
    assert "design" in bars._bars
    bars("design", 3, 3)
    assert "design" not in bars._bars  # done: closed
    bars("scan", 5000, None)
    bars.phase("fit")  # the phase the counter was reported in has ended: closed too
    assert "scan" not in bars._bars
    bars.close()
    text = buf.getvalue()
    assert "redactopt x: design" in text and "redactopt x: fit" in text  # the phase line
    assert "design: 0/3" in text and "frontier" in text  # the stage's bar with its note
    assert "scan: " in text and "rows" in text  # a counter of rows


def test_disabled_bars_draw_nothing():
    buf = io.StringIO()
    with watched(False, title="redactopt x", file=buf) as (bars, watch):
        _progress.report("design", 1, 3)
        with _progress.phase("design"):
            pass
        assert not _progress.active()  # nobody is shown anything: solvers install no callbacks
    assert buf.getvalue() == ""
    assert set(watch.seconds()) == {"design"}  # the phases are timed all the same (--format json)


def test_a_class_design_reports_to_the_callers_progress():
    """``design(..., cls="scan", progress=f)`` (refused before): ``f`` gets the class stages, done of all,
    and the parts below them (the local design's optimisers, the scan's split search)."""
    from redactopt import MarkovChain, design

    got = []
    d = design(MarkovChain(0.2, 0.5), 8, eps=1.0, p=3, cls="scan", time_limit=20, progress=lambda *a: got.append(a))
    stages = [g for g in got if g[0] == "class design"]
    assert stages == [("class design", 0, 2), ("class design", 1, 2), ("class design", 2, 2)]
    assert any(g[0] == "design" for g in got)  # the local stage's optimisers
    assert d.leakage <= 1.0
    assert not _progress.active()  # the caller's watch ended with the design
