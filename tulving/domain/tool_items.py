"""Which memories are a framework's record of tool calls and tool outputs.

Agent frameworks' sessions store every item of a run, tool calls and their outputs among
the messages; kept verbatim, they are worth having (a later run replays them), but as
recall they crowd out what the user said: a 2 kB JSON tool output shares many words with
the question that caused it. Such an entry carries the tag :data:`TOOL_ITEM_TAG`
(the first-party plugins set it; any integration can), and ``search``, ``curate`` and
the briefing leave it out unless the call's own ``tags`` filter names that tag
(``search(q, tags=["tool-item"])``: the tool items alone). Listing, export, sync and
the session's own reads of its items are not recall and see every entry.
"""

from __future__ import annotations

from collections.abc import Sequence

#: The tag that marks a stored tool call or tool output.
TOOL_ITEM_TAG = "tool-item"


def hidden_tags(asked: Sequence[str] | None) -> tuple[str, ...] | None:
    """The tags a recall leaves out: the tool-item tag, unless ``asked`` names it."""
    if asked and TOOL_ITEM_TAG in asked:
        return None
    return (TOOL_ITEM_TAG,)
