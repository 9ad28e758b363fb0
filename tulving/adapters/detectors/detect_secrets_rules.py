"""Credential rules from detect-secrets' plugins, used as a library.

Each plugin's ``analyze_string`` (its regular expressions and its own checks, such as the
JWT plugin decoding the token) says which values in a text are secrets; no plugin's
``verify`` ever runs (that would send the secret to its vendor). Left out on purpose: the
high-entropy plugins (hashes, UUIDs and ids are everywhere in agent memory and are not
secrets), the public-IP plugin (an address is not a credential), and the keyword plugin
(Tulving's own assignment rule, tuned on agent memory, covers ``password = ...``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import RegexBasedDetector

from tulving.adapters.detectors.extra_plugins import EXTRA_PLUGINS, EXTRA_TRIGGERS
from tulving.domain.detection import Finder, Rule

LEFT_OUT = frozenset({"Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector",
                      "KeywordDetector"})

#: Literal fragments one of which a text must hold for each plugin's patterns to match,
#: read off the patterns of detect-secrets 1.5 (as written, lower-cased): a cheap test
#: that skips the plugin on most texts (short and common where ``MIN_RUNS`` below does
#: the rest: fewer fragments to look for in every text). A plugin not named here (a new one in a later
#: detect-secrets) always runs, so an upgrade can only cost time, never miss a secret.
TRIGGERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "AWSKeyDetector": (("A3T", "ABIA", "ACCA", "AKIA", "ASIA"), ("aws",)),
    "ArtifactoryDetector": (("AKC", "AP"), ()),
    "AzureStorageKeyDetector": (("AccountKey=",), ()),
    "BasicAuthDetector": (("://",), ()),
    "CloudantDetector": ((), ("cl",)),
    "GitHubTokenDetector": (("gh",), ()),
    "GitLabTokenDetector": (("gl", "GR1348941"), ()),
    "IbmCloudIamDetector": ((), ("key", "pwd", "pass", "token")),
    "IbmCosHmacDetector": ((), ("secret",)),
    "JwtTokenDetector": (("eyJ",), ()),
    "MailchimpDetector": (("-us",), ()),
    "NpmDetector": ((":_authToken=",), ()),
    "OpenAIDetector": (("T3BlbkFJ",), ()),
    "PrivateKeyDetector": (("BEGIN", "PuTTY-User-Key-File-2"), ()),
    "PypiTokenDetector": (("pypi-",), ()),
    "SendGridDetector": (("SG.",), ()),
    "SlackDetector": (("xox", "hooks.slack.com"), ()),
    "SoftlayerDetector": ((), ("sl", "softlayer")),
    "SquareOAuthDetector": (("sq0csp-",), ()),
    "StripeDetector": (("k_live_",), ()),
    "TelegramBotTokenDetector": ((":",), ()),
    "TwilioKeyDetector": (("AC", "SK"), ()),
    **EXTRA_TRIGGERS,
}


#: Kinds Tulving's masks have always used, kept for the formats that had them.
KIND_NAMES = {"AWS Access Key": "aws_access_key", "JSON Web Token": "jwt",
              "GitHub Token": "github_token", "GitHub Fine-grained Token": "github_token",
              "OpenAI Token": "openai_key", "OpenAI API Key": "openai_key",
              "Anthropic API Key": "anthropic_key", "Google API Key": "google_api_key",
              "Private Key": "private_key", "Slack Token": "slack_token",
              "Basic Auth Credentials": "url_password", "NPM tokens": "npm_token",
              "npm Access Token": "npm_token"}


#: The shortest run of token characters (letters, digits, ``_-+/=``) any match of each
#: plugin holds, read off the same patterns and kept on the low side: a text without a run
#: that long is not scanned (most prose). Not named: no bound (short passwords in URLs,
#: the words of a PEM header).
MIN_RUNS: dict[str, int] = {
    "AWSKeyDetector": 20, "ArtifactoryDetector": 11, "AzureStorageKeyDetector": 88,
    "CloudantDetector": 24, "DiscordBotTokenDetector": 24, "GitHubTokenDetector": 40,
    "GitLabTokenDetector": 25, "IbmCloudIamDetector": 44, "IbmCosHmacDetector": 48,
    "JwtTokenDetector": 10, "MailchimpDetector": 35, "NpmDetector": 11,
    "OpenAIDetector": 40, "PypiTokenDetector": 80, "SendGridDetector": 22,
    "SlackDetector": 8, "SoftlayerDetector": 64, "SquareOAuthDetector": 50,
    "StripeDetector": 32, "TelegramBotTokenDetector": 35, "TwilioKeyDetector": 34,
    "AnthropicKeyDetector": 27, "OpenAIProjectKeyDetector": 28,
    "GitHubFineGrainedTokenDetector": 33, "GoogleApiKeyDetector": 39,
    "HuggingFaceTokenDetector": 33, "NpmAccessTokenDetector": 40,
    "MailgunKeyDetector": 36, "VaultTokenDetector": 24, "DopplerTokenDetector": 40,
}


def kind_of(secret_type: str) -> str:
    """``"Stripe Access Key"`` -> ``"stripe_access_key"`` (the mask's kind)."""
    return KIND_NAMES.get(secret_type) or re.sub(r"[^a-z0-9]+", "_",
                                                  secret_type.lower()).strip("_")


#: Plugins whose own patterns cost time quadratic in a run of their prefix (``eyJ`` has no
#: left edge, so every ``eyJ`` of ``eyJeyJeyJ...`` starts a match that scans the whole
#: run): the same pattern, anchored where a token starts. Found by
#: ``benchmarks/redaction.py --worst-case``.
ANCHORED_PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    "JwtTokenDetector": (re.compile(
        r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9\-_=]+\.[A-Za-z0-9\-_=]+\.?[A-Za-z0-9\-_.+/=]*?"),),
}


def _spans(pattern: re.Pattern[str], text: str) -> Iterable[tuple[int, int]]:
    """Where ``pattern``'s matches are, as ``findall`` reports their values: the group
    when it has one, each group that took part when it has several, else the match."""
    groups = pattern.groups
    for match in pattern.finditer(text):
        if groups == 0:
            yield match.span()
        else:
            for group in range(1, groups + 1):
                start, end = match.span(group)
                if start >= 0 and end > start:
                    yield start, end
                    if groups == 1:
                        break


def _finder(plugin: RegexBasedDetector) -> Finder:
    """The plugin's matches with their positions, in one pass of each of its patterns
    (a plugin that checks its matches further, such as the JWT one decoding the token,
    checks each): ``analyze_string`` reports values only, and looking each value up in
    the text again cost values x text."""
    patterns = ANCHORED_PATTERNS.get(type(plugin).__name__) or tuple(plugin.denylist)
    checks = type(plugin).analyze_string is not RegexBasedDetector.analyze_string

    def find(text: str) -> Iterable[tuple[int, int]]:
        for pattern in patterns:
            for start, end in _spans(pattern, text):
                value = text[start:end]
                if not value.strip() or (checks and value not in plugin.analyze_string(value)):
                    continue
                yield start, end
    return find


def plugin_classes() -> list[type[RegexBasedDetector]]:
    """detect-secrets' own plugins (less those left out), then Tulving's extra ones."""
    mapping: Mapping[str, Any] = get_mapping_from_secret_type_to_class()
    found: list[type[RegexBasedDetector]] = [
        cls for cls in mapping.values()
        if cls.__name__ not in LEFT_OUT and issubclass(cls, RegexBasedDetector)]
    return [*sorted(found, key=lambda c: c.__name__), *EXTRA_PLUGINS]


def secret_rules() -> tuple[Rule, ...]:
    rules = []
    for cls in plugin_classes():
        triggers, itriggers = TRIGGERS.get(cls.__name__, ((), ()))
        source = "tulving" if cls in EXTRA_PLUGINS else "detect-secrets"
        rules.append(Rule(kind_of(str(cls.secret_type)), _finder(cls()),
                          triggers=triggers, itriggers=itriggers, source=source,
                          min_run=MIN_RUNS.get(cls.__name__, 0)))
    return tuple(rules)
