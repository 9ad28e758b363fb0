"""Whether a memory is about a subject (the user, by default): what the profile and the
briefing's "About the user" section hold.

Why a rule of its own: the structured fact (entity/attribute/value) is only one way a
memory says whom it is about. An agent stores "Alice prefers short answers" as a plain
PREFERENCE, ``remember()`` extracts "user moved to Lisbon in May." with its subject in
``metadata["about"]``, and a project fact ("Access tokens live 15 minutes") is about no
person at all. The rule, for a subject known by ``names`` (casefolded: "user", the store's
``user_id``, the user's name):

1. a subject stated on the entry (``entity``, else ``metadata["about"]``) decides: it is
   about the subject exactly when that is one of its names;
2. otherwise the text decides: it opens with the subject ("user ...", "The user ...",
   "Alice ...", a first person "I ..."/"My ..."), or names it as a word anywhere (a name,
   not the word "user", which a project fact may use: "each user's token");
3. otherwise a PREFERENCE is the user's (a preference with no one named in a user's
   memory is theirs) unless its text opens with someone else's name ("Bob likes tea").

Pure string work: no I/O, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tulving.domain.entry import MemoryEntry
from tulving.domain.types import MemoryType

#: The generic names of the person a memory serves.
USER_WORDS = frozenset({"user", "the user"})
_FIRST_PERSON = re.compile(r"^\s*(i|i'm|i've|i'd|i'll|my|me|we|our)\b", re.IGNORECASE)
_OPENING_NAME = re.compile(r"^\s*([A-Z][\w'-]+)(?:\s+[A-Z][\w'-]+)?\s+"
                           r"(likes|loves|prefers|hates|enjoys|wants|dislikes|is|has|was)\b")


def subject_names(subject: str, user_id: str | None, known_names: Iterable[str] = ()) -> frozenset[str]:
    """The casefolded names ``subject`` goes by: the user is "user", their ``user_id`` and
    any name the memory knows them by (``known_names``); another subject only its own."""
    key = " ".join(subject.split()).casefold()
    user = {"user", *(n.casefold() for n in known_names)}
    if user_id:
        user.add(user_id.casefold())
    if key in user or key in USER_WORDS:
        return frozenset(user)
    return frozenset({key})


def stated_subject(entry: MemoryEntry) -> str | None:
    """The subject the entry names itself: its ``entity``, else what extraction recorded."""
    if entry.entity:
        return entry.entity
    about = entry.metadata.get("about") if isinstance(entry.metadata, dict) else None
    return about if isinstance(about, str) and about.strip() else None


def is_about(entry: MemoryEntry, names: frozenset[str]) -> bool:
    """Whether ``entry`` is about the subject known by ``names`` (see the module doc)."""
    stated = stated_subject(entry)
    if stated is not None:
        return " ".join(stated.split()).casefold() in names
    text = entry.content
    if _opens_with(text, names) or _names_anywhere(text, names):
        return True
    if "user" in names and _FIRST_PERSON.match(text):
        return True
    if entry.type is MemoryType.PREFERENCE and "user" in names:
        other = _OPENING_NAME.match(text)
        return other is None or other.group(1).casefold() in names
    return False


def _opens_with(text: str, names: frozenset[str]) -> bool:
    head = re.sub(r"^\W+", "", text).casefold()
    if head.startswith("the "):
        head = head[4:]
    return any(re.match(re.escape(name) + r"(?:'s)?\b", head) for name in names)


def _names_anywhere(text: str, names: frozenset[str]) -> bool:
    folded = text.casefold()
    return any(re.search(r"\b" + re.escape(name) + r"\b", folded)
               for name in names if name not in USER_WORDS)
