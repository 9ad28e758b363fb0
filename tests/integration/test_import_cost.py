"""Nothing heavy at import: each entry point loads what it uses when it uses it.

Checked by what a fresh interpreter has imported (deterministic, unlike a timing on a
shared machine; ``benchmarks/startup.py`` prints the times beside ``import numpy``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LOADED = """
import json, sys
{code}
names = sorted(sys.modules)
print(json.dumps(names))
"""


def _loaded(code: str, *args: str) -> set[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TULVING_")}
    done = subprocess.run([sys.executable, "-c", LOADED.format(code=code), *args],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def _under(loaded: set[str], *prefixes: str) -> set[str]:
    return {m for m in loaded if m.split(".")[0] in prefixes or m.startswith(prefixes)}


def test_import_tulving_loads_no_layer_and_no_engine() -> None:
    loaded = _loaded("import tulving")
    assert _under(loaded, "tulving") <= {"tulving", "tulving.version"}
    assert not _under(loaded, "numpy", "attrs", "pluggy")


def test_the_facade_loads_no_service_and_no_engine() -> None:
    loaded = _loaded("from tulving import Memory")
    assert "tulving.application.bootstrap" not in loaded
    assert not _under(loaded, "tulving.adapters", "tulving.plugins", "tulving.ports")
    assert not _under(loaded, "numpy", "pluggy", "detect_secrets", "opentelemetry")


def test_the_command_line_help_opens_nothing() -> None:
    loaded = _loaded("import sys\nsys.argv = ['tulving', '--help']\n"
                     "from tulving.interfaces.cli.main import main\n"
                     "try:\n    main()\nexcept SystemExit:\n    pass")
    assert "tulving.application.memory" not in loaded
    assert not _under(loaded, "tulving.adapters", "tulving.plugins")
    assert not _under(loaded, "numpy", "pluggy", "detect_secrets", "betterleaks")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tulving import Memory

    path = tmp_path_factory.mktemp("import-cost") / "m.db"
    with Memory(path, agent_id="a", embedder="hashing") as memory:
        memory.store("We deploy with blue-green releases", type="DECISION")
    return path


def test_a_memory_that_only_searches_loads_no_write_or_import_path(store: Path) -> None:
    loaded = _loaded("import sys\nfrom tulving import Memory\n"
                     "memory = Memory(sys.argv[1], agent_id='a', embedder='hashing',"
                     " read_only=True)\n"
                     "assert memory.search('how do we deploy?')\nmemory.close()", str(store))
    for module in ("tulving.application.writing.writer",
                   "tulving.application.portability.importer",
                   "tulving.application.curation.curator",
                   "tulving.application.governance.integrity",
                   "tiktoken", "opentelemetry.trace"):
        assert module not in loaded, module


def test_the_rule_sets_load_once_per_process(tmp_path: Path) -> None:
    """Installed by the first Memory (or redact()), loaded by the first text scanned, and
    kept by every later Memory of the process."""
    loaded = _loaded(
        "import sys\nfrom tulving import Memory, redact\nfrom tulving.domain import rule_sets\n"
        "assert 'detect_secrets' not in sys.modules\n"
        "with Memory(None, agent_id='a', storage='memory', embedder='hashing') as m:\n"
        "    m.store('deploy key ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8', type='FACT')\n"
        "first = rule_sets.current()\n"
        "assert first.secrets, 'the detectors were not installed'\n"
        "with Memory(None, agent_id='b', storage='memory', embedder='hashing') as m:\n"
        "    m.store('another', type='FACT')\n"
        "assert rule_sets.current() is first\n"
        "assert redact('ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8') == "
        "'[REDACTED:github_token]'")
    assert "detect_secrets" in loaded


def test_redact_without_a_memory_masks_with_the_full_rule_sets() -> None:
    loaded = _loaded("import tulving\n"
                     "assert tulving.redact('id 111-22-3333 key ghp_' + "
                     "'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8') == "
                     "'id [REDACTED:us_ssn] key [REDACTED:github_token]', "
                     "tulving.redact('id 111-22-3333')")
    assert "tulving.application.memory" not in loaded


def test_the_facades_size_caps_are_the_readers() -> None:
    """``Memory.import_bundle``'s and ``import_from``'s defaults are restated in the facade
    (so that importing it loads no reader): they must not drift."""
    from tulving.application import memory
    from tulving.application.portability import bundle_format
    from tulving.application.portability.formats import translation

    assert memory.BUNDLE_MAX_BYTES == bundle_format.DEFAULT_MAX_BYTES
    assert memory.FOREIGN_MAX_BYTES == translation.DEFAULT_MAX_BYTES
