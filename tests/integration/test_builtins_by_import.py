"""The built-in adapters are registered by import, not through an entry point: a checkout
that was never pip-installed (no distribution metadata, so no entry points at all) opens a
Memory with them, as an installed one does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]

PROGRAM = """
import importlib.metadata, json
assert not list(importlib.metadata.entry_points(group="tulving")), "metadata still seen"
from tulving import Memory
from tulving.plugins.registry import get_manager
names = get_manager()[1].names("storage")
with Memory(None, agent_id="a", storage="memory", embedder="hashing") as memory:
    memory.store("We deploy with blue-green releases", type="DECISION")
    hits = memory.search("how do we deploy?")
print(json.dumps({"storage": names, "hits": len(hits)}))
"""


def _site_without_this_distribution(folder: Path) -> Path:
    """The virtualenv's packages, minus this distribution's metadata and its editable
    finder: what an interpreter sees that runs a plain checkout on ``PYTHONPATH``."""
    site = Path(sysconfig.get_paths()["purelib"])
    folder.mkdir()
    for item in site.iterdir():
        if (item.name.startswith(("tulving_memory-", "__editable__"))
                or item.suffix == ".pth"):
            continue
        (folder / item.name).symlink_to(item)
    return folder


def test_an_uninstalled_checkout_keeps_the_builtin_adapters(tmp_path: Path) -> None:
    site = _site_without_this_distribution(tmp_path / "site")
    checkout = tmp_path / "checkout"  # the package folder alone (a build leaves metadata)
    checkout.mkdir()
    (checkout / "tulving").symlink_to(CHECKOUT / "tulving")
    env = {**os.environ, "PYTHONPATH": f"{checkout}{os.pathsep}{site}"}
    env.pop("TULVING_PLUGINS", None)
    done = subprocess.run([sys.executable, "-S", "-c", PROGRAM], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert {"memory", "sqlite", "postgres"} <= set(seen["storage"])
    assert seen["hits"] == 1
