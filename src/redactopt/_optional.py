"""One helper for optional and heavy imports, with one install hint.

Heavy back-ends (PySCIPOpt, Dask, matplotlib) are imported where they are used, through
:func:`require`, so that ``import redactopt`` stays light and a missing one fails with
one sentence naming what to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from redactopt.errors import MissingExtraError

__all__ = ["require"]

#: What to install for each optional module (the top-level package name).
_HINTS = {
    "pyscipopt": "pip install pyscipopt",
    "dask": "pip install 'redactopt[dask]'",
    "distributed": "pip install 'redactopt[dask]'",
    "matplotlib": "pip install matplotlib",
}


def require(module: str, *, purpose: str) -> ModuleType:
    """Import ``module`` or raise :class:`~redactopt.errors.MissingExtraError`.

    Parameters
    ----------
    module : str
        Dotted module name, e.g. ``"dask.dataframe"``.
    purpose : str
        What needs it, for the message (e.g. ``"the Dask back-end"``).
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".")[0]
        hint = _HINTS.get(top, f"pip install {top}")
        raise MissingExtraError(f"{purpose} needs the optional package {top!r}: {hint}") from None
