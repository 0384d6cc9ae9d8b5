"""Signals on the command line (issue 37): SIGINT, SIGTERM and SIGHUP stop any command at once.

A stopped command exits within about a second with every process it started, leaves no partial
output and no temporary file, writes one line on standard error (``redactopt apply: interrupted``,
``... terminated``, ``... hung up``) and exits with 128 + the signal: 130 for Ctrl-C, 143 for SIGTERM,
129 for SIGHUP.

Why a second process: a command spends its time in compiled code (HiGHS, SCIP, OR-Tools, Clarabel,
numpy) where Python's signal handlers wait until the call returns -- ten seconds and more were
measured in a categorical release -- and SCIP takes Ctrl-C for itself.  So on Linux the process
started from the shell only supervises (:func:`start`): it forks the command into a child and waits.
On a signal it

1. freezes multiprocessing's resource tracker (which would otherwise report the semaphores of a
   killed pool on standard error) and notes the POSIX semaphores the command's processes map;
2. passes the signal on: the command stops at its next Python instruction (:class:`Interrupted`),
   its temporary outputs are removed as the stack unwinds, its design workers are terminated;
3. if the command has not exited :data:`GRACE` seconds later (a long compiled call), freezes every
   process below it (SIGSTOP, until no new one appears) and kills them (SIGKILL);
4. removes what is left: the temporary files and folders the command announced
   (:mod:`redactopt._tempfiles`) and its semaphores in ``/dev/shm``;
5. writes the one line and exits with 128 + the signal.

The supervisor is a subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): a process orphaned below it --
the fork server of the design pool, a worker -- is re-parented to it rather than to init, so it
can always be found; whenever the command ends, normally or not, whatever it started and left
running is stopped before the supervisor exits (after :data:`LINGER` seconds to exit on its own).
Elsewhere (no fork, no ``/proc``), or with ``REDACTOPT_NO_SUPERVISOR=1``, the command runs in the
process itself with the same handlers, and stops when the interpreter next runs.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import sys
import time
import warnings
from types import FrameType

from redactopt import _tempfiles
from redactopt.errors import Interrupted

__all__ = ["GRACE", "LINGER", "WORDS", "available", "start", "stopped"]

#: Seconds the command has, after a signal, to stop by itself before everything below the supervisor is killed.
GRACE = 1.0
#: Seconds the command's other processes (fork server, workers) have to exit on their own once it has ended.
LINGER = 0.5
#: The signals that stop a command, and the word its one line says.
WORDS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated", signal.SIGHUP: "hung up"}

#: Whether this process is a command run under a supervisor (it then reports its stop instead of printing it).
_supervised = False


def available() -> bool:
    """Whether commands run under a supervisor here: Linux (``fork``, ``/proc``), unless ``REDACTOPT_NO_SUPERVISOR``."""
    return (sys.platform.startswith("linux") and hasattr(os, "fork") and os.path.exists("/proc/self/stat")
            and not os.environ.get("REDACTOPT_NO_SUPERVISOR"))


def _stop(signum: int, frame: FrameType | None) -> None:
    """The command's handler: stop where the interpreter is, once (a second signal does not cut the clean-up)."""
    for s in WORDS:
        if signal.getsignal(s) is _stop:
            signal.signal(s, signal.SIG_IGN)
    raise Interrupted(signum)


def _handle(signals: list[int]) -> None:
    for s in signals:
        signal.signal(s, _stop)


def _caught() -> list[int]:
    """The stopping signals this process was not started with ignored (a background job keeps SIGINT ignored)."""
    return [s for s in WORDS if signal.getsignal(s) != signal.SIG_IGN]


def start(command: str) -> None:
    """Run ``command`` under a supervisor: returns in the process that runs it (the caller goes on with
    the command); the supervisor itself exits with the command's status once the command and
    everything it started have ended (at once: it has nothing to finish).  Where :func:`available`
    is false, the handlers are installed here and the command runs in this process."""
    caught = _caught()
    if not available():
        _handle(caught)
        return
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, set(caught) | {signal.SIGCHLD})
    ann_r, ann_w = os.pipe()
    _become_subreaper()
    try:
        with warnings.catch_warnings():
            # Python >= 3.12 warns of fork() beside threads: numpy's BLAS threads reinitialise in the child
            # (they register fork handlers), and the supervisor itself runs no Python thread
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        os.close(ann_r)
        os.close(ann_w)
        raise
    if pid == 0:  # the command
        global _supervised
        os.close(ann_r)
        _supervised = True
        _tempfiles.listen(ann_w)
        _handle(caught)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        return
    os.close(ann_w)
    status = _Supervisor(pid, command, ann_r, caught).run(old_mask)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # pragma: no cover
            pass
    os._exit(status)


