"""Credentials a URL carries outside its password: in the path of a webhook (whoever
holds the URL may post to the channel) and as the user part of a DSN (Sentry's public
key, a token in ``https://<token>@github.com/...``). Tulving's own context rules, as the
password-in-a-URL rule is (:mod:`tulving.domain.redaction`).

A webhook's path is masked from its marker on (``/hooks/``, ``/webhooks/``,
``/IncomingWebhook/``, ``/with/key/``) where the host is a known webhook service, and
elsewhere from the first path segment that looks like a key (20 characters or more,
letters and digits), so ``https://hooks.example.com/services/build`` is left alone. A
user part is a key when it is 16 characters or more of letters and digits with both in
it (``git@``, ``deploy@`` are names). Patterns are bounded: cost linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: Hosts whose every hook path is a secret, however short its parts (Zapier's is 7).
HOOK_HOSTS = ("hooks.zapier.com", "maker.ifttt.com", "discord.com", "discordapp.com",
              "webhook.office.com", "hooks.slack.com", "outlook.office.com")
_HOOK_URL = re.compile(
    r"(?i:https?)://(?P<host>[A-Za-z0-9.\-]{1,253})(?::\d{1,5})?"
    r"(?P<before>(?:/[^\s/?#\"'<>]{1,128}){0,6}?)"
    r"/(?i:hooks|webhooks?|webhookb2|incomingwebhook|with/key|services)"
    r"(?P<path>/[^\s?#\"'<>]{1,1024})")
_KEYLIKE = re.compile(r"(?=[A-Za-z_\-]*[0-9])(?=[0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{20,}")
_USER_KEY = re.compile(
    r"\b[a-zA-Z][a-zA-Z0-9+.\-]{0,31}://(?P<user>[A-Za-z0-9_\-.~%]{16,256})@"
    r"(?=[A-Za-z0-9\[])")


def webhook_paths(text: str) -> Iterable[tuple[int, int]]:
    for match in _HOOK_URL.finditer(text):
        host = match.group("host").lower()
        start, end = match.span("path")
        if host.endswith(HOOK_HOSTS) or "webhook" in host:
            yield start + 1, end
            continue
        path = match.group("path")
        for segment in re.finditer(r"[^/]+", path):
            if _KEYLIKE.fullmatch(segment.group(0)):
                yield start + segment.start(), end
                break


def user_keys(text: str) -> Iterable[tuple[int, int]]:
    for match in _USER_KEY.finditer(text):
        user = match.group("user")
        if any(c.isdigit() for c in user) and any(c.isalpha() for c in user):
            yield match.span("user")
