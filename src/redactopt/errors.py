"""Every exception redactopt raises on purpose, in one module.

Wrong types raise ``TypeError`` and wrong values ``ValueError`` (the library's
validators name the parameter and the value).  The classes here add meaning the CLI
maps to exit codes: :class:`PrivacyCheckError` (a mechanism failed the exact check;
exit 1 where a check was asked for, exit 2 where a design was asked for),
:class:`UsageError` (bad usage; exit 2) and :class:`MissingExtraError` (an optional
dependency is not installed; exit 2 with the install hint).  :class:`Interrupted` is a signal that
stops a command (exit 128 + the signal: 130, 143, 129).
"""

from __future__ import annotations

__all__ = ["PrivacyCheckError", "UsageError", "MissingExtraError", "BoundError", "TooLongError", "MissingInputError",
           "ReleaseRefused", "Interrupted"]


class PrivacyCheckError(ValueError):
    """A candidate mechanism failed the exact leakage check after snapping."""


class BoundError(RuntimeError):
    """A claimed upper bound lies below a verified utility: a bug, never clamped away."""


class UsageError(Exception):
    """Bad usage or input: reported on one line, exit status 2."""


class ReleaseRefused(ValueError):
    """A release whose guarantee would be void or whose model is broken, refused before anything is written
    (one line, exit status 2); the message names the option that overrides it where one makes sense."""


class MissingInputError(FileNotFoundError, ValueError):
    """An input file does not exist: a ``FileNotFoundError`` (and, as before, a ``ValueError``)."""


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message says what to install."""


class Interrupted(KeyboardInterrupt):
    """A signal (SIGINT, SIGTERM, SIGHUP) stopped the work: ``signum`` is the signal.

    A ``KeyboardInterrupt``, so whatever cleans up after Ctrl-C cleans up after the others too.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = int(signum)


class TooLongError(ValueError):
    """A run was stopped early because its measured pace projects past its time limit.

    ``seconds`` is the projected run time.
    """

    def __init__(self, message: str, seconds: float) -> None:
        super().__init__(message)
        self.seconds = seconds
