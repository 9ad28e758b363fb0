"""The deadline's last safe point (``deadline.committing``): the call and its door agree
under one lock, so a 503 always means nothing was written, and a call that committed
inside its limit is answered with what it wrote."""

from __future__ import annotations

import time

import pytest

from tulving.application.plumbing import deadline
from tulving.domain.errors import DeadlineExceeded


def test_a_commit_inside_the_limit_is_kept_and_the_door_waits_for_it() -> None:
    limit = deadline.Limit(5.0)
    with deadline.within(limit):
        deadline.committing()
        assert limit.committed
        time.sleep(0.01)
        limit.at = time.monotonic() - 1  # the limit passes after the commit ...
        deadline.check("later work")  # ... and the call is no longer cancelled
    assert limit.give_up() is False  # the door must wait for the answer


def test_past_the_limit_the_commit_is_refused() -> None:
    limit = deadline.Limit(0.0)
    with deadline.within(limit):
        time.sleep(0.01)
        with pytest.raises(DeadlineExceeded, match="nothing was written"):
            deadline.check("the import")
        with pytest.raises(DeadlineExceeded, match="nothing was written"):
            deadline.committing()
    assert limit.give_up() is True and not limit.committed


def test_once_the_door_gave_up_nothing_commits_even_inside_the_limit() -> None:
    limit = deadline.Limit(60.0)
    with deadline.within(limit):
        assert limit.give_up() is True  # the door answered 503 (e.g. a slow worker queue)
        with pytest.raises(DeadlineExceeded):
            deadline.committing()
    late = deadline.Limit(60.0)
    late.give_up()
    # a call queued past its limit never starts
    with pytest.raises(DeadlineExceeded), deadline.within(late):
        pass


def test_without_a_limit_the_checks_do_nothing() -> None:
    deadline.check()
    deadline.committing()
    assert deadline.remaining() is None
