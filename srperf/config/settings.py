"""Settings declared once: a dataclass field carries its doc, unit, default and schema.

``setting(default, doc, unit=..., schema=...)`` declares one field;
:class:`Settings` derives from those declarations the JSON Schema of the YAML
block (:meth:`Settings.json_schema`) and builds an instance from a parsed
mapping (:meth:`Settings.from_mapping`).  A field whose type is itself a
:class:`Settings` subclass is a nested block.  Adding a setting is one
declaration; the schema, the loader and ``srperf ... --set KEY=VALUE`` follow.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Callable, Mapping, TypeVar

S = TypeVar("S", bound="Settings")


def setting(default: Any, doc: str, unit: str = "", schema: Mapping[str, Any] | None = None,
            parse: Callable[[Any], Any] | None = None, **extra: Any) -> Any:
    """A dataclass field with its documentation, unit, JSON Schema and parser (applied to
    the YAML value)."""
    meta = {"doc": doc, "unit": unit, "schema": dict(schema or {}), "parse": parse}
    if isinstance(default, (dict, list, set)) or (
            isinstance(default, type) and issubclass(default, Settings)):
        factory = default if isinstance(default, type) else (lambda d=default: type(d)(d))
        return dataclasses.field(default_factory=factory, metadata=meta, **extra)
    return dataclasses.field(default=default, metadata=meta, **extra)


class SettingError(ValueError):
    """A value its setting's parser refused: ``key`` is the path below the block."""

    def __init__(self, key: str, value: Any, reason: str) -> None:
        super().__init__(f"{key} = {value!r}: {reason}")
        self.key, self.value, self.reason = key, value, reason


class Settings:
    """Mixin for frozen dataclasses whose fields are declared with :func:`setting`."""

    @classmethod
    def _nested(cls, f: dataclasses.Field) -> type["Settings"] | None:
        hint = typing.get_type_hints(cls).get(f.name)
        return hint if isinstance(hint, type) and issubclass(hint, Settings) else None

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON Schema of this block (unknown keys refused)."""
        props: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            nested = cls._nested(f)
            schema = nested.json_schema() if nested else dict(f.metadata.get("schema", {}))
            doc = f.metadata.get("doc", "")
            unit = f.metadata.get("unit", "")
            if doc:  # the field's own words first, then what the type says
                own = f"{doc} ({unit})" if unit else doc
                if nested is None and schema.get("description"):
                    own = f"{own}: {schema['description']}"
                schema["description"] = own
            if unit and nested is None:
                schema["unit"] = unit   # what a bound's message names (config.numbers)
            props[f.name] = schema
        return {"type": "object", "additionalProperties": False, "properties": props,
                "description": (cls.__doc__ or "").strip().splitlines()[0]
                if cls.__doc__ else ""}

    @classmethod
    def from_mapping(cls: type[S], data: Mapping[str, Any]) -> S:
        """An instance from a mapping already checked against :meth:`json_schema`."""
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name not in data:
                continue
            nested = cls._nested(f)
            value = data[f.name]
            parse = f.metadata.get("parse")
            try:
                kwargs[f.name] = nested.from_mapping(value or {}) if nested \
                    else parse(value) if parse else value
            except SettingError as exc:
                raise SettingError(f"{f.name}.{exc.key}", exc.value, exc.reason) from None
            except (ValueError, TypeError) as exc:
                raise SettingError(f.name, value, str(exc)) from None
        try:
            return cls(**kwargs)  # type: ignore[call-arg]
        except SettingError:
            raise
        except (ValueError, TypeError) as exc:  # a __post_init__ check
            raise SettingError("", dict(data), str(exc)) from None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def describe(cls, indent: str = "") -> list[str]:
        """One line per setting: name, default, unit and doc (for ``--help`` texts)."""
        lines = []
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            nested = cls._nested(f)
            if nested:
                lines.append(f"{indent}{f.name}:")
                lines += nested.describe(indent + "  ")
                continue
            default = f.default if f.default is not dataclasses.MISSING else "-"
            unit = f" {f.metadata.get('unit')}" if f.metadata.get("unit") else ""
            lines.append(f"{indent}{f.name} [{default}{unit}]: {f.metadata.get('doc', '')}")
        return lines


__all__ = ["Settings", "SettingError", "setting"]
