"""Markdown templates (``docs/templates/``): ``{{name}}`` placeholders filled with text or with blocks of lines.

A line that is nothing but ``{{name}}`` whose value is a list of lines becomes those lines
(an empty list removes the line, so an absent section leaves no blank line behind); every
other ``{{name}}`` is replaced by its value as text. A name without a value is an error.
The template's text is used as it is: its final newline ends the output too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "docs" / "templates"
PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def read_template(name: str, folder: Path | None = None) -> str:
    """The text of ``docs/templates/<name>``."""
    return ((folder or TEMPLATES) / name).read_text()


def _value(values: Mapping[str, str | Sequence[str]], name: str) -> str | Sequence[str]:
    if name not in values:
        raise KeyError(f"template placeholder {{{{{name}}}}} has no value")
    return values[name]


def _text(values: Mapping[str, str | Sequence[str]], name: str) -> str:
    value = _value(values, name)
    if not isinstance(value, str):
        raise TypeError(f"template placeholder {{{{{name}}}}} holds lines: it must stand alone on its line")
    return value


def fill(template: str, values: Mapping[str, str | Sequence[str]]) -> str:
    """``template`` with its placeholders filled from ``values`` (see the module docstring)."""
    out: list[str] = []
    for line in template.split("\n"):
        whole = PLACEHOLDER.fullmatch(line)
        if whole and not isinstance(block := _value(values, whole.group(1)), str):
            out.extend(block)
            continue
        out.append(PLACEHOLDER.sub(lambda m: _text(values, m.group(1)), line))
    return "\n".join(out)
