"""Registry of event types: the decorator that declares one, and the union used to decode any."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar, Union

from pydantic import Field, TypeAdapter

from schemas.envelope import Event

E = TypeVar("E", bound=type[Event])

_EVENTS: dict[str, type[Event]] = {}


def event(topic: str) -> Callable[[E], E]:
    """Register an event class under its `type` literal and bind it to a catalog topic.

    Returns the class unchanged, so declaring a new event is one decorated class in one module.
    """

    def register(cls: E) -> E:
        type_name = _type_literal(cls)
        if type_name in _EVENTS and _EVENTS[type_name] is not cls:
            raise ValueError(f"event type {type_name!r} is registered twice")
        cls.topic = topic
        _EVENTS[type_name] = cls
        _ADAPTERS.clear()
        return cls

    return register


def event_types() -> dict[str, type[Event]]:
    return dict(_EVENTS)


def union_adapters(
    only: tuple[type[Event], ...] | None = None,
) -> tuple[TypeAdapter[Any], TypeAdapter[Any]]:
    """Validators for one event and for a batch, over every registered type or `only` these
    (built again after a registration): pydantic-core parses and validates the JSON in one pass.
    Building the whole union builds every event model (~0.2 s): a reader of two types, such as
    `centrality nodes`, need not."""
    cached = _ADAPTERS.get(only)
    if cached is None:
        types = tuple(_EVENTS.values()) if only is None else only
        one: Any = (
            Annotated[Union[types], Field(discriminator="type")]  # noqa: UP007
            if len(types) > 1
            else types[0]
        )
        cached = _ADAPTERS[only] = (TypeAdapter(one), TypeAdapter(list[one]))
    return cached


def build_decoders() -> None:
    """Build now what decoding any registered event needs: each event model's validator and
    the whole union's. They are built on first use (`defer_build`), so that a command reading
    two types starts fast; a long-running consumer would pay them on the way instead: ~0.2 s
    at its first record (the union), and again, type by type, at the first record of each
    type that the union refuses (the slow path, which names what is wrong, validates with the
    type's own model). Hostile input is where that comes first. Workers call this as they
    start, and only events registered by then are built."""
    for cls in _EVENTS.values():
        cls.model_rebuild()
    union_adapters()


# On the decode path of every message: a lookup, not a comparison of the whole registry.
_ADAPTERS: dict[tuple[type[Event], ...] | None, tuple[TypeAdapter[Any], TypeAdapter[Any]]] = {}


def event_class(type_name: str) -> type[Event]:
    try:
        return _EVENTS[type_name]
    except KeyError:
        raise UnknownEventType(type_name) from None


class UnknownEventType(LookupError):
    def __init__(self, type_name: str) -> None:
        super().__init__(f"unknown event type {type_name!r}")
        self.type_name = type_name


def _type_literal(cls: type[Event]) -> str:
    field = cls.model_fields["type"]
    args: tuple[Any, ...] = getattr(field.annotation, "__args__", ())
    if len(args) != 1 or not isinstance(args[0], str):
        raise TypeError(f"{cls.__name__}.type must be Literal['<Name>']")
    return args[0]
