"""Bring parsed YAML values to what their schema means, before the schema judges them.

One pass over a value and its JSON Schema, used for every file value, ``--set``
value and command-line option (:func:`srperf.config.loader.check_value`), so
that each key, whatever block declares it, gets the same treatment:

* an integer setting written as a whole float (``64.0``, ``port: 22.0``) becomes
  that integer; a fractional one stays a float and the schema refuses it;
* YAML 1.1 reads ``off``/``on``/``yes``/``no`` as booleans: where the schema's
  choices are the words ``off``/``on`` (``conformance: off``) the word is restored;
* every text is one line (no control character: a trailing newline would pass a
  ``$`` pattern and make names that tools cannot see) and at most
  :data:`MAX_STRING` characters; a schema may mark a key ``"multiline": true``.

Anything else is left for the schema to refuse with its bound named.
"""

from __future__ import annotations

import math
import re
from typing import Any

from srperf.errors import ConfigError

MAX_STRING = 4096
"""Longest text value of any key (characters); names have lower limits of their own."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def key_path(path: list[Any]) -> str:
    """``a.b[2].c`` for the path ``["a", "b", 2, "c"]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _types(schema: dict[str, Any]) -> set[str]:
    t = schema.get("type")
    return set(t) if isinstance(t, list) else {t} if t else set()


def _choices(schema: dict[str, Any]) -> list[Any]:
    return list(schema.get("enum", [])) + ([schema["const"]] if "const" in schema else [])


def _scalar(file: str, value: Any, schema: dict[str, Any], path: list[Any]) -> Any:
    if isinstance(value, str):
        shown: Any = value
        if schema.get("secret"):
            from srperf.safety.redact import redacted_command

            shown = redacted_command(value)
        if _CONTROL.search(value) and not schema.get("multiline"):
            raise ConfigError(file, key_path(path), shown,
                              "holds a control character (a newline, tab or NUL): values "
                              "are one line of text")
        if len(value) > MAX_STRING:
            raise ConfigError(file, key_path(path), shown,
                              f"{len(value)} characters: longer than the limit of "
                              f"{MAX_STRING} (MAX_STRING)")
        return value
    if isinstance(value, bool):
        words = [c for c in _choices(schema) if c in ("off", "on")]
        if words and "boolean" not in _types(schema):
            word = "on" if value else "off"
            return word if word in words else value
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        types = _types(schema)
        if "integer" in types and "number" not in types:
            return int(value)
        if any(isinstance(c, int) and not isinstance(c, bool) and c == value
               for c in _choices(schema)):
            return int(value)
    return value


def coerce(file: str, value: Any, schema: Any, path: list[Any] | None = None) -> Any:
    """``value`` brought to ``schema`` (containers changed in place); ConfigError for
    a text that is not one line or too long."""
    path = path or []
    if not isinstance(schema, dict):
        schema = {}
    alternatives = [a for a in schema.get("oneOf", []) + schema.get("anyOf", [])
                    if isinstance(a, dict)]
    if isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key in list(value):
            if isinstance(key, str):
                _scalar(file, key, {}, path + [key])
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            if sub is None:
                sub = next((a.get("properties", {}).get(key) for a in alternatives
                            if key in a.get("properties", {})), None)
            value[key] = coerce(file, value[key], sub, path + [key])
        return value
    if isinstance(value, list):
        items = schema.get("items")
        if items is None:
            items = next((a["items"] for a in alternatives if isinstance(a.get("items"), dict)),
                         None)
        for i, item in enumerate(value):
            value[i] = coerce(file, item, items, path + [i])
        return value
    out = _scalar(file, value, schema, path)
    if out is value:
        for alt in alternatives:
            changed = _scalar(file, value, alt, path)
            if changed is not value:
                return changed
    return out


__all__ = ["MAX_STRING", "coerce", "key_path"]
