"""Allow-list unpickler for NAVSIM/OpenScene logs: logs are data, never code.

A NAVSIM log is a pickle of plain containers and numpy arrays. ``safe_load_pickle``
resolves only the globals needed to rebuild those (numpy arrays, dtypes and scalars,
a few builtin containers); any other global -- ``os.system``, ``builtins.eval``, a
class from some package -- stops the load with :class:`UnsafePickleError` naming the
global, before anything it refers to is called.
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import Any

__all__ = ["ALLOWED_GLOBALS", "UnsafePickleError", "safe_load_pickle", "safe_loads_pickle"]

# numpy moved its internals from ``numpy.core`` to ``numpy._core`` in 2.0; pickles
# written by either version name one or the other.
_NUMPY_CORE = ("numpy.core", "numpy._core")

ALLOWED_GLOBALS: frozenset[tuple[str, str]] = frozenset(
    {
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        *((f"{core}.multiarray", "_reconstruct") for core in _NUMPY_CORE),
        *((f"{core}.multiarray", "scalar") for core in _NUMPY_CORE),
        *((f"{core}.numeric", "_frombuffer") for core in _NUMPY_CORE),
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("builtins", "bytearray"),
        ("builtins", "complex"),
        ("builtins", "slice"),
        ("builtins", "range"),
        ("collections", "OrderedDict"),
        ("__builtin__", "set"),  # protocol-2 pickles written by Python 2
    }
)

# numpy dtype classes (``numpy.dtypes.Float64DType``) appear in pickles of dtypes
# written by numpy >= 1.25 with protocol >= 2; they only build dtypes.
_NUMPY_DTYPE_MODULE = "numpy.dtypes"


class UnsafePickleError(pickle.UnpicklingError):
    """The pickle reached for a global outside the allow-list; nothing was run."""

    def __init__(self, module: str, name: str, source: str = "") -> None:
        self.module = module
        self.name = name
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(
            f"{where}refusing to load pickle: it reaches for global '{module}.{name}', which is not "
            "numpy data or a plain builtin container (NAVSIM logs hold only those)"
        )


def _latin1_bytes(text: str, encoding: str = "latin1") -> bytes:
    """Stand-in for ``_codecs.encode``: protocols 0-2 store ``bytes`` as latin-1 text."""
    if not isinstance(text, str) or encoding.replace("-", "").replace("_", "").lower() != "latin1":
        raise pickle.UnpicklingError(f"refusing _codecs.encode with encoding {encoding!r}")
    return text.encode("latin1")


class _AllowListUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BufferedIOBase, source: str) -> None:
        super().__init__(file)
        self._source = source

    def find_class(self, module: str, name: str) -> Any:
        allowed = (module, name) in ALLOWED_GLOBALS or (
            module == _NUMPY_DTYPE_MODULE and name.endswith("DType") and name.isidentifier()
        )
        if (module, name) == ("_codecs", "encode"):
            return _latin1_bytes
        if allowed:
            # numpy is imported lazily so that a refused pickle never imports it either
            if module.startswith("numpy"):
                import numpy  # noqa: F401
            if module == "__builtin__":
                module = "builtins"
            return super().find_class(module, name)
        raise UnsafePickleError(module, name, self._source)

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError("<persistent id>", repr(pid)[:60], self._source)


def safe_loads_pickle(data: bytes, source: str = "") -> Any:
    """Unpickle ``data`` with the allow-list; ``source`` names it in errors."""
    return _AllowListUnpickler(io.BytesIO(data), source).load()


def safe_load_pickle(path: str | Path) -> Any:
    """Load the pickle at ``path`` with the allow-list unpickler.

    Raises :class:`UnsafePickleError` (naming the file and the global) for a pickle
    that reaches for code, ``FileNotFoundError`` for a missing file and
    ``pickle.UnpicklingError`` (naming the file) for a truncated or corrupt one.
    """
    path = Path(path)
    data = path.read_bytes()
    try:
        return safe_loads_pickle(data, str(path))
    except UnsafePickleError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as exc:
        raise pickle.UnpicklingError(f"{path}: not a readable pickle ({type(exc).__name__}: {exc})") from exc
