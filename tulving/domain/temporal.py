"""Recognising time in text, for retrieval that knows "when" questions need dated facts.

A question that asks *when* something happened is best answered by a memory that says
when ("yesterday", "last Friday", "two weeks ago", "next month"). Absolute calendar dates
are left out on purpose: many stores stamp every entry with a date, so a date in the text
does not single out the memory that places an event in time; relative expressions do.
Pure functions over text: no clock, no I/O.
"""

from __future__ import annotations

import re

_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?"
_UNIT = r"(?:day|week|month|year|weekend|night|morning|evening|afternoon|summer|winter|spring|fall|autumn|season|semester)s?"
_NUMBER = r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|couple of|several)"

_RELATIVE_TIME = re.compile(
    r"\b(?:"
    r"yesterday|today|tonight|tomorrow|recently|lately|earlier|"
    rf"(?:last|next|this|past|coming|previous|upcoming)\s+(?:{_UNIT}|{_WEEKDAY})|"
    rf"{_NUMBER}\s+{_UNIT}\s+(?:ago|before|later|from now)|"
    rf"(?:on|since|until|by)\s+{_WEEKDAY}|"
    r"ago"
    r")\b",
    re.IGNORECASE,
)

_WHEN_QUESTION = re.compile(
    r"^\s*(?:when|what\s+(?:date|day|time|year|month|week)|which\s+(?:date|day|year|month|week)"
    r"|how\s+long\s+ago|since\s+when)\b|\bwhen\s+(?:did|was|were|is|will|does|do|has|had)\b",
    re.IGNORECASE,
)


def asks_when(query: str) -> bool:
    """True for questions about the time of an event ("When did ...", "What year ...")."""
    return _WHEN_QUESTION.search(query) is not None


def mentions_relative_time(text: str) -> bool:
    """True if ``text`` places something in time relative to when it was said."""
    return _RELATIVE_TIME.search(text) is not None
