"""The examples a docs page marks (`<!-- example: NAME -->` before a code block): tests run them
as they are written on the page, so the page cannot drift from what works."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_EXAMPLE = re.compile(r"<!-- example: (\S+) -->\n```\w*\n(.*?)```", re.S)


def examples(page: str) -> dict[str, str]:
    found = dict(_EXAMPLE.findall((ROOT / page).read_text()))
    assert found, f"no examples in {page}"
    return found
