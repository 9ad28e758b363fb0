"""``python -m tulving.interfaces.mcp [options]``: the same as ``tulving mcp``."""

from __future__ import annotations

import sys

from tulving.interfaces.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["mcp", *sys.argv[1:]]))
