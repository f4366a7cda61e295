"""A YAML file read and checked against its schema: the same path for file values,
``--set`` overrides and command-line options (:func:`srperf.config.coerce.coerce`, then
the schema, then the error that names the file, key and value).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Sequence


from srperf.config.coerce import coerce
from srperf.config.schema import EXPERIMENT_SCHEMA
from srperf.config.yamlfile import parse_text, read_mapping, refuse_non_finite
from srperf.errors import ConfigError


def _key(path: Any) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def read_yaml(path: Path) -> dict[str, Any]:
    """Parse a YAML mapping strictly (:mod:`srperf.config.yamlfile`); errors name the file."""
    return read_mapping(Path(path))


def suggest(word: str, known: Any) -> str:
    """`` (did you mean 'x'?)`` for the known word nearest to ``word``, else ``""``."""
    close = difflib.get_close_matches(str(word), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _validate(file: str, data: dict[str, Any], schema: dict[str, Any]) -> None:
    """Coerce ``data`` to ``schema`` in place (whole floats, off/on, one-line texts),
    then check it against the schema; ConfigError names the first problem."""
    coerce(file, data, schema)
    import jsonschema   # only where a file is checked: ``srperf --help`` does without

    validator = jsonschema.Draft202012Validator(schema)
    errors = list(validator.iter_errors(data))
    if not errors:
        return
    # An unknown key first (a typo explains the rest: "behaviour" makes "behaviors"
    # missing), then the first error in key order.
    unknown = [e for e in errors if e.validator == "additionalProperties"]
    err = (unknown or sorted(errors, key=lambda e: (list(map(str, e.path)), e.message)))[0]
    if err.validator == "additionalProperties":
        props = err.schema.get("properties", {})
        extra = sorted(set(err.instance) - set(props))
        key = _key(list(err.path) + [extra[0]]) if extra else _key(err.path)
        known = ", ".join(sorted(props))
        raise ConfigError(file, key, err.instance.get(extra[0]) if extra else err.instance,
                          f"unknown key{suggest(extra[0], props) if extra else ''} "
                          f"(known keys here: {known})")
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        raise ConfigError(file, _key(list(err.path) + [missing]), None, "required key missing")
    reason = err.message
    if err.validator == "oneOf":
        reason = err.schema.get("description") or "none of the accepted forms"
    elif err.validator == "enum":
        reason = (f"must be one of {', '.join(map(str, err.validator_value))}"
                  f"{suggest(err.instance, err.validator_value)}")
    elif err.validator == "pattern":
        reason = err.schema.get("pattern_doc") or \
            f"does not match the pattern {err.validator_value}"
    elif err.validator == "type" and err.validator_value in ("integer", ["integer", "null"]):
        reason = "must be a whole number (an integer)"
    elif err.validator in ("maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"):
        reason = {"maximum": "above the limit of", "exclusiveMaximum": "must be below",
                  "minimum": "below the limit of", "exclusiveMinimum": "must be above"}[
            err.validator] + f" {_number(err.validator_value)}" + _unit(err.schema, err.path)
    elif err.validator in ("maxLength", "maxItems"):
        reason = (f"longer than the limit of {err.validator_value} "
                  f"{'characters' if err.validator == 'maxLength' else 'entries'}")
    value = err.instance
    if err.schema.get("secret") and isinstance(value, str):
        from srperf.safety.redact import redacted_command

        value = redacted_command(value)
    raise ConfigError(file, _key(err.path), value, reason)


validate = _validate
"""Coerce and check ``data`` against a schema (any srperf file: suites, provisioning)."""


def _number(value: Any) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def _unit(schema: dict[str, Any], path: Any = ()) -> str:
    """`` ms``: the unit :func:`srperf.config.numbers.unit_of` finds for the key at
    ``path`` ('' when none)."""
    from srperf.config.numbers import unit_of

    keys = [p for p in path if isinstance(p, str)]
    unit = unit_of(schema, keys[-1] if keys else "")
    return f" {unit}" if unit else ""


def _subschema(schema: dict[str, Any], dotted: str) -> dict[str, Any]:
    node = schema
    for part in dotted.split("."):
        node = node["properties"][part]
    return node


def check_value(flag: str, value: Any, dotted: str, schema: dict[str, Any] | None = None,
                file: str = "<command line>") -> Any:
    """A command-line option checked like the file key it stands for: ``dotted`` is the
    key path in ``schema`` (default: the experiment schema); returns the value coerced
    (``--repetitions 1e3`` -> 1000), or ConfigError naming ``flag`` and the bound."""
    from srperf.config.numbers import refuse_non_finite

    sub = _subschema(schema or EXPERIMENT_SCHEMA, dotted)
    refuse_non_finite(file, value, [flag])   # jsonschema's bounds let NaN through
    box = {flag: value}
    _validate(file, box, {"type": "object", "properties": {flag: sub}})
    return box[flag]


# -- experiment ------------------------------------------------------------------
def apply_overrides(data: dict[str, Any], overrides: Sequence[str], file: str) -> None:
    """Apply ``KEY.PATH=VALUE`` overrides (VALUE read as YAML) to a loaded mapping."""
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ConfigError(file, "--set", item, "use KEY=VALUE, e.g. search.trial_duration_s=2")
        try:
            value = parse_text(text, file) if text.strip() else None
        except ConfigError as exc:
            why = exc.reason if exc.reason.startswith("refused") else "not a YAML value"
            raise ConfigError(file, f"--set {key}", text, why) from None
        refuse_non_finite(file, value, [f"--set {key}"])
        node = data
        parts = key.split(".")
        if not all(parts):
            raise ConfigError(file, "--set", item, "empty key part (use a.b=VALUE)")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(file, key, text, f"{part} is not a mapping")
            node = child
        node[parts[-1]] = value
