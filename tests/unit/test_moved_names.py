"""Names that moved keep working for a release, with a DeprecationWarning that says where
they live now; the package's code names no issue of the tracker (history is in git)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import tulving.ports.storage as storage_port

MOVED = {
    "tulving.domain.storage_helpers": ("conflict_sides", "iter_batches"),
    "tulving.domain.sync_records": (
        "DELTA_MERGED", "DELTA_PENDING", "DELTA_QUARANTINED", "DELTA_STATES", "DELTA_STORED",
        "DEVICE_PATTERN", "SyncDelta", "adopted_watermark", "check_sync_device",
        "check_sync_state", "checked_adoption"),
}


@pytest.mark.parametrize("home,name", [(h, n) for h, names in MOVED.items() for n in names])
def test_a_name_the_storage_port_reexported_still_imports_with_a_warning(
    home: str, name: str
) -> None:
    with pytest.warns(DeprecationWarning, match=f"import it from {home}"):
        moved = getattr(storage_port, name)
    assert moved is getattr(importlib.import_module(home), name)


def test_the_port_itself_imports_without_a_warning(recwarn: pytest.WarningsRecorder) -> None:
    importlib.reload(storage_port)
    assert storage_port.StorageCapabilities().persistent
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        storage_port.not_a_name  # noqa: B018


def test_sync_filter_warns_and_still_answers() -> None:
    from tulving import Memory

    with Memory(None, agent_id="a", storage="memory", embedder="hashing") as memory, \
            pytest.warns(DeprecationWarning, match="sync_filter"):
        flt = memory.sync_filter()
    assert flt.include_archived


def test_the_package_names_no_tracker_issue() -> None:
    package = Path(__file__).resolve().parents[2] / "tulving"
    cited = [f"{path.relative_to(package.parent)}:{n}"
             for path in package.rglob("*.py")
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if re.search(r"\bissues? #?\d+", line, re.IGNORECASE)]
    assert cited == []
