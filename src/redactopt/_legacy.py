"""Old flat module paths (``redactopt.leakage``, ``redactopt.design``, ...) kept for one release.

Release 0.1 had 23 flat modules; they now live in the layer folders (``model``, ``judge``,
``paper``, ``engine``, ``release``, ``interface``).  ``import redactopt.leakage`` still works:
this finder hands back the moved module itself (the same object, so patches and
``isinstance`` checks see one module) and warns once with the new path.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType

__all__ = ["MOVED", "install"]

#: old flat name -> new dotted path under ``redactopt``
MOVED = {
    "chain": "model.chain",
    "influence": "model.influence",
    "leakage": "judge.leakage",
    "exact": "judge.exact",
    "attack": "judge.attack",
    "certify": "judge.certify",
    "audit": "judge.audit",
    "mechanisms": "paper.mechanisms",
    "design": "engine.design",
    "tuning": "engine.tuning",
    "joint": "engine.joint",
    "compare": "engine.compare",
    "data": "release.data",
    "fit": "release.fit",
    "apply": "release.apply",
    "dask_backend": "release.dask_backend",
    "cli": "interface.cli",
    "cli_data": "interface.cli_data",
    "report": "interface.report",
    "bench": "interface.bench",
}


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self) -> None:
        self._specs: dict[str, object] = {}

    def find_spec(self, fullname: str, path: object = None, target: object = None):
        head, _, tail = fullname.partition(".")
        if head == "redactopt" and tail in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec) -> ModuleType:
        new = "redactopt." + MOVED[spec.name.partition(".")[2]]
        warnings.warn(f"{spec.name} moved to {new}; the old path will be removed in the next release",
                      DeprecationWarning, stacklevel=3)
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The moved module is already executed; give it back its own spec."""
        module.__spec__ = self._specs.pop(module.__spec__.name, module.__spec__)


class _Package(ModuleType):
    """The package module: an old flat path never rebinds a top-level function of the same name."""

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, ModuleType) and name in MOVED and callable(self.__dict__.get(name)) \
                and not isinstance(self.__dict__.get(name), ModuleType):
            return  # importlib binds redactopt.<old> after loading it: the function stays
        super().__setattr__(name, value)


def install(clashing: dict[str, ModuleType]) -> None:
    """Register the finder, and the old paths whose name is also a top-level function.

    ``redactopt.design`` and ``redactopt.audit`` are functions of the package; importing
    the old module path through the finder would rebind those attributes to modules, so
    those two paths are entered in ``sys.modules`` up front.
    """
    sys.modules["redactopt"].__class__ = _Package
    for name, module in clashing.items():
        sys.modules.setdefault(f"redactopt.{name}", module)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
