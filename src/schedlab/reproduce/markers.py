"""The README's reproduction tables, generated: blocks between markers replaced by a study's
``table.md``.

A block is ``<!-- reproduce:NAME -->`` … ``<!-- /reproduce:NAME -->`` on lines of their own;
``schedlab reproduce NAME --update README.md`` rewrites what lies between them with the table the
run just wrote, so the README shows what the code measured and nothing typed by hand.
"""

from __future__ import annotations

import re
from pathlib import Path

from schedlab.errors import InputError


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(^<!-- reproduce:{re.escape(name)} -->\n)(.*?)(^<!-- /reproduce:{re.escape(name)} -->$)",
        re.S | re.M,
    )


def blocks(text: str) -> list[str]:
    """Names of the studies with a block in ``text``, in order."""
    return re.findall(r"^<!-- reproduce:([\w.-]+) -->$", text, re.M)


def replace_block(text: str, name: str, table: str) -> str:
    """``text`` with study ``name``'s block holding ``table``; InputError if it has no block."""
    pattern = _pattern(name)
    if not pattern.search(text):
        raise InputError(f"no '<!-- reproduce:{name} -->' … '<!-- /reproduce:{name} -->' block")
    body = table if table.endswith("\n") else table + "\n"
    return pattern.sub(lambda m: m.group(1) + body + m.group(3), text, count=1)


def block(text: str, name: str) -> str | None:
    """What study ``name``'s block holds (None: no block)."""
    match = _pattern(name).search(text)
    return None if match is None else match.group(2)


def update_file(path: Path, tables: dict[str, str]) -> list[str]:
    """Rewrite the blocks of ``path`` for the studies in ``tables`` that have one; the names
    updated. A file with none of them is an error (the wrong file was named)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    present = [name for name in tables if name in blocks(text)]
    if not present:
        raise InputError(f"{path} has no reproduction block for {', '.join(tables)}")
    for name in present:
        text = replace_block(text, name, tables[name])
    from schedlab.results import atomic_write

    atomic_write(path, lambda fh: fh.write(text))
    return present
