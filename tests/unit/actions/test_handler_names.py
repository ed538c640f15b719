"""An allowlist names handlers: the registry lists every one a worker loads."""

from __future__ import annotations

import actions.handlers  # noqa: F401  (registers the built-in handlers)
from actions.registry import handler_names
from actions.settings import ActionsSettings


def test_every_built_in_handler_is_named_once_and_an_allowlist_of_them_allows_each() -> None:
    names = handler_names()
    assert {"restart_job", "quarantine_nodes", "release_nodes", "run_benchmark"} <= set(names)
    assert names == sorted(set(names))
    settings = ActionsSettings(allow={"off": [], "*": names})
    assert all(settings.allows("on", n) for n in names)
    assert not any(settings.allows("off", n) for n in names)
