"""LoCoMo loading for the retrieval benchmark (the data stays outside the repo).

The protocol is the one stated in ``shared/data/locomo/README.md``: one memory per turn,
text ``[<session date as "08 May 2023">] <speaker>: <text>`` plus `` [photo: <caption>]``,
valid from the session's date; queries are the category 1-4 questions whose evidence ids
exist in the conversation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

_SESSION = re.compile(r"^session_(\d+)$")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    text: str
    date: datetime


@dataclass(frozen=True)
class Question:
    text: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def parse_session_date(value: str) -> datetime:
    """"1:56 pm on 8 May, 2023" -> aware UTC datetime."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(date: datetime, speaker: str, text: str, caption: str | None) -> str:
    body = f"[{date.strftime('%d %B %Y')}] {speaker}: {text}"
    return f"{body} [photo: {caption}]" if caption else body


def load(path: str | Path, limit: int | None = None) -> list[Conversation]:
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    out: list[Conversation] = []
    for item in raw[:limit] if limit else raw:
        conv = item["conversation"]
        sessions = sorted(
            (int(m.group(1)), key) for key in conv if (m := _SESSION.match(key))
        )
        turns: list[Turn] = []
        for number, key in sessions:
            date = parse_session_date(conv[f"{key}_date_time"])
            for turn in conv[key]:
                turns.append(Turn(
                    dia_id=turn["dia_id"], session=number, date=date,
                    text=turn_text(date, turn["speaker"], turn["text"], turn.get("blip_caption")),
                ))
        known = {t.dia_id for t in turns}
        questions = []
        for qa in item["qa"]:
            if qa.get("category") not in (1, 2, 3, 4):
                continue
            cited = [e for field in qa.get("evidence", []) for e in re.split(r"[;,\s]+", field)]
            evidence = tuple(dict.fromkeys(e for e in cited if e in known))
            if evidence:
                questions.append(Question(str(qa["question"]), evidence, int(qa["category"])))
        out.append(Conversation(item["sample_id"], tuple(turns), tuple(questions)))
    return out


def group_turns(conv: Conversation, per_memory: int) -> Conversation:
    """The same conversation stored as longer memories: ``per_memory`` consecutive turns of
    a session joined by newlines (like long user-assistant exchanges or notes); a memory's
    id is its first turn's, and evidence points at the memories that hold it.

    Why: LoCoMo's turns are short (about 30 tokens), so it cannot show what a 256-token
    model window does to long memories; with 10 or 20 turns a memory most exceed it.
    """
    if per_memory <= 1:
        return conv
    owner: dict[str, str] = {}
    grouped: list[Turn] = []
    for session in sorted({t.session for t in conv.turns}):
        turns = [t for t in conv.turns if t.session == session]
        for start in range(0, len(turns), per_memory):
            part = turns[start : start + per_memory]
            grouped.append(Turn(part[0].dia_id, session, "\n".join(t.text for t in part),
                                part[0].date))
            owner.update((t.dia_id, part[0].dia_id) for t in part)
    questions = tuple(
        Question(q.text, tuple(dict.fromkeys(owner[e] for e in q.evidence)), q.category)
        for q in conv.questions)
    return Conversation(conv.sample_id, tuple(grouped), questions)
