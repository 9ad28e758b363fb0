"""Fixtures of the door suites: the writable world for the whole session, a door per
parametrised case (``indirect``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.doors.door import Door
from tests.doors.worlds import World


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    made = World(tmp_path_factory.mktemp("doors"))
    yield made
    made.close()


@pytest.fixture
def door(request: pytest.FixtureRequest, world: World) -> Door:
    """The door named by the case's parameter, from the writable world."""
    return world.door(request.param)
