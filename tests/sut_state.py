"""Test helper: what differs between two snapshots of a SUT's state (for assertion messages)."""

from __future__ import annotations

import json


def state_diff(now: dict[str, object], then: dict[str, object]) -> str:
    """One line per difference: entries added to or removed from a list, else old -> new."""
    lines = []
    for key in sorted(set(now) | set(then)):
        a, b = now.get(key), then.get(key)
        if a == b:
            continue
        if isinstance(a, list) and isinstance(b, list):
            lines += [f"{key}: added {json.dumps(x)}" for x in a if x not in b]
            lines += [f"{key}: removed {json.dumps(x)}" for x in b if x not in a]
        else:
            lines.append(f"{key}: {b!r} -> {a!r}")
    return "\n".join(lines)
