"""LongMemEval_S loading for the long-memory benchmark (the data stays outside the repo).

The protocol is the one stated in ``shared/data/longmemeval_s_dev/README.md``: each
question's own history in a fresh store, one memory per turn, text
``[YYYY-MM-DD] <role>: <content>``, valid from its session's date; the query is the
question; the relevant memories are the turns marked ``has_answer``.

The tuning/held-back split is fixed by a rule that does not look at the data's content:
within each question type, the questions are ordered by the SHA-256 of their
``question_id`` and the first ``TUNE_PER_TYPE`` (6 of 10) are the tuning half, the rest
(4 of 10) the held-back half.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

TUNE_PER_TYPE = 6
TYPES = ("single-session-user", "single-session-assistant", "single-session-preference",
         "multi-session", "knowledge-update", "temporal-reasoning")
SHORT_TYPE = {"single-session-user": "ss-user", "single-session-assistant": "ss-asst",
              "single-session-preference": "ss-pref", "multi-session": "multi",
              "knowledge-update": "update", "temporal-reasoning": "temporal"}


@dataclass(frozen=True)
class Turn:
    turn_id: str  # "s<session index>t<turn index>"
    session: int
    role: str
    text: str
    date: datetime
    relevant: bool


@dataclass(frozen=True)
class Question:
    question_id: str
    question_type: str
    question: str
    question_date: datetime
    turns: tuple[Turn, ...]
    half: str  # "tune" | "hold"
    answer: str = ""

    @property
    def relevant(self) -> tuple[str, ...]:
        return tuple(t.turn_id for t in self.turns if t.relevant)

    @property
    def sessions(self) -> list[list[Turn]]:
        out: dict[int, list[Turn]] = {}
        for turn in self.turns:
            out.setdefault(turn.session, []).append(turn)
        return [out[k] for k in sorted(out)]


def parse_date(value: str) -> datetime:
    """"2023/05/20 (Sat) 02:21" -> aware UTC datetime."""
    day, _, clock = value.partition(") ")
    return datetime.strptime(f"{day.split(' (')[0]} {clock}", "%Y/%m/%d %H:%M").replace(
        tzinfo=UTC)


def turn_text(date: datetime, role: str, content: str) -> str:
    return f"[{date.strftime('%Y-%m-%d')}] {role}: {content}"


def _rank_key(question_id: str) -> str:
    return hashlib.sha256(question_id.encode()).hexdigest()


def load_one(path: Path, half: str = "") -> Question:
    raw = json.loads(path.read_text(encoding="utf-8"))
    turns: list[Turn] = []
    for s, (session, date_text) in enumerate(zip(raw["haystack_sessions"],
                                                 raw["haystack_dates"], strict=True)):
        date = parse_date(date_text)
        for t, turn in enumerate(session):
            turns.append(Turn(f"s{s}t{t}", s, turn["role"],
                              turn_text(date, turn["role"], turn["content"]), date,
                              bool(turn.get("has_answer"))))
    return Question(raw["question_id"], raw["question_type"], raw["question"],
                    parse_date(raw["question_date"]), tuple(turns), half,
                    str(raw.get("answer", "")))


def load(folder: str | Path, limit_per_type: int | None = None,
         halves: tuple[str, ...] = ("tune", "hold")) -> list[Question]:
    """The questions of ``folder`` (one JSON file each), split into halves by the rule
    above, in type order then split order; ``limit_per_type`` keeps the first N of each
    type and half (for quick iterations)."""
    by_type: dict[str, list[tuple[str, Path]]] = {}
    for path in sorted(Path(folder).glob("*.json")):
        head = json.loads(path.read_text(encoding="utf-8"))
        by_type.setdefault(head["question_type"], []).append((head["question_id"], path))
    out: list[Question] = []
    for qtype in [t for t in TYPES if t in by_type] + sorted(set(by_type) - set(TYPES)):
        ordered = sorted(by_type[qtype], key=lambda item: _rank_key(item[0]))
        for half in halves:
            part = ordered[:TUNE_PER_TYPE] if half == "tune" else ordered[TUNE_PER_TYPE:]
            for _, path in part[:limit_per_type]:
                out.append(load_one(path, half))
    return out
