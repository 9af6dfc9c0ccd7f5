"""Lazy re-exports for the packages' ``__init__`` files (module ``__getattr__``, PEP 562).

A package lists its public names and the submodule defining each; a submodule is
imported on the first use of one of its names, so importing the package stays light
(no torch, transformers or cv2 at import time)::

    _EXPORTS = {"DecodeConfig": "config", "generate": "api"}
    __getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` of ``package`` re-exporting ``exports`` lazily.

    ``exports`` maps a public name to the submodule of ``package`` (relative name)
    that defines it. A name is looked up once: its value is then kept in the
    package's namespace. ``__all__`` is the sorted public names.
    """
    table = dict(exports)
    names = sorted(table)

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__, names
