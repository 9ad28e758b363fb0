"""Enumerations of the domain: memory types, scopes, sources, archive reasons.

Each memory type carries its decay half-life and its cognitive kind (after Endel Tulving's
episodic/semantic distinction, plus procedural memory): these numbers drive lazy decay and
ranking, so they live beside the type rather than in a config file that could drift.
"""

from __future__ import annotations

import enum
import math

from tulving.domain.errors import UnknownTypeError, ValidationError


class CognitiveKind(enum.Enum):
    """The kind of memory a type is (after Tulving's own distinction): semantic facts,
    episodic events, procedural know-how."""

    SEMANTIC = "semantic"
    EPISODIC = "episodic"
    PROCEDURAL = "procedural"


class MemoryType(enum.Enum):
    """What a memory is; accepted as the enum or its exact upper-case name."""

    FACT = "FACT"
    DECISION = "DECISION"
    OBSERVATION = "OBSERVATION"
    PLAN = "PLAN"
    SUMMARY = "SUMMARY"
    PREFERENCE = "PREFERENCE"
    PROCEDURE = "PROCEDURE"
    EPISODE = "EPISODE"

    @property
    def half_life_hours(self) -> float:
        """Hours after which unaccessed importance halves; ``inf`` never decays."""
        return _HALF_LIFE_HOURS[self]

    @property
    def cognitive_kind(self) -> CognitiveKind:
        """Semantic, episodic or procedural (the Memory types table)."""
        return _KIND[self]

    @property
    def decays(self) -> bool:
        """False for DECISION, whose importance never decays."""
        return math.isfinite(self.half_life_hours)

    @classmethod
    def parse(cls, value: object) -> MemoryType:
        """The member for ``value`` (a member or its exact name), else UnknownTypeError."""
        if isinstance(value, MemoryType):
            return value
        if isinstance(value, str) and value in cls.__members__:
            return cls[value]
        names = ", ".join(cls.__members__)
        raise UnknownTypeError(f"unknown memory type {value!r}; expected one of: {names}")


_DAY = 24.0
_HALF_LIFE_HOURS: dict[MemoryType, float] = {
    MemoryType.FACT: 60 * _DAY,
    MemoryType.DECISION: math.inf,
    MemoryType.OBSERVATION: 3 * _DAY,
    MemoryType.PLAN: 14 * _DAY,
    MemoryType.SUMMARY: 30 * _DAY,
    MemoryType.PREFERENCE: 180 * _DAY,
    MemoryType.PROCEDURE: 90 * _DAY,
    MemoryType.EPISODE: 7 * _DAY,
}

_KIND: dict[MemoryType, CognitiveKind] = {
    MemoryType.FACT: CognitiveKind.SEMANTIC,
    MemoryType.DECISION: CognitiveKind.SEMANTIC,
    MemoryType.OBSERVATION: CognitiveKind.EPISODIC,
    MemoryType.PLAN: CognitiveKind.PROCEDURAL,
    MemoryType.SUMMARY: CognitiveKind.EPISODIC,
    MemoryType.PREFERENCE: CognitiveKind.SEMANTIC,
    MemoryType.PROCEDURE: CognitiveKind.PROCEDURAL,
    MemoryType.EPISODE: CognitiveKind.EPISODIC,
}


class Scope(enum.Enum):
    """Who may read an entry inside its tenant (user_id + workspace_id).

    ``agent`` (default): only the writing agent. ``session``: only the writing agent's
    session. ``personal``: every agent acting for the same user. ``shared`` and
    ``workspace``: every agent in the tenant (explicit opt-in per write).
    ``model_specific``: agents running the same model id.
    """

    AGENT = "agent"
    SESSION = "session"
    PERSONAL = "personal"
    SHARED = "shared"
    WORKSPACE = "workspace"
    MODEL_SPECIFIC = "model_specific"

    @classmethod
    def parse(cls, value: object) -> Scope:
        """The member for ``value`` (a member or its value), else ValidationError."""
        if isinstance(value, Scope):
            return value
        if isinstance(value, str):
            for member in cls:
                if member.value == value:
                    return member
        raise ValidationError(
            f"unknown scope {value!r}; expected one of: {', '.join(m.value for m in cls)}"
        )


class SourceType(enum.Enum):
    """Where content came from; each source has a default trust in [0, 1]."""

    USER_EXPLICIT = "user_explicit"
    USER_INPUT = "user_input"
    CORRECTION = "correction"
    AGENT_RUN = "agent_run"
    CONVERSATION = "conversation"
    SUMMARY = "summary"
    IMPORT = "import"
    TOOL_OUTPUT = "tool_output"
    WEBHOOK = "webhook"
    EXTERNAL = "external"

    @property
    def default_trust(self) -> float:
        """The trust in [0, 1] an entry from this source gets unless it says otherwise."""
        return _DEFAULT_TRUST[self]

    @classmethod
    def parse(cls, value: object) -> SourceType:
        """The member for ``value`` (a member or its value), else ValidationError."""
        if isinstance(value, SourceType):
            return value
        if isinstance(value, str):
            for member in cls:
                if member.value == value:
                    return member
        raise ValidationError(
            f"unknown source type {value!r}; expected one of: {', '.join(m.value for m in cls)}"
        )


_DEFAULT_TRUST: dict[SourceType, float] = {
    SourceType.USER_EXPLICIT: 1.0,
    SourceType.CORRECTION: 0.95,
    SourceType.USER_INPUT: 0.9,
    SourceType.AGENT_RUN: 0.7,
    SourceType.CONVERSATION: 0.7,
    SourceType.SUMMARY: 0.7,
    SourceType.IMPORT: 0.6,
    SourceType.TOOL_OUTPUT: 0.5,
    SourceType.WEBHOOK: 0.3,
    SourceType.EXTERNAL: 0.3,
}

#: Below this trust, content that looks like a prompt injection is held for review.
LOW_TRUST_THRESHOLD = 0.6


class ArchiveReason(enum.Enum):
    """Why an entry left the active set. Nothing automatic deletes: it archives."""

    SUPERSEDED = "superseded"
    CORRECTED = "corrected"
    SUMMARIZED = "summarized"
    CONSOLIDATED = "consolidated"
    EVICTED = "evicted"
    FORGOTTEN = "forgotten"
    EXPIRED = "expired"
    ROLLED_BACK = "rolled_back"
    INVALIDATED = "invalidated"


class ReviewStatus(enum.Enum):
    """Human review of low-trust content; only ``pending`` and ``rejected`` are held back."""

    NONE = "none"
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
