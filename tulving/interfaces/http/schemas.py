"""Request bodies of the ``/v1`` API: strict, bounded, and named like the Python API they
call. Responses are the rendered shapes of ``render`` plus ``schema_version``.

Strict means no coercion: unknown fields are 422, a string is not a bool
(``{"apply": "yes"}`` must not apply a consolidation), a bool is not a number
(``importance: true``), and a time is an ISO-8601 string, never a number
(``valid_from: 1.5`` is not the epoch) nor a numeric string."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import Path
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from tulving.domain.input_limits import MIN_SCORE, QUERY, TOKEN_BUDGET, TOP_K
from tulving.domain.validation import first_invalid_text
from tulving.interfaces.http.grammars import (
    CONTENT,
    FILLED,
    IDENTITY,
    IDENTITY_MAX,
    KEY_MAX,
    KEY_OR_ID,
    TAG_MAX,
    tag_pattern,
)

#: The version of the wire format, in every response.
SCHEMA_VERSION = 1

MemoryTypeName = Literal["FACT", "DECISION", "OBSERVATION", "PLAN", "SUMMARY", "PREFERENCE",
                         "PROCEDURE", "EPISODE"]
ScopeName = Literal["agent", "session", "personal", "shared", "workspace", "model_specific"]
Text = Field(min_length=1, max_length=100_000, pattern=CONTENT)
#: An id or a key, in a path (``/v1/memory/{memory_id}``) or a body.
MemoryId = Annotated[str, Path(min_length=1, max_length=KEY_MAX, pattern=KEY_OR_ID,
                               description="an id, or a key (letters, digits and . _ : / -, "
                                           "without empty segments or '..')")]
#: A key of a memory.
Key = Annotated[str, Field(min_length=1, max_length=KEY_MAX, pattern=KEY_OR_ID)]
#: A user, workspace or agent id.
Identity = Annotated[str, Field(min_length=1, max_length=IDENTITY_MAX, pattern=IDENTITY)]
#: A tag (see ``grammars.tag_pattern``).
Tag = Annotated[str, Field(min_length=1, max_length=TAG_MAX, pattern=tag_pattern())]


def _iso_time(value: Any) -> Any:
    """An ISO-8601 string becomes a datetime; anything else (a number, a numeric string,
    a bool) is refused rather than read as seconds since the epoch."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise ValueError("a time must be an ISO-8601 string such as 2026-01-31T09:00:00Z")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError("a time must be an ISO-8601 string such as "
                         "2026-01-31T09:00:00Z") from None
    if parsed.tzinfo is None:  # said here in the wire's terms, not the library's Python
        raise ValueError(f"the time {value[:40]!r} has no UTC offset: write it as "
                         "2026-01-31T09:00:00Z or 2026-01-31T09:00:00+02:00")
    return parsed


