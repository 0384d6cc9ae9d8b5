"""Every output of a command is checked before anything is read, fitted or designed (issue 37).

Each command lists the files it may write (:class:`Output`: the option, the path as the user gave
it, what it holds) and calls :func:`check_outputs` first.  Refused, each in one line naming the
option and the path exactly as given, exit status 2 (bad usage), nothing written:

* a name whose extension says another format than the one written (``--out o.json`` for a table,
  ``--format json --out o.csv``, a figure not ``.png``/``.svg``, a page not ``.html``/``.htm``);
* a directory that does not exist, or does not take a new file (a file is created there and
  removed again: the file system's answer, whoever runs it -- ``/proc``, a read-only mount);
* a path that is a directory (except a Dask release's output folder);
* an existing file without ``--force`` (``--force`` overwrites every output of the command, and is
  refused in a command that writes no file);
* ``-`` where standard output cannot take it, two outputs on standard output, two outputs naming
  the same file, an output naming an input.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from redactopt.errors import UsageError
from redactopt.io import STDIO, check_output_dir, check_output_path

__all__ = ["Output", "check_outputs", "existing_file", "text_kind"]

#: What a command's ``--format`` writes, as the kind of :func:`redactopt.io.check_output_name`.
_FORMAT_KINDS = {"text": "text", "markdown": "text", "table": "text", "json": "json", "csv": "csv"}


def text_kind(fmt: str | None) -> str:
    """The kind of file ``--format FMT`` writes (text by default)."""
    return _FORMAT_KINDS.get(fmt or "text", "text")


@dataclass(frozen=True)
class Output:
    """One file a command may write: ``option`` (``--out``), ``path`` as given (``None``: not asked for),
    ``kind`` (``json``, ``csv``, ``text``, ``jsonl``, ``table``, ``folder``, ``figure``, ``html`` or ``any``)
    and whether ``-`` (standard output) may stand for it; ``why_not_stdout`` says why not."""

    option: str
    path: str | None
    kind: str
    stdout: bool = True
    why_not_stdout: str = ""


def _same(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, RuntimeError):  # pragma: no cover - a symlink loop: not the same file as far as we know
        return False


def check_outputs(outputs: Iterable[Output], *, force: bool, inputs: Iterable[tuple[str, str | None]] = ()) -> None:
    """Refuse a bad output path (module docstring) before any work: ``UsageError``, ``ValueError`` or
    ``FileExistsError``, each one line naming the option and the path as given (exit status 2).

    ``inputs``: ``(what, path)`` of the files the command reads (``what`` as the message names it,
    e.g. ``"the input"`` or ``"--fit-on"``), none of which an output may be.
    """
    outputs = list(outputs)
    given = [o for o in outputs if o.path is not None]
    for o in given:
        if o.path == STDIO and not o.stdout:
            raise UsageError(f"{o.option} -: needs a file name{o.why_not_stdout}")
    on_stdout = [o for o in given if o.path == STDIO]
    if len(on_stdout) > 1:
        a, b = on_stdout[:2]
        raise UsageError(f"{a.option} - and {b.option} - both ask for standard output; give one of them a file")
    files = [o for o in given if o.path != STDIO]
    for i, a in enumerate(files):
        for b in files[i + 1:]:
            if _same(a.path, b.path):  # type: ignore[arg-type]
                raise UsageError(f"{a.option} {a.path} and {b.option} {b.path} name the same file; give each its own")
    for what, path in inputs:
        if path is None or path == STDIO:
            continue
        for o in files:
            if _same(o.path, path):  # type: ignore[arg-type]
                raise UsageError(f"{o.option} {o.path} is {what}; inputs are never overwritten")
            if o.kind == "folder" and _inside(path, o.path):  # type: ignore[arg-type]
                raise UsageError(f"{o.option} {o.path} holds {what} {path}; inputs are never overwritten")
            if os.path.isdir(path) and _inside(o.path, path):  # type: ignore[arg-type]
                raise UsageError(f"{o.option} {o.path} is inside {what} {path}; inputs are never overwritten")
    for o in files:
        _check_one(o, force)
    if force and not files:
        names = " or ".join(f"{o.option} FILE" for o in outputs)
        raise UsageError(f"--force applies to {names} only (it overwrites an existing output)")


def _inside(path: str, folder: str) -> bool:
    try:
        return Path(folder).resolve() in Path(path).resolve().parents
    except (OSError, RuntimeError):  # pragma: no cover
        return False


def _check_one(o: Output, force: bool) -> None:
    assert o.path is not None
    check_output_dir(o.path, option=o.option)  # where, before what the name says
    if o.kind == "figure":
        from redactopt.interface.plots import check_figure_path

        check_figure_path(o.path, force=force, option=o.option)
    elif o.kind == "html":
        from redactopt.interface.html import check_html_path

        check_html_path(o.path, force=force, option=o.option)
    elif o.kind == "table":
        from redactopt.release.tables import table_format

        try:
            table_format(o.path)
        except ValueError:
            raise ValueError(f"{o.option} {o.path}: unknown table format; use a name ending in .csv/.txt/.tsv "
                             "(text, optionally .gz/.bz2/.xz/.zst) or .parquet") from None
        check_output_path(o.path, force=force, option=o.option)
    elif o.kind == "folder":
        check_output_path(o.path, force=force, option=o.option, directory=True)
    else:
        check_output_path(o.path, force=force, option=o.option, kind=None if o.kind == "any" else o.kind)


def existing_file(path: str | None) -> str | None:
    """``path`` if it names an existing file (an option that takes a file or inline text), else ``None``."""
    return path if path is not None and path != STDIO and os.path.isfile(path) else None
