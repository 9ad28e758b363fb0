"""The shapes the CLI's command modules share: a command run on an open ``Memory``, and
the runner that opens the memory for it (``main.run_with_memory``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tulving.application.memory import Memory
    from tulving.interfaces.cli.output import Output

#: A command: the open memory, the parsed arguments, the output; returns the exit code.
Command = Callable[["Memory", argparse.Namespace, "Output"], int]


class RunWithMemory(Protocol):
    """Opens the memory the arguments name, runs ``command`` on it, closes it."""

    def __call__(self, args: argparse.Namespace, out: Output, command: Command,
                 progress: bool = False) -> int: ...
