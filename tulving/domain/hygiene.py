"""What a recall must not return: a second copy of a hit, and the question itself.

- **Identical contents are one hit.** A conversation logged twice (a retry, two
  integrations writing the same turn) stores the same text under two ids; both score the
  same and would take two of the caller's ``top_k`` slots with one piece of evidence. The
  first (best ranked) stays.
- **The question is not its own answer.** A session that stores each user turn before
  the agent searches with it (the Agents SDK does) finds that turn first: it matches the
  query word for word. A memory whose whole text is the query, up to case, spacing,
  punctuation and a leading ``[date]`` or ``role:`` label, holds nothing the query does
  not; it is left out.
"""

from __future__ import annotations

import re

#: A leading ``[date]`` and a speaker's label: a role word, or a name of up to three
#: capitalised words ("Caroline:", "Mary Ann:", "Dr. Lee:"). Not any short phrase before a
#: colon: "memory 3: ..." or "The plan for tomorrow: ..." say something of their own.
_LABEL = re.compile(
    r"^\s*(\[[^\]]{1,40}\]\s*)?"
    r"((?:(?i:user|assistant|system|human|ai|bot|tool|agent|me|you)"
    r"|[A-Z][\w.'-]{0,20}(?: [A-Z][\w.'-]{0,20}){0,2}):\s+)?")

_NOISE = re.compile(r"[\W_]+", re.UNICODE)


def _bare(text: str) -> str:
    return _NOISE.sub(" ", text).strip().casefold()


def echoes(query: str, content: str) -> bool:
    """True when ``content`` is only ``query`` again (see the module docstring)."""
    if len(content) > 4 * len(query) + 64:  # cheap: a long memory is never an echo
        return False
    asked = _bare(query)
    return bool(asked) and _bare(_LABEL.sub("", content, count=1)) == asked


def same_text(text: str) -> str:
    """The form in which two contents count as identical (spacing aside)."""
    return " ".join(text.split())
