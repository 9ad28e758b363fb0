"""Deterministic text for embedder tests and benchmarks: agent-memory-like sentences.

Generated from templates so nothing is downloaded and every run sees the same text; the
length mix (4 to ~60 words) resembles what agents store: preferences, decisions,
observations, plans and episode summaries.
"""

from __future__ import annotations

import random

_SUBJECTS = [
    "The user",
    "Alice",
    "Bob from the platform team",
    "The billing service",
    "Our CI pipeline",
    "The mobile app",
    "The staging database",
    "The customer in Berlin",
    "The on-call engineer",
    "The search index",
    "The payment provider",
    "The design review",
    "The new intern",
]
_VERBS = [
    "prefers",
    "decided to use",
    "reported a problem with",
    "asked about",
    "migrated to",
    "rolled back",
    "wants a summary of",
    "is blocked by",
    "scheduled a meeting about",
    "finished the refactor of",
    "complained about the latency of",
    "approved the budget for",
]
_OBJECTS = [
    "dark mode in the editor",
    "PostgreSQL for the shared store",
    "the authentication module",
    "the quarterly revenue report",
    "the nightly backup job",
    "rate limiting on the API",
    "the onboarding checklist",
    "the Kubernetes cluster upgrade",
    "vector search with HNSW",
    "the flaky integration tests",
    "the release notes for version 2.4",
    "GDPR data deletion",
    "the caching layer in front of the database",
    "the support ticket about refunds",
]
_TAILS = [
    "",
    "before Friday",
    "because the previous attempt timed out",
    "after the incident last week",
    "and wants it documented in the wiki",
    "so that new agents can resume the work without asking again",
    "while keeping the error budget under one percent for the rest of the quarter",
    "but only if the security team signs off on the change first",
]
_EXTRA = [
    "The logs showed three retries and a connection reset.",
    "Nobody has confirmed the root cause yet.",
    "This supersedes the decision from March.",
    "Follow up with the vendor about the contract renewal and the updated pricing tiers.",
    "It was discussed in the standup and everyone agreed.",
]

#: Pairs (anchor, paraphrase, unrelated) for checks that meaning is captured.
SEMANTIC_TRIPLES = [
    (
        "A cat is sleeping on the sofa.",
        "The kitten naps on the couch.",
        "Interest rates rose by half a percent.",
    ),
    (
        "How do I reset my password?",
        "I forgot my login credentials.",
        "The train to Berlin leaves at noon.",
    ),
    (
        "The server crashed overnight.",
        "Our backend went down during the night.",
        "She painted the fence blue.",
    ),
    (
        "The user prefers dark mode.",
        "They like a dark colour theme in the UI.",
        "Bananas are rich in potassium.",
    ),
    (
        "We decided to store memories in PostgreSQL.",
        "The team chose Postgres as the database.",
        "The concert was cancelled because of rain.",
    ),
]


def realistic_sentences(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct-ish sentences of mixed length, the same for a given seed."""
    rng = random.Random(seed)
    out: list[str] = []
    for _ in range(n):
        sentence = f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}"
        tail = rng.choice(_TAILS)
        sentence = f"{sentence} {tail}".strip() + "."
        if rng.random() < 0.3:
            sentence += " " + rng.choice(_EXTRA)
        if rng.random() < 0.1:
            sentence += " " + rng.choice(_EXTRA)
        out.append(sentence)
    return out
