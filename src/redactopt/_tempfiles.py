"""Temporary files and folders, named before they exist so that a stopped command leaves none behind.

Every temporary path redactopt creates (beside an output, or a copy of standard input) is made by
:func:`temp_file` or :func:`temp_dir`.  When the command line runs a command under its supervisor
(:mod:`redactopt.interface.supervise`), each name is sent to the supervisor *before* the path is
created, and again once it has been renamed into place or removed (:func:`settled`); a command
stopped by a signal -- even one stuck in a long solver call and killed -- then leaves nothing:
the supervisor removes every path announced and not settled.  Without a supervisor (the library
in any other program) nothing is sent and these are :func:`tempfile.mkstemp` and
:func:`tempfile.mkdtemp` with the same names.

Names are ``PREFIX`` + the process id + a random part + ``SUFFIX``, created exclusively, private
to the owner (``0o600``/``0o700``) as :mod:`tempfile` makes them.
"""

from __future__ import annotations

import os
import secrets
import tempfile

__all__ = ["listen", "temp_file", "temp_dir", "adopt", "settled", "send_stop"]

#: The supervisor's pipe (its write end in this process), or ``None``: nothing is announced.
_channel: int | None = None


def listen(fd: int | None) -> None:
    """Announce every temporary path of this process on the pipe ``fd`` from now on (``None``: stop)."""
    global _channel
    _channel = fd


def _send(tag: bytes, path: str) -> None:
    if _channel is None:
        return
    os.write(_channel, tag + os.fsencode(os.path.abspath(path)) + b"\0")


def send_stop(signum: int) -> None:
    """Tell the supervisor that the command stopped on signal ``signum`` (it prints the one line)."""
    if _channel is not None:
        os.write(_channel, b"!" + str(int(signum)).encode() + b"\0")


def _names(dir: str | os.PathLike[str] | None, prefix: str, suffix: str):  # type: ignore[no-untyped-def]
    folder = os.fspath(tempfile.gettempdir() if dir is None else dir)
    for _ in range(100):
        yield os.path.join(folder, f"{prefix}{os.getpid()}.{secrets.token_hex(4)}{suffix}")
    raise FileExistsError(f"{folder}: no free temporary name {prefix}...{suffix}")


def temp_file(*, dir: str | os.PathLike[str] | None = None, prefix: str = "tmp", suffix: str = "") -> tuple[int, str]:
    """A new empty file, as :func:`tempfile.mkstemp`: ``(open descriptor, path)``, announced first."""
    for path in _names(dir, prefix, suffix):
        _send(b"+", path)
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600), path
        except FileExistsError:
            _send(b"-", path)
        except BaseException:
            _send(b"-", path)
            raise
    raise AssertionError("unreachable")  # pragma: no cover


def temp_dir(*, dir: str | os.PathLike[str] | None = None, prefix: str = "tmp", suffix: str = "") -> str:
    """A new empty folder, as :func:`tempfile.mkdtemp`, announced first."""
    for path in _names(dir, prefix, suffix):
        _send(b"+", path)
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            _send(b"-", path)
        except BaseException:
            _send(b"-", path)
            raise
    raise AssertionError("unreachable")  # pragma: no cover


def adopt(path: str | os.PathLike[str]) -> None:
    """A temporary path another library made (multiprocessing's ``pymp-*`` folder, removed by its own exit
    handler): removed by the supervisor too if the command is stopped before that handler runs."""
    _send(b"+", os.fspath(path))


def settled(path: str | os.PathLike[str]) -> None:
    """``path`` (of :func:`temp_file` or :func:`temp_dir`) was renamed into place or removed: no longer
    the supervisor's to remove."""
    _send(b"-", os.fspath(path))