def stopped(command: str, signum: int, *, exit_now: bool) -> int:
    """The command's end after a stopping signal: its exit status, 128 + ``signum``.

    Under a supervisor the supervisor writes the one line (it is told the signal); otherwise it is
    written here.  ``exit_now`` (the command line's own process, not a call of ``main`` from
    Python): exit at once, without waiting for threads or pools the interrupted work left behind.
    """
    code = 128 + int(signum)
    if _supervised:
        _tempfiles.send_stop(signum)
    else:
        sys.stderr.write(f"redactopt {command}: {WORDS.get(signum, 'stopped')}\n")
    if exit_now:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    return code


# ---------------------------------------------------------------------------
# the supervisor
# ---------------------------------------------------------------------------
def _become_subreaper() -> None:
    """Orphans below this process come back to it (Linux >= 3.4), not to init: none escapes the clean-up."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):  # pragma: no cover - then only the command's own children are found
        pass


def _noop(signum: int, frame: FrameType | None) -> None:
    """The supervisor's handlers only wake its loop (through the wakeup descriptor)."""


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    return raw[raw.rfind(")") + 2:].split()


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (children, their children, ...), from ``/proc``."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat_fields(int(name))
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class _Supervisor:
    """Waits for the command ``pid``; stops it and everything below on a signal; cleans up (module docstring)."""

    def __init__(self, pid: int, command: str, announcements: int, caught: list[int]) -> None:
        self.pid = pid
        self.command = command
        self.ann: int | None = announcements
        self.caught = caught
        self.pending = b""
        self.temporary: dict[bytes, None] = {}  # announced and not settled, in order
        self.reported: int | None = None         # the signal the command says it stopped on
        self.stop: int | None = None             # the signal this process received
        self.killed = False
        self.status: int | None = None           # the command's wait status
        self.semaphores: dict[str, int] = {}     # /dev/shm names mapped by the command's processes -> inode

    def run(self, old_mask: object) -> int:
        assert self.ann is not None
        os.set_blocking(self.ann, False)  # a process forked below the command may hold the other end
        sig_r, sig_w = os.pipe()
        os.set_blocking(sig_r, False)
        os.set_blocking(sig_w, False)
        signal.set_wakeup_fd(sig_w, warn_on_full_buffer=False)
        for s in [*self.caught, signal.SIGCHLD]:
            signal.signal(s, _noop)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)  # type: ignore[arg-type]
        deadline: float | None = None
        while True:
            self._reap()
            if self.status is not None:
                break
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                self._kill_below()
                self.killed = True
                deadline = now + 0.05  # reaped at once; look again soon
                continue
            fds = [sig_r] + ([self.ann] if self.ann is not None else [])
            try:
                ready = select.select(fds, [], [], None if deadline is None else deadline - now)[0]
            except InterruptedError:  # pragma: no cover - select is retried by Python itself
                continue
            if sig_r in ready:
                for s in _drain(sig_r):
                    if s in self.caught and self.stop is None:
                        self.stop = s
                        self._freeze_trackers()
                        self._note_semaphores()
                        _signal(self.pid, s)
                        deadline = time.monotonic() + GRACE
            if self.ann is not None and self.ann in ready:
                self._read()
        self._drain_announcements()  # what the command said before it ended
        self._end_below()
        self._drain_announcements()
        self._clean()
        return self._exit_status()

    # -- the command's announcements --------------------------------------------------------------
    def _drain_announcements(self) -> None:
        while self.ann is not None and self._read():
            pass

    def _read(self) -> bool:
        """Read what the command announced; ``False`` when nothing more is there now."""
        assert self.ann is not None
        try:
            data = os.read(self.ann, 1 << 16)
        except BlockingIOError:
            return False
        if not data:
            os.close(self.ann)
            self.ann = None
            return False
        *messages, self.pending = (self.pending + data).split(b"\0")
        for m in messages:
            tag, body = m[:1], m[1:]
            if tag == b"+":
                self.temporary[body] = None
            elif tag == b"-":
                self.temporary.pop(body, None)
            elif tag == b"!":
                self.reported = int(body)
        return True

    # -- processes -------------------------------------------------------------------------------
    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.pid:
                self.status = status

    def _freeze_trackers(self) -> None:
        """Stop multiprocessing's resource tracker before the command's processes end: killed later, it
        never reports their semaphores on standard error (they are removed here instead)."""
        for pid in descendants(os.getpid()):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    cmdline = fh.read()
            except OSError:
                continue
            if b"multiprocessing.resource_tracker" in cmdline:
                _signal(pid, signal.SIGSTOP)

    def _note_semaphores(self) -> None:
        """The names in ``/dev/shm`` of the files the processes below map (POSIX semaphores of a pool)."""
        inodes = set()
        for pid in descendants(os.getpid()):
            try:
                with open(f"/proc/{pid}/maps", "rb") as fh:
                    for line in fh:
                        if b" /dev/shm/" in line:
                            inodes.add(int(line.split()[4]))
            except (OSError, ValueError, IndexError):
                continue
        if not inodes:
            return
        try:
            with os.scandir("/dev/shm") as entries:
                for e in entries:
                    if e.name.startswith("sem.mp-") and e.inode() in inodes:
                        self.semaphores[e.path] = e.inode()
        except OSError:  # pragma: no cover
            pass

    def _kill_below(self) -> None:
        """Freeze every process below this one (SIGSTOP, until no new one appears), then kill them all."""
        frozen: set[int] = set()
        for _ in range(100):
            new = [p for p in descendants(os.getpid()) if p not in frozen]
            if not new:
                break
            for p in new:
                _signal(p, signal.SIGSTOP)
                frozen.add(p)
        self._note_semaphores()
        for p in frozen:
            _signal(p, signal.SIGKILL)

    def _end_below(self) -> None:
        """Nothing the command started outlives it: what has not exited :data:`LINGER` seconds (0.2 s after
        a signal) after the command is killed, and every process below is reaped."""
        linger_until = time.monotonic() + (0.2 if self.stop is not None else LINGER)
        give_up = linger_until + 5.0
        while True:
            self._reap()
            left = [p for p in descendants(os.getpid()) if (_stat_fields(p) or ["Z"])[0] != "Z"]
            if not left:
                self._reap()
                if not descendants(os.getpid()):
                    return
            now = time.monotonic()
            if left and now >= linger_until:
                self._kill_below()
            if now >= give_up:  # pragma: no cover - a process that cannot be killed (uninterruptible I/O)
                return
            time.sleep(0.01)

    # -- what is left ------------------------------------------------------------------------------
    def _clean(self) -> None:
        for raw in self.temporary:
            path = os.fsdecode(raw)
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
            except OSError:
                pass
        for path, inode in self.semaphores.items():
            try:
                if os.lstat(path).st_ino == inode:
                    os.unlink(path)
            except OSError:
                pass

    def _exit_status(self) -> int:
        code = os.waitstatus_to_exitcode(self.status) if self.status is not None else 128 + signal.SIGKILL
        stop = self.stop or self.reported
        if stop is not None and (self.reported is not None or self.killed or code < 0):
            self._line(WORDS.get(stop, f"stopped by signal {signal.Signals(stop).name}"))
            return 128 + stop
        if code < 0:  # the command was killed by another signal (the kernel's OOM killer, ...)
            self._line(f"stopped by signal {signal.Signals(-code).name}")
            return 128 - code
        return code  # it had finished when the signal came: its own status, and its files are complete

    def _line(self, text: str) -> None:
        try:
            # on a terminal, first clear the line a progress bar of a killed command may have left
            clear = "\r\x1b[K" if sys.stderr.isatty() else ""
            sys.stderr.write(f"{clear}redactopt {self.command}: {text}\n")
            sys.stderr.flush()
        except (OSError, ValueError):  # pragma: no cover
            pass


def _drain(fd: int) -> list[int]:
    """The signal numbers the wakeup descriptor holds."""
    out = []
    while True:
        try:
            data = os.read(fd, 512)
        except BlockingIOError:
            return out
        if not data:
            return out
        out.extend(data)
