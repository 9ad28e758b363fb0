"""The one fsync every adapter that writes files shares (storage conversions, vector caches).

A rename is durable only once the folder that holds it is flushed, and a written file only
once its own descriptor is: both go through ``fsync_path``, opened read-only so it works on
a folder too.
"""

from __future__ import annotations

import os


def fsync_path(path: str | os.PathLike[str]) -> None:
    """Flush a file (or a folder, after a rename) so a crash cannot undo what was written."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