def _whole_number(value: Any) -> Any:
    """JSON has one kind of number: ``58.0`` is the integer 58 (as JSON Schema reads it);
    a fraction, a string or a bool stays refused by the strict check after this."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: An integer field: a whole JSON number, whichever way it is written.
WholeNumber = Annotated[int, BeforeValidator(_whole_number)]
#: The cursor ``/v1/entries`` answered as ``next_cursor`` (an entry's id).
CURSOR = r"^[0-9A-HJKMNP-TV-Z]{26}$"
SourceTypeName = Literal["user_explicit", "user_input", "correction", "agent_run",
                         "conversation", "summary", "import", "tool_output", "webhook",
                         "external"]

#: A time in a body or a query: ISO-8601 text only.
Time = Annotated[datetime, BeforeValidator(_iso_time)]
Query = Field(min_length=int(QUERY.low), max_length=int(QUERY.high), pattern=FILLED)


class Body(BaseModel):
    """Every body may name the tenant and agent it acts for: a tenant other than the
    token's is refused (403); ``agent_id`` picks the agent when the token is not bound to
    one."""

    model_config = ConfigDict(extra="forbid", strict=True)
    user_id: Identity | None = None

    @model_validator(mode="before")
    @classmethod
    def _valid_unicode(cls, data: Any) -> Any:
        """Every string of the body (metadata keys included) is valid Unicode: a lone
        surrogate (JSON ``"\\ud800"``) is a 422 here, before anything runs."""
        invalid = first_invalid_text(data, "body")
        if invalid is not None:
            raise ValueError(f"{invalid} is not valid Unicode text")
        return data

    workspace_id: Identity | None = None
    agent_id: Identity | None = None


class Remember(Body):
    text: str = Field(min_length=1, max_length=2_000_000, pattern=CONTENT)
    subject: str | None = Field(default=None, min_length=1, max_length=200, pattern=FILLED)
    source_type: SourceTypeName = "conversation"
    valid_from: Time | None = None
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)
    #: True: answer once what is read off the turns is written too (read-your-writes);
    #: by default the answer comes once the turns are durable, with the turns.
    wait: bool = False


class Store(Body):
    #: A structured fact names its entity and attribute together (one without the other
    #: is refused); given, neither may be null.
    model_config = ConfigDict(json_schema_extra={
        "dependentRequired": {"entity": ["attribute"], "attribute": ["entity"]}})

    content: str = Text
    type: MemoryTypeName
    key: Key | None = None
    tags: list[Tag] = Field(default_factory=list, max_length=64)
    importance: float = Field(default=0.5, ge=0, le=1)
    pinned: bool = False
    metadata: dict[str, Any] | None = None
    scope: ScopeName = "agent"
    valid_from: Time | None = None
    # omitted or a non-blank string, never null: the schema says "string" (no anyOf)
    entity: str = Field(default=None, min_length=1, max_length=200,  # type: ignore[assignment]
                        pattern=FILLED)
    attribute: str = Field(default=None, min_length=1, max_length=200,  # type: ignore[assignment]
                           pattern=FILLED)
    value: str | None = Field(default=None, min_length=1, max_length=2000, pattern=FILLED)
    source_instance: str | None = Field(default=None, min_length=1, max_length=200,
                                        pattern=FILLED)


class Recall(Body):
    """Seed 001's recall: corrections supersede originals; filters; weighting."""

    query: str = Query
    limit: WholeNumber = Field(default=10, ge=1, le=100)
    tags: list[Tag] | None = Field(default=None, max_length=64)
    types: list[MemoryTypeName] | None = None
    scope: ScopeName | None = None
    model_id: str | None = Field(default=None, max_length=256)
    source_instance: str | None = Field(default=None, max_length=200)
    min_relevance: float | None = Field(default=None, ge=0, le=1)
    recency_weight: float = Field(default=0.0, ge=0, le=1)
    confidence_weight: float = Field(default=0.0, ge=0, le=1)


class Search(Body):
    query: str = Query
    top_k: WholeNumber = Field(default=10, ge=TOP_K.low, le=TOP_K.high)
    mode: Literal["hybrid", "semantic", "lexical", "key"] = "hybrid"
    types: list[MemoryTypeName] | None = None
    tags: list[Tag] | None = Field(default=None, max_length=64)
    since: Time | None = None
    until: Time | None = None
    min_score: float | None = Field(
        default=None, ge=MIN_SCORE.low, le=MIN_SCORE.high,
        description="only results scoring at least this; in hybrid mode a calibrated "
                    "probability of relevance (0.04 keeps ~80% of answers)")
    as_of: Time | None = None


class Curate(Body):
    #: ``mode: "query"`` needs a query (without one, the briefing is ``mode: "orient"``).
    model_config = ConfigDict(json_schema_extra={
        "if": {"properties": {"mode": {"const": "query"}}, "required": ["mode"]},
        "then": {"required": ["query"], "properties": {"query": {"type": "string"}}}})

    query: str | None = Field(default=None, min_length=1, max_length=int(QUERY.high),
                              pattern=FILLED)
    token_budget: WholeNumber = Field(default=2000, ge=TOKEN_BUDGET.low, le=TOKEN_BUDGET.high)
    #: Omitted: ``query`` with a query, ``orient`` (the cold-start briefing) without one.
    mode: Literal["query", "orient"] | None = None
    types: list[MemoryTypeName] | None = None
    tags: list[Tag] | None = Field(default=None, max_length=64)
    since: Time | None = None
    until: Time | None = None
    #: Add ``candidates``: each ranked candidate's score broken down, its disclosure and
    #: token cost (the inspector's curate preview).
    explain: bool = False


class Correct(Body):
    memory_id: Key = Field(description="id or key")
    content: str = Text
    reason: str | None = Field(default=None, max_length=2000)
    #: Pin or unpin in the same correction (``content`` unchanged pins the memory as is).
    pinned: bool | None = None


class SessionStart(Body):
    goal: str | None = Field(default=None, max_length=2000)


class Consolidate(Body):
    apply: bool = False


class Export(Body):
    tags: list[Tag] | None = Field(default=None, max_length=64)
    types: list[MemoryTypeName] | None = None
    scope: ScopeName | None = None
    since: Time | None = None
    until: Time | None = None
    include_archived: bool = True
    include_embeddings: bool = True
    redact: bool = False
