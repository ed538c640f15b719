"""`by_type`: singledispatch's choice, looked up once per class."""

from __future__ import annotations

from functools import singledispatch

from streams.state.dispatch import by_type


class Base:
    pass


class Child(Base):
    pass


def test_it_calls_what_singledispatch_would_even_after_a_later_registration() -> None:
    @singledispatch
    def name(value: object, suffix: str) -> str:
        return "object" + suffix

    call = by_type(name)

    @name.register
    def _(value: Base, suffix: str) -> str:
        return "base" + suffix

    assert call(Child(), "!") == "base!"  # a subclass gets its base's implementation
    assert call(1, "?") == "object?"

    @name.register
    def _(value: Child, suffix: str) -> str:
        return "child" + suffix

    assert call(Child(), "") == "child" == name(Child(), "")
