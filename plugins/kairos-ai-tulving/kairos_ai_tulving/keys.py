"""Memory keys for ``remember`` steps: a template fixed in code, values from run state.

``"answers/{topic}"`` names where a step's output is stored; ``{topic}`` is read from the
run's state when the step runs. The template, and the prefix every key gets (``kairos/``
by default), are the author's code; only the placeholder values come from state, and each
is reduced to one key segment (no ``/``, no ``..``). So state written by a step (an LLM's
output, say) can choose *which* answer under ``kairos/answers/`` it supersedes, never a
key elsewhere in the memory.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable

from kairos_ai_tulving.errors import PluginConfigError
from kairos_ai_tulving.rendering import slug

_LITERAL = re.compile(r"^[A-Za-z0-9._:/-]*$")
_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_KEY = 200


class KeyTemplate:
    def __init__(self, template: str, prefix: str | None = "kairos") -> None:
        if not isinstance(template, str) or not template.strip():
            raise PluginConfigError("key must be a non-empty template such as 'answers/{topic}'")
        if prefix is not None and (not isinstance(prefix, str) or not _LITERAL.match(prefix)
                                   or not prefix or prefix.endswith("/") or ".." in prefix):
            raise PluginConfigError(
                "key prefix must be letters, digits and . _ : / - without '..' or a "
                "trailing '/' (or None for no prefix)")
        self.template = template
        self.prefix = prefix
        self.fields: list[str] = []
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as exc:
            raise PluginConfigError(f"key template {template!r} is malformed") from exc
        for literal, field, spec, conversion in parsed:
            if not _LITERAL.match(literal) or ".." in literal:
                raise PluginConfigError(
                    f"key template {template!r}: literal parts may hold only letters, "
                    "digits and . _ : / - (no '..')")
            if field is None:
                continue
            if not _FIELD.match(field) or spec or conversion:
                raise PluginConfigError(
                    f"key template {template!r}: a placeholder is a plain state key name "
                    "like {topic} (no attributes, indexes, formats or conversions)")
            self.fields.append(field)

    def fill(self, lookup: Callable[[str], object]) -> str:
        """The key, with each placeholder's state value reduced to one segment."""
        values: dict[str, str] = {}
        for field in self.fields:
            raw = lookup(field)
            if isinstance(raw, bool) or not isinstance(raw, str | int):
                raise PluginConfigError(
                    f"state key {field!r} for the memory key must hold a string or an "
                    f"integer, not {type(raw).__name__}")
            segment = slug(raw)
            if not segment:
                raise PluginConfigError(f"state key {field!r} gives an empty key segment")
            values[field] = segment
        key = self.template.format(**values)
        if self.prefix:
            key = f"{self.prefix}/{key}"
        if len(key) > MAX_KEY:
            raise PluginConfigError(f"memory key is {len(key)} characters; at most {MAX_KEY}")
        return key
