"""docs/settings.md is made from the settings classes: stale, it fails; undocumented, it fails."""

from __future__ import annotations

from pathlib import Path

from centrality.settings_docs import markdown
from centrality.settings_report import settings_classes

PAGE = Path(__file__).resolve().parents[3] / "docs" / "settings.md"


def test_the_settings_page_is_made_from_the_code() -> None:
    assert PAGE.read_text() == markdown(), (
        "docs/settings.md is stale: run `centrality config --markdown > docs/settings.md`"
    )


def test_every_setting_says_what_it_is_for() -> None:
    silent = [
        f"{cls.__qualname__}.{name}"
        for cls in settings_classes()
        for name, field in cls.model_fields.items()
        if not (field.description or "").strip()
    ]
    assert silent == []
