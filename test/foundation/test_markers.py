"""test/slow_tests.txt names tests that exist, so a renamed slow test does not slip into `make test-fast`."""

from __future__ import annotations

import re

from conftest import slow_tests
from helpers_ros import REPO


def test_every_slow_entry_names_an_existing_test():
    stale = []
    for entry in sorted(slow_tests()):
        path, _, name = entry.partition("::")
        file = REPO / path
        if not file.is_file():
            stale.append(f"{entry}: no such file")
            continue
        function = name.split("[", 1)[0].split("::")[-1]
        if function and not re.search(rf"^\s*(async\s+)?def {re.escape(function)}\(", file.read_text(), re.MULTILINE):
            stale.append(f"{entry}: no test {function} in {path}")
    assert not stale, "stale entries of test/slow_tests.txt:\n" + "\n".join(stale)
