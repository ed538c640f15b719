"""The README stays a front page (what Centrality is, the two commands, the demo's story, the
operator's first commands, links), and every relative link of it and of docs/ leads to a file of
the repository: a page moved or renamed without its links fails here, not in a reader's browser.
Anchors are not checked, only that the page they point into exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 200
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1", re.S)
# [text](target "title"), text possibly holding one level of brackets; images alike.
_INLINE = re.compile(r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, …


def prose(text: str) -> str:
    """The page without fenced code blocks, and with code spans emptied of what they hold (a
    bracket in code is no link), though a code span inside a link's text keeps the link."""
    kept: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            kept.append(line)
    return _CODE_SPAN.sub("code", "\n".join(kept))


def relative_links(text: str) -> list[str]:
    body = prose(text)
    targets = _INLINE.findall(body) + _REFERENCE.findall(body)
    return [t for t in targets if not _EXTERNAL.match(t)]


def broken(page: Path, text: str) -> list[str]:
    """The relative links of `text`, standing at `page`, that lead out of the repository (or into
    its .git) or to nothing."""
    found = []
    for target in relative_links(text):
        path = target.split("#", 1)[0]
        resolved = (page.parent / path).resolve() if path else page
        inside = resolved.is_relative_to(ROOT) and ".git" not in resolved.relative_to(ROOT).parts
        if not (inside and resolved.exists()):
            found.append(target)
    return found


def test_the_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move detail to docs/"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_of_the_repository(page: Path) -> None:
    assert broken(page, page.read_text()) == []


def test_links_are_found_where_markdown_has_them_and_not_in_code() -> None:
    page = """See [the design](docs/architecture.md#events), [`cli.md`](cli.md) and
![a picture](img/x.png "title"), [a site](https://example.com), [here](#limits).

[ref]: ../BENCHMARKS.md

`x[0](y)` is code, and so is this:

```python
[t for t in found](x)
```
"""
    assert sorted(relative_links(page)) == sorted(
        ["docs/architecture.md#events", "cli.md", "img/x.png", "#limits", "../BENCHMARKS.md"]
    )


def test_a_link_out_of_the_repository_or_to_nothing_is_broken() -> None:
    text = "[design](../../shared/DESIGN.md) [gone](gone.md) [ok](rules.md#tests) [self](#top)"
    # As though it stood beside the other pages of docs/.
    assert broken(ROOT / "docs" / "cli.md", text) == ["../../shared/DESIGN.md", "gone.md"]
