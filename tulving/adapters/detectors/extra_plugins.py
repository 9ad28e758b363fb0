"""Credential formats detect-secrets 1.5 has no plugin for, written to its own plugin
interface (``RegexBasedDetector``: a ``secret_type`` and a ``denylist``), so they run
exactly like its plugins and could be offered upstream. Each names the vendor's documented
prefix; the corpus in ``tests/fixtures/secrets_corpus`` holds an example of each."""

from __future__ import annotations

import re

from detect_secrets.plugins.base import RegexBasedDetector


class AnthropicKeyDetector(RegexBasedDetector):
    secret_type = "Anthropic API Key"
    denylist = (re.compile(r"\bsk-ant-(?:api|admin|sid)\d{2}-[A-Za-z0-9_\-]{20,}"),)


class OpenAIProjectKeyDetector(RegexBasedDetector):
    """Project, service-account and admin keys (``sk-proj-``...) and the 48-character
    classic form without the legacy marker detect-secrets' OpenAI plugin needs."""

    secret_type = "OpenAI API Key"
    denylist = (re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}"),
                re.compile(r"\bsk-[A-Za-z0-9]{48}\b"))


class GitHubFineGrainedTokenDetector(RegexBasedDetector):
    secret_type = "GitHub Fine-grained Token"
    denylist = (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,255}"),)


class GoogleApiKeyDetector(RegexBasedDetector):
    secret_type = "Google API Key"
    denylist = (re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"),)


class HuggingFaceTokenDetector(RegexBasedDetector):
    secret_type = "Hugging Face Token"
    denylist = (re.compile(r"\bhf_[A-Za-z0-9]{30,}"),)


class NpmAccessTokenDetector(RegexBasedDetector):
    """A bare npm token (detect-secrets only finds one inside an .npmrc line)."""

    secret_type = "npm Access Token"
    denylist = (re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"),)


class MailgunKeyDetector(RegexBasedDetector):
    """A Mailgun private key on its own (betterleaks wants the word "mailgun" before it)."""

    secret_type = "Mailgun API Key"
    denylist = (re.compile(r"\bkey-[0-9a-f]{32}\b"),)


class VaultTokenDetector(RegexBasedDetector):
    """HashiCorp Vault service, batch and recovery tokens of any length (betterleaks'
    rule wants a service token of 90 characters or more)."""

    secret_type = "Vault Token"
    denylist = (re.compile(r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}"),)


class DopplerTokenDetector(RegexBasedDetector):
    """Doppler's personal, service, CLI, service-account, SCIM and audit tokens (betterleaks
    has the personal one only)."""

    secret_type = "Doppler Token"
    denylist = (re.compile(r"\bdp\.(?:pt|st(?:\.[a-z0-9_\-]{1,40})?|ct|sa|scim|audit)"
                           r"\.[A-Za-z0-9]{40,44}\b"),)


EXTRA_PLUGINS: tuple[type[RegexBasedDetector], ...] = (
    AnthropicKeyDetector, OpenAIProjectKeyDetector, GitHubFineGrainedTokenDetector,
    GoogleApiKeyDetector, HuggingFaceTokenDetector, NpmAccessTokenDetector,
    MailgunKeyDetector, VaultTokenDetector, DopplerTokenDetector)

#: Literal fragments one of which a text needs before each plugin's patterns can match:
#: (as written, lower-cased). A plugin missing here always runs.
EXTRA_TRIGGERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "AnthropicKeyDetector": (("sk-ant-",), ()),
    "OpenAIProjectKeyDetector": (("sk-",), ()),
    "GitHubFineGrainedTokenDetector": (("github_pat_",), ()),
    "GoogleApiKeyDetector": (("AIza",), ()),
    "HuggingFaceTokenDetector": (("hf_",), ()),
    "NpmAccessTokenDetector": (("npm_",), ()),
    "MailgunKeyDetector": (("key-",), ()),
    "VaultTokenDetector": (("hvs.", "hvb.", "hvr."), ()),
    "DopplerTokenDetector": (("dp.",), ()),
}
