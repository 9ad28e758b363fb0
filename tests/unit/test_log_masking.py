"""Tulving's log records are masked before any handler formats them: the message, its
arguments and the traceback of an exception that quotes content (a record goes to whoever
runs the process, not to the memory's callers)."""

from __future__ import annotations

import io
import logging

from tulving.domain.log_masking import masked_logger

EMAIL, PHONE = "ann.lee@example.com", "+44 20 7946 0958"
TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"


def test_a_record_and_its_traceback_are_masked_for_every_handler() -> None:
    logger = masked_logger("tulving.http")
    sink = io.StringIO()
    handler = logging.StreamHandler(sink)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    try:
        logger.warning("could not reach %s at %s", EMAIL, PHONE)
        try:
            raise ValueError(f"bad entry: token {TOKEN} for {EMAIL}")
        except ValueError:
            logger.exception("unexpected error")
    finally:
        logger.removeHandler(handler)
    written = sink.getvalue()
    assert "ValueError" in written and "unexpected error" in written
    for value in (EMAIL, PHONE, TOKEN):
        assert value not in written
    assert "[REDACTED:email]" in written and "[REDACTED:github_token]" in written


def test_the_filter_is_attached_once() -> None:
    first = masked_logger("tulving.mcp")
    assert masked_logger("tulving.mcp") is first
    assert len([f for f in first.filters if type(f).__name__ == "MaskingFilter"]) == 1
