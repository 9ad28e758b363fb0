"""Secret redaction: known credential shapes and credential assignments are masked;
ordinary prose and code are left alone."""

from __future__ import annotations

import pytest

from tulving.domain.errors import ValidationError
from tulving.domain.redaction import redact, redact_with_count

# Built from parts so this file itself does not look like it leaks keys.
OPENAI = "sk-" + "proj-" + "abc123DEF456ghi789JKL012mno345PQR"
OPENAI_LEGACY = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4"
ANTHROPIC = "sk-" + "ant-api03-" + "AbCdEf1234567890abcdefGHIJ_klmn-xyz0"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GITHUB_OAUTH = "gho_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
GITHUB_PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123"
SLACK = "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOp"
GOOGLE = "AIza" + "SyA1234567890abcdefghijklmnopqrstuv"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2+Zd\nq9Vf8xh0Yx2m\n"
    "-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"my key is {OPENAI} ok", "my key is [REDACTED:openai_key] ok"),
        (f"export OPENAI={OPENAI_LEGACY}", "export OPENAI=[REDACTED:openai_key]"),
        (f"claude: {ANTHROPIC}", "claude: [REDACTED:anthropic_key]"),
        (f"AWS_ACCESS_KEY_ID={AWS}", "AWS_ACCESS_KEY_ID=[REDACTED:aws_access_key]"),
        (f"push with {GITHUB}", "push with [REDACTED:github_token]"),
        (f"oauth {GITHUB_OAUTH}.", "oauth [REDACTED:github_token]."),
        (f"pat {GITHUB_PAT}", "pat [REDACTED:github_token]"),
        (f"slack {SLACK}", "slack [REDACTED:slack_token]"),
        (f"maps {GOOGLE}", "maps [REDACTED:google_api_key]"),
        (f"Authorization: Bearer {JWT}", "Authorization: Bearer [REDACTED:jwt]"),
        (f"cookie={JWT}; path=/", "cookie=[REDACTED:jwt]; path=/"),
        (
            "Authorization: Bearer 0a1b2c3d4e5f6a7b8c9d0e1f",
            "Authorization: Bearer [REDACTED:bearer_token]",
        ),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED:basic_auth]"),
        (f"key:\n{PEM}\nafter", "key:\n[REDACTED:private_key]\nafter"),
        ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg", "[REDACTED:private_key]"),
        ("password=hunter2", "password=[REDACTED:password]"),
        ("db password: hunter2", "db password: [REDACTED:password]"),
        ("DB_PASSWORD='s3cr3t!'", "DB_PASSWORD='[REDACTED:password]'"),
        ('{"api_key": "abcd1234efgh5678"}', '{"api_key": "[REDACTED:token]"}'),
        ("secret: xyz", "secret: [REDACTED:secret]"),
        ('client_secret = "abc"', 'client_secret = "[REDACTED:secret]"'),
        ("pwd=123456", "pwd=[REDACTED:password]"),
        ("auth_token: Zx9-88aa77bb", "auth_token: [REDACTED:token]"),
        (
            "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "AWS_SECRET_ACCESS_KEY=[REDACTED:secret]",
        ),
        (
            "https://deploy:Pa55w0rd@git.example.com/repo.git",
            "https://deploy:[REDACTED:url_password]@git.example.com/repo.git",
        ),
        (
            "postgres://app:hunter2@db:5432/prod",
            "postgres://app:[REDACTED:url_password]@db:5432/prod",
        ),
        (
            "https://api.example.com/v1?access_token=abc123XYZ789qq&x=1",
            "https://api.example.com/v1?access_token=[REDACTED:token]&x=1",
        ),
    ],
)
def test_secrets_are_masked_and_keys_kept(text: str, expected: str) -> None:
    assert redact(text) == expected


HARMLESS = [
    "primary key: user_id",
    "the token budget is 2000",
    "token: 2000",
    "max_tokens=500",
    "token_budget=2000",
    "password reset flow is broken",
    "passwords: must be at least 12 characters",
    "the secret: we ship on friday",
    "key=value pairs are parsed by the config loader",
    "sk-learn is a common typo for scikit-learn",
    "we use a Bearer scheme for the API",
    "Bearer tokens expire after an hour",
    "author: Jane Doe",
    "commit 3f2a9c1d7e4b5a6f8c9d0e1f2a3b4c5d6e7f8091 fixed it",
    "request id 550e8400-e29b-41d4-a716-446655440000",
    "The word SGVsbG8gV29ybGQ is base64 for hello world",
    "docs at https://example.com/path?page=2&sort=asc#top",
    "ssh git@github.com:org/repo.git",
    "mailto:someone@example.com",
    'password = request.form["password"]',
    "def login(user: str, password: str) -> bool:",
    "user.set_password(password)",
    "password=password",
    "self.password = password",
    "api_key = os.environ['OPENAI_API_KEY']",
    "api_key=${OPENAI_API_KEY}",
    "token = get_token()",
    "secret_key = settings.SECRET_KEY",
    "password: None",
    "bypass=enabled1",
    "compass: north",
    "task-abc123def456ghi789jkl012mno345",
    "The AKIA prefix marks AWS access key ids",
    "eyJ is how base64 JSON starts",
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
    "ratio 3:2, time 12:30:45, url http://localhost:8080/health",
]


@pytest.mark.parametrize("text", HARMLESS)
def test_prose_and_code_stay_intact(text: str) -> None:
    assert redact_with_count(text) == (text, 0)


def test_count_reports_each_mask() -> None:
    text = f"a={OPENAI} b={AWS} password=hunter2 ok"
    masked, count = redact_with_count(text)
    assert count == 3
    assert (
        masked
        == "a=[REDACTED:openai_key] b=[REDACTED:aws_access_key] password=[REDACTED:password] ok"
    )


def test_redaction_is_idempotent() -> None:
    text = f"api_key={OPENAI}\npassword: hunter2\nhttps://u:p4ss@h/\n{PEM}"
    once, first = redact_with_count(text)
    twice, second = redact_with_count(once)
    assert twice == once and second == 0 and first == 4
    assert OPENAI not in once and "hunter2" not in once and "p4ss" not in once


def test_secret_inside_a_long_memory_keeps_the_rest() -> None:
    text = "We rotated the deploy key.\nNew one: " + GITHUB + "\nRemember to update CI."
    assert redact(text) == (
        "We rotated the deploy key.\nNew one: [REDACTED:github_token]\nRemember to update CI."
    )


def test_non_text_is_a_validation_error() -> None:
    with pytest.raises(ValidationError):
        redact(b"password=x")  # type: ignore[arg-type]
