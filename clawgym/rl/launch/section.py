"""The base of every config section: unknown keys are errors, closed sets of values are ``Literal`` types, and
the keys a plain config declares (the loop's, the trainer's, LoRA's) are taken from it with :func:`plain_fields`.

:mod:`~clawgym.rl.launch.schema` builds the one config model from these pieces.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Callable, ClassVar, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from clawgym.errors import UsageError


class ConfigError(UsageError):
    """A launcher config (or a ``--set`` override) is invalid; the message says what and where."""


class Section(BaseModel):
    """Unknown keys are errors; numbers may stand for strings (``--set policy.model=7``)."""

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)
    # the keys taken from a plain config (plain_fields): key -> (the plain config's class, its field's name)
    plain_keys: ClassVar[dict[str, tuple[type, str]]] = {}

    @field_validator("*", mode="before")
    @classmethod
    def _comma_list(cls, value: Any, info: Any) -> Any:
        """``--set trainer.lora.target_modules=q_proj,v_proj``: a comma string for a list of strings."""
        annotation = cls.model_fields[info.field_name].annotation
        if isinstance(value, str) and getattr(annotation, "__origin__", None) is list:
            return [v.strip() for v in value.split(",") if v.strip()]
        return value

    @field_validator("*", mode="wrap")
    @classmethod
    def _open_choice(cls, value: Any, handler: Callable[[Any], Any], info: Any) -> Any:
        """A string (or number) for a ``Literal`` key passes: :func:`validate` checks it with the other problems."""
        if (isinstance(value, (str, int, float)) and not isinstance(value, bool)
                and choices(cls.model_fields[info.field_name].annotation)):
            return str(value)
        return handler(value)


def choices(annotation: Any) -> tuple[str, ...]:
    """The values of a ``Literal`` type or of a union of them; () for any other type."""
    if typing.get_origin(annotation) is Literal:
        return typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        parts = [choices(arg) for arg in typing.get_args(annotation)]
        if all(parts):
            return tuple(value for part in parts for value in part)
    return ()


def choice_problem(name: str, value: Any, allowed: Sequence[str]) -> str | None:
    """The message for a value outside a closed set (None when it is in), naming every allowed value."""
    if value in allowed:
        return None
    return f"{name} must be one of {', '.join(v or repr(v) for v in allowed)}, got {value!r}"


def plain_fields(plain: type, *names: str, skip: Sequence[str] = (),
                 **renamed: str) -> Callable[[type[Section]], type[Section]]:
    """Add fields of the plain dataclass ``plain`` to the decorated section, with ``plain``'s types and defaults.

    ``renamed`` (config key = field) and ``names`` (the field's own name) pick the fields; with neither the
    section takes every field but ``skip``. A key the section declares itself stays its own (a config-only
    type or default). The decorated section (a subclass of the same name) records the keys it took in
    ``plain_keys``, which :func:`from_sections` reads back. YAML has no tuples: a
    tuple field is a list here. A ``Literal`` field keeps its type (its values are checked by :func:`validate`).
    """
    hints = typing.get_type_hints(plain)
    fields = {field.name: field for field in dataclasses.fields(plain)}
    keys = {**renamed, **{name: name for name in names}} or {name: name for name in fields if name not in skip}

    def decorate(section: type[Section]) -> type[Section]:
        taken = {key: name for key, name in keys.items() if key not in section.model_fields}
        model = create_model(section.__name__, __base__=section, __module__=section.__module__,
                             __doc__=section.__doc__,
                             **{key: _section_field(hints[name], fields[name]) for key, name in taken.items()})
        model.plain_keys = {**section.plain_keys, **{key: (plain, name) for key, name in taken.items()}}
        return model

    return decorate


def _section_field(annotation: Any, field: dataclasses.Field) -> tuple[Any, Any]:
    default = field.default if field.default is not dataclasses.MISSING else field.default_factory()
    if typing.get_origin(annotation) is tuple:
        item, *more = typing.get_args(annotation)
        if more != [Ellipsis]:
            raise TypeError(f"{field.name}: only a tuple[X, ...] field can be a config key (a YAML list)")
        return list[item], Field(default_factory=lambda: list(default))
    return annotation, default


def taken(*sections: type[Section]) -> tuple[str, ...]:
    """The names of the plain fields the sections took (so another section can skip them)."""
    return tuple(name for section in sections for _, name in section.plain_keys.values())


def from_sections(target: type, *sections: Any, **given: Any) -> Any:
    """Build the plain config ``target``: the ``given`` values, then the values of the keys the ``sections``
    took from ``target`` (their ``plain_keys``; the first section wins). A field no key sets keeps its default.
    """
    values = dict(given)
    for section in sections:
        for key, (plain, name) in type(section).plain_keys.items():
            if plain is target and name not in values:
                values[name] = getattr(section, key)
    return target(**values)
