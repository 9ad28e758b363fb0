"""What this library is called on the package index, and how to install a part of it.

The import name is ``tulving``; the distribution is ``tulving-memory``, because the name
``tulving`` on PyPI belongs to another project: ``pip install tulving`` installs that one.
Every message that tells a person what to install is built here, so none can name the
wrong distribution or extra.
"""

from __future__ import annotations

#: The distribution name (``pip install tulving-memory``); the import name is ``tulving``.
DISTRIBUTION = "tulving-memory"
#: Names that mean this distribution (the old one stays accepted in ``TULVING_PLUGINS``).
NAMES = frozenset({"tulving", "tulving-memory"})
#: The extras that make up ``default`` (the embedded default: SQLite + usearch + MiniLM).
DEFAULT_PARTS = frozenset({"usearch", "local"})


def install_command(extra: str | None = None) -> str:
    """``pip install 'tulving-memory[extra]'`` (quoted for a POSIX shell)."""
    return f"pip install '{DISTRIBUTION}[{extra}]'" if extra else f"pip install {DISTRIBUTION}"


def missing_extra(what: str, extra: str, missing: str | None = None) -> str:
    """One line saying that ``what`` needs ``extra`` and how to install it."""
    because = f" (missing: {missing})" if missing else ""
    return f"{what} needs the '{extra}' extra{because}: {install_command(extra)}"
