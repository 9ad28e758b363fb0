"""Lists inside long texts: items, their spans, their numbers, and where a list ends."""

from __future__ import annotations

from tulving.domain.list_items import LAST_ITEM, items_at, text_lists

ANSWER = """Here is a plan for the garden:

1. **Clear the beds.** Pull the weeds and loosen the soil.
   - Keep the roots out of the compost.
2. Sow the peas in March.
3) Plant the tomatoes after the last frost.

Water them weekly. That keeps the soil moist.

Tools:
- a spade
- a rake
* gloves
"""


def _texts(text: str) -> list[list[str]]:
    return [[text[i.start:i.end] for i in t.items] for t in text_lists(text)]


def test_numbered_items_hold_their_nested_lines_and_stop_at_the_next_paragraph() -> None:
    lists = _texts(ANSWER)
    first = lists[0]
    assert first[0] == ("1. **Clear the beds.** Pull the weeds and loosen the soil.\n"
                        "   - Keep the roots out of the compost.")
    assert first[1] == "2. Sow the peas in March."
    assert first[2] == "3) Plant the tomatoes after the last frost."
    assert "Water them weekly" not in "".join(first)


def test_each_marker_kind_is_its_own_list_and_the_lead_line_is_kept() -> None:
    lists = text_lists(ANSWER)
    assert [t.kind for t in lists] == ["number", "bullet:-", "bullet:*"]
    assert ANSWER[slice(*lists[1].lead)] == "Tools:"
    assert ANSWER[slice(*lists[0].lead)] == "Here is a plan for the garden:"
    assert [i.position for i in lists[1].items] == [1, 2]


def test_numbers_starting_again_begin_a_second_list() -> None:
    text = "Clothing:\n1. a jacket\n2. boots\n\nGear:\n1. poles\n2. a tent\n3. a stove\n"
    lists = text_lists(text)
    assert [len(t.items) for t in lists] == [2, 3]
    assert text[slice(*lists[1].lead)] == "Gear:"
    found = items_at(lists, 2)
    assert [text[i.start:i.end] for i, _ in found] == ["2. boots", "2. a tent"]
    last = items_at(lists, LAST_ITEM)
    assert [text[i.start:i.end] for i, _ in last] == ["2. boots", "3. a stove"]
    assert items_at(lists, 7) == []


def test_written_numbers_win_over_positions() -> None:
    text = "Top picks:\n25. alpha\n26. beta\n27. gamma\n"
    (item, _), = items_at(text_lists(text), 27)
    assert text[item.start:item.end] == "27. gamma"
    assert item.position == 3


def test_labelled_lines_and_colon_lines() -> None:
    text = ("Plan:\nDay 1: arrive.\nDay 2: the old town.\nDay 3: the coast.\n\n"
            "Monday: soup\nTuesday: pasta\nWednesday: fish\n\nNote: book ahead.\n")
    lists = text_lists(text)
    assert [t.kind for t in lists] == ["label:day", "colon"]
    (item, _), = items_at(lists, 2, "day")
    assert text[item.start:item.end] == "Day 2: the old town."
    assert item.label == "day"
    (third, _), = items_at([lists[1]], 3)
    assert text[third.start:third.end] == "Wednesday: fish"


def test_two_colon_lines_are_prose_not_a_list() -> None:
    assert text_lists("Note: one thing.\nAlso: another.\n\nThe end.") == []


def test_prose_without_lists() -> None:
    assert text_lists("Just a paragraph. Another sentence.\n\nA second paragraph.") == []
    assert text_lists("") == []


def test_heading_items_hold_the_lists_and_paragraphs_under_them() -> None:
    text = ("Your trip:\n\n### Day 1: the old town\n- the castle\n- the market\n\n"
            "### Day 2: the coast\n- a boat trip\n\nSome advice.\n\n## Budget\nCheap.")
    lists = text_lists(text)
    assert lists[0].kind == "label:day"
    (item, _), = items_at(lists, 2, "day")
    assert text[item.start:item.end] == "### Day 2: the coast\n- a boat trip\n\nSome advice."
    (first, _), = items_at(lists, 1, "day")
    assert "the market" in text[first.start:first.end]
