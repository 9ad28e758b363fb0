"""Recognising prompt injections in low-trust content, and what may enter curated context.

Memories are pasted into future prompts, so text that came from a web page, a webhook or
a tool's output can try to steer the agent that later reads it. Such text is not
refused (it may be a legitimate record of what the tool said) but held for review: it
is stored with ``review_status=PENDING`` and :func:`is_curatable` keeps it out of curated
context until a reviewer approves it.

The patterns look for *instructions addressed to a model*, not topics: "ignore previous
instructions", an exfiltration URL carrying data in its query string, tool-call markup or
"call the delete_all tool", chat-template role markers ("system prompt:",
``<|im_start|>system``). Prose that merely discusses prompts, tools or URLs does not
match; the unit tests hold a corpus of ordinary text that must stay clean.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

from tulving.domain.entry import MemoryEntry
from tulving.domain.types import LOW_TRUST_THRESHOLD, ReviewStatus

_FLAGS = re.IGNORECASE

_OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass|skip)\s+(?:all\s+|any\s+|the\s+|your\s+|of\s+)*"
    r"(?:previous|prior|above|earlier|preceding|former|original|system|safety|existing)\s+"
    r"(?:instructions?|prompts?|messages?|rules|directions|directives|guidelines|context)\b",
    _FLAGS,
)
_NEW_ORDERS = re.compile(
    r"(?:\bnew\s+instructions?\s*:|\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must|should)\b"
    r"|\byou\s+are\s+now\s+(?:in\s+)?(?:developer|god|jailbreak|dan|unrestricted)\b"
    r"|\bdo\s+not\s+(?:tell|inform|alert)\s+the\s+user\b|\bwithout\s+(?:telling|informing)\s+the\s+user\b)",
    _FLAGS,
)
_ROLE_MARKER = re.compile(
    r"(?:\bsystem\s+prompt\s*:|<\|im_start\|>\s*(?:system|assistant)|<\|(?:system|assistant)\|>"
    r"|\[/?(?:system|inst)\]|</?system>|^\s*#{2,}\s*(?:system|instruction)s?\s*:?\s*$)",
    _FLAGS | re.MULTILINE,
)
_TOOL_MARKUP = re.compile(
    r"(?:</?(?:tool_call|function_call|tool_use|invoke)\b[^>]*>|<\|tool_call\|>|\"tool_calls\"\s*:)",
    _FLAGS,
)
_TOOL_DIRECTIVE = re.compile(
    r"\b(?:call|invoke|execute|run|trigger|use)\s+(?:the\s+)?[`'\"]?"
    r"(?P<tool>[a-z][a-z0-9]*_[a-z0-9_]+)[`'\"]?\s+(?:tool|function)\b",
    _FLAGS,
)
_DESTRUCTIVE_TOOL = re.compile(
    r"\b(?:delete|drop|wipe|erase|remove|purge|rm|destroy)_?all\b", _FLAGS
)
_URL = re.compile(r"https?://[^\s<>\"')\]]+", _FLAGS)
_MD_IMAGE_URL = re.compile(r"!\[[^\]]*\]\(\s*(https?://[^\s)]+)", _FLAGS)
_DATA_PARAMS = frozenset({
    "data", "d", "secret", "secrets", "token", "key", "apikey", "api_key", "password", "pwd",
    "pass", "content", "memory", "memories", "conversation", "chat", "history", "payload",
    "exfil", "leak", "cookie", "cookies", "session", "env", "creds", "credentials", "prompt",
})  # fmt: skip
_TEMPLATE = re.compile(r"\{\{|\{[A-Za-z_]+\}|\$\{|\$\(|<[A-Za-z_]+>|%7B", _FLAGS)


def _exfiltration_url(url: str, in_image: bool) -> bool:
    try:
        query = urlsplit(url).query
    except ValueError:
        return False
    if not query:
        return False
    if _TEMPLATE.search(query):
        return True
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name.lower() in _DATA_PARAMS and value:
            return True
        if len(value) >= 48 and " " not in value:
            return True
        if in_image and value:
            return True
    return False


def injection_signals(text: str) -> list[str]:
    """Why ``text`` looks like a prompt injection (empty when it does not)."""
    signals: list[str] = []
    if _OVERRIDE.search(text):
        signals.append("instruction_override")
    if _NEW_ORDERS.search(text):
        signals.append("new_instructions")
    if _ROLE_MARKER.search(text):
        signals.append("role_marker")
    if _TOOL_MARKUP.search(text):
        signals.append("tool_call_markup")
    directive = _TOOL_DIRECTIVE.search(text)
    if directive is not None or (
        _DESTRUCTIVE_TOOL.search(text) and re.search(r"\btool\b", text, _FLAGS)
    ):
        signals.append("tool_directive")
    images = {m.group(1) for m in _MD_IMAGE_URL.finditer(text)}
    for match in _URL.finditer(text):
        url = match.group(0).rstrip(".,;:")
        if _exfiltration_url(url, url in images):
            signals.append("exfiltration_url")
            break
    return signals


def needs_review(trust: float, text: str) -> list[str]:
    """Signals that hold content for review: only low-trust sources are screened."""
    if trust >= LOW_TRUST_THRESHOLD:
        return []
    return injection_signals(text)


def is_curatable(entry: MemoryEntry) -> bool:
    """Whether ``entry`` may be placed in curated (prompt-bound) context.

    Curation calls this on every candidate: archived entries, entries held for review
    and entries a reviewer rejected never reach a prompt.
    """
    if entry.archived_at is not None:
        return False
    return entry.review_status not in (ReviewStatus.PENDING, ReviewStatus.REJECTED)
