"""`centrality --help` groups every command by what people do with it."""

from __future__ import annotations

from centrality.cli import HELP_PANELS, app


def test_every_command_is_in_one_panel() -> None:
    names = [c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands]
    names += [g.name or "" for g in app.registered_groups]
    listed = [n for panel in HELP_PANELS.values() for n in panel]
    assert len(listed) == len(set(listed)), "a command in two panels"
    assert sorted(set(names) - set(listed)) == [], "commands in no panel"
    assert {c.rich_help_panel for c in app.registered_commands} <= set(HELP_PANELS)
