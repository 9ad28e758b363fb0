"""The lists inside a long text: each item's span, its list and its number.

A chat model's long answer is mostly lists: numbered ("1. **Pip**: ..."), bulleted ("- ",
"* "), or labelled lines ("Day 5: ...", "Week 10: ...", "Monday: ..."). An item is
the unit a question asks for ("the fifth one", "what was on day 5", "the tip about
X"), so passage choice treats it as one: it can be taken whole, and found by position.

Rules (plain string work, one pass over the lines):
- an item starts at a line with a marker: a number and ``.`` or ``)``, a bullet, a
  label and a number ("Step 3:"), or a short capitalised label and a colon with text
  after it ("Monday: ..."); markdown emphasis and heading marks around the marker are
  ignored;
- it runs until the next item of its list or of an outer one, or until a blank line
  followed by an unindented line that is not an item (the paragraph after the list); an
  item that is a markdown heading ("### Day 3: ...") runs until the next heading, so the
  bullets and paragraphs under it are its body;
- a list is a run of items with the same marker kind and indentation; a numbered list
  also ends where its numbers start again (a second list under another heading);
- a run of "Label: text" lines counts as a list only from three lines on (two such lines
  are as likely prose);
- an item's number is the number it is written with, else its position in its list.
"""

from __future__ import annotations

import re

import attrs

_NUMBERED = re.compile(r"[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*|__)?(\d{1,3})[.)](?:\*\*|__)?[ \t]+\S")
_LABELLED = re.compile(r"[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*|__)?([A-Za-z]{3,12})[ \t]+(\d{1,3})"
                       r"(?:\*\*|__)?[ \t]*[:.)–—-]")
_BULLET = re.compile(r"([ \t]*)([-*•+])[ \t]+\S")
_COLON = re.compile(r"[ \t]*(?:\*\*|__)?[A-Z][\w'’&/ -]{0,28}?(?:\*\*|__)?:(?:\*\*|__)?[ \t]+\S")
#: A run of "Label: text" lines is a list from this many lines on.
MIN_COLON_ITEMS = 3
#: The ordinal of a list's last item (``items_at``).
LAST_ITEM = -1


@attrs.frozen
class ListItem:
    start: int
    """Offset of the item's first character (its marker line, indentation excluded)."""
    end: int
    """Offset just past the item (its last line's end, line break excluded)."""
    number: int
    """The number it is written with ("5." / "Day 5"), else its 1-based position."""
    position: int
    """Its 1-based position in its list."""
    list_index: int
    """Which list of the text it belongs to (0-based, in order of appearance)."""
    label: str | None = None
    """The label of a labelled item ("day" of "Day 5:"), lower-cased."""


@attrs.frozen
class TextList:
    items: tuple[ListItem, ...]
    indent: int
    kind: str
    #: Offsets of the line before the list (its heading or lead-in), empty when none.
    lead: tuple[int, int]


@attrs.define
class _Line:
    start: int
    end: int
    indent: int
    kind: str | None  # "number", "label:<word>", "bullet:<mark>", "colon", or None
    number: int | None
    heading: bool = False  # a markdown heading ("### Day 3: ...")


def _lines(text: str) -> list[_Line]:
    out: list[_Line] = []
    offset = 0
    for raw in text.split("\n"):
        start, end = offset, offset + len(raw)
        offset = end + 1
        stripped = raw.lstrip(" \t")
        indent = len(raw) - len(stripped)
        kind: str | None = None
        number: int | None = None
        if (found := _NUMBERED.match(raw)) is not None:
            kind, number = "number", int(found.group(1))
        elif (found := _LABELLED.match(raw)) is not None:
            kind, number = f"label:{found.group(1).casefold()}", int(found.group(2))
        elif (found := _BULLET.match(raw)) is not None:
            kind = f"bullet:{found.group(2)}"
        elif _COLON.match(raw) is not None:
            kind = "colon"
        out.append(_Line(start + indent, end, indent, kind, number,
                         stripped.startswith("#")))
    return out


def text_lists(text: str) -> list[TextList]:
    """The lists of ``text`` (see the module's docstring), in order."""
    lines = _lines(text)
    lists: list[TextList] = []
    open_items: list[tuple[_Line, int]] = []  # (marker line, index of its last line)
    first_line = 0  # index of the open list's first line
    current: tuple[str, int] | None = None  # (kind, indent) of the list being read

    def close() -> None:
        nonlocal open_items, current, first_line
        if current is not None and open_items:
            kind, indent = current
            if kind != "colon" or len(open_items) >= MIN_COLON_ITEMS:
                before = first_line - 1
                while before >= 0 and lines[before].end <= lines[before].start:
                    before -= 1
                lead = (lines[before].start, lines[before].end) if before >= 0 else (0, 0)
                items = []
                for position, (line, last) in enumerate(open_items, start=1):
                    number = line.number if line.number is not None else position
                    label = kind.split(":", 1)[1] if kind.startswith("label:") else None
                    items.append(ListItem(line.start, lines[last].end, number, position,
                                          len(lists), label))
                lists.append(TextList(tuple(items), indent, kind, lead))
        open_items, current = [], None

    blank_before = False
    headings = False  # the open list's items are markdown headings
    for index, line in enumerate(lines):
        blank = line.end <= line.start
        if blank:
            blank_before = True
            continue
        if headings and current is not None and not line.heading:
            open_items[-1] = (open_items[-1][0], index)  # a heading item's body
            continue
        if current is not None and line.kind is not None and line.indent <= current[1]:
            same = (line.kind, line.indent) == current and not (
                line.kind == "number" and open_items and line.number is not None
                and open_items[-1][0].number is not None
                and line.number <= open_items[-1][0].number)
            if same:
                open_items.append((line, index))
                blank_before = False
                continue
            close()
        elif current is not None and line.indent <= current[1] and line.kind is None and (
                blank_before or current[0] == "colon"):
            close()  # the paragraph after the list
        elif current is not None:
            # a continuation line or a deeper (nested) item: part of the open item
            open_items[-1] = (open_items[-1][0], index)
            blank_before = False
            continue
        if current is None and line.kind is not None:
            current = (line.kind, line.indent)
            open_items, first_line = [(line, index)], index
            headings = line.heading
        blank_before = False
    close()
    return lists


def items_at(lists: list[TextList], ordinal: int, label: str | None = None
             ) -> list[tuple[ListItem, TextList]]:
    """The items at ``ordinal`` (a number, or ``LAST_ITEM``) of every list that has
    one; with a ``label`` ("day"), the lists of items so labelled when there are any."""
    chosen = lists
    if label is not None:
        labelled = [t for t in lists if t.kind == f"label:{label}"]
        chosen = labelled or lists
    found = []
    for text_list in chosen:
        if ordinal == LAST_ITEM:
            found.append((text_list.items[-1], text_list))
            continue
        for item in text_list.items:
            if item.number == ordinal:
                found.append((item, text_list))
                break
    return found
