"""How a launcher in the repository's ``bench/`` runs a benchmark: the flags of its ``wamdiff2 bench`` sub-command."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence


def run_script(prog: str, description: str, add_arguments: Callable[[argparse.ArgumentParser], None],
               run: Callable[[argparse.Namespace], int], argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: the command line) with ``add_arguments`` and ``run`` the benchmark."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_arguments(parser)
    return int(run(parser.parse_args(argv)) or 0)
