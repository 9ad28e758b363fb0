"""``tulving``: the command line over ``tulving.Memory``.

argparse (stdlib) keeps the CLI free of dependencies. Each command group lives in its own
module and registers its subcommands here; this module only builds the parser, opens the
Memory for commands that need one, and turns typed errors into documented exit codes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tulving.domain.errors import TulvingError
from tulving.interfaces.cli import (
    commands_admin,
    commands_agent,
    commands_entries,
    commands_mcp,
    commands_portability,
    commands_search,
    commands_security,
    commands_serve,
    commands_sync,
    demo,
)
from tulving.interfaces.cli.command_types import Command
from tulving.interfaces.cli.config import add_common, open_memory, settings_from
from tulving.interfaces.cli.output import EXIT_CODES_HELP, INTERRUPTED, USAGE, Output, ProgressLine

if TYPE_CHECKING:
    from tulving.application.memory import Memory
    from tulving.interfaces.config import Settings



class UsageError(Exception):
    """A command line argparse refused; ``main`` reports it (as JSON under ``--json``)."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors, which matches our code for usage errors; the
    error is raised instead so that ``main`` can answer ``--json`` with JSON."""

    def error(self, message: str) -> Any:
        raise UsageError(self, message)


#: Commands that only read: they open a SQLite store read-only, so they work while another
#: process (an MCP or HTTP server) holds it for writing (see Memory's ``read_only``).
READ_ONLY_COMMANDS = frozenset({"search", "curate", "get", "list", "history", "stats",
                                "export"})


def run_with_memory(
    args: argparse.Namespace, out: Output, command: Command, progress: bool = False
) -> int:
    settings = settings_from(args)
    extra: dict[str, Any] = {"progress": ProgressLine()} if progress else {}
    memory = _open_for(args, settings, extra)
    try:
        return command(memory, args, out)
    finally:
        memory.close()


def _open_for(args: argparse.Namespace, settings: Settings, extra: dict[str, Any]) -> Memory:
    """A reading command opens a SQLite store read-only; one that is not there yet or
    needs a schema migration is opened normally instead (which creates or migrates it,
    or names the process holding it)."""
    from tulving.domain.errors import ReadOnlyError

    sqlite = (settings.storage in (None, "sqlite") and "://" not in settings.path
              and settings.path != ":memory:")
    reading = getattr(args, "command", None) in READ_ONLY_COMMANDS
    if reading and sqlite:
        _refuse_missing_store(settings.path, folder_only=True)
        memory = open_memory(settings, read_only=True, **extra)  # a config error first
        try:
            return memory.startup()
        except ReadOnlyError:
            memory.close()
            _refuse_missing_store(settings.path)  # else it needs a migration
    return open_memory(settings, **extra)


def _refuse_missing_store(path: str, *, folder_only: bool = False) -> None:
    """A command that only reads creates nothing: a path with no store at it (a typo, an
    unmounted volume, a folder that does not exist) is reported (``NotFoundError``, exit
    1), not made into a new, empty store there."""
    import os

    from tulving.domain.errors import NotFoundError

    full = os.path.abspath(os.path.expanduser(path))
    folder = os.path.dirname(full)
    if not os.path.exists(folder):  # a file there instead is the store's error (exit 4)
        raise NotFoundError(f"no memory at {path}: the folder {folder} does not exist "
                            "(a command that only reads creates nothing)")
    if not folder_only and os.path.isdir(folder) and not os.path.exists(full):
        raise NotFoundError(f"no memory at {path}: there is no store file there (a "
                            "command that only reads creates nothing; store or import "
                            "something first, or check --path)")


def build_parser() -> argparse.ArgumentParser:
    from tulving.version import __version__

    parser = _Parser(
        prog="tulving",
        description="Persistent, typed, searchable memory for AI agents, curated into a "
        "token budget. Start with `tulving demo`.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tulving {__version__}")
    add_common(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands_entries.register(sub, run_with_memory)
    commands_search.register(sub, run_with_memory)
    commands_admin.register(sub, run_with_memory)
    commands_agent.register(sub, run_with_memory)
    commands_portability.register(sub, run_with_memory)
    commands_mcp.register(sub)
    commands_serve.register(sub)
    commands_security.register(sub)
    commands_sync.register(sub, run_with_memory)
    demo.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help and --version: return, don't exit
        return exc.code if isinstance(exc.code, int) else USAGE
    except UsageError as exc:
        if "--json" in argv:
            return Output(as_json=True).error(exc, USAGE)
        exc.parser.print_usage(sys.stderr)
        print(f"{exc.parser.prog}: error: {exc}", file=sys.stderr)
        return USAGE
    if getattr(args, "command", None) is None:
        parser.print_help()
        return USAGE
    out = Output(as_json=bool(getattr(args, "json", False)))
    try:
        code: int = args.func(args, out)
        return code
    except TulvingError as exc:
        return out.error(exc)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a file argument that cannot be read
        return out.error(_as_tulving(exc))
    except ModuleNotFoundError as exc:  # a package of an extra that is not installed
        return out.error(_missing_package(exc))


def _missing_package(exc: ModuleNotFoundError) -> TulvingError:
    """One line for a package no command checked for: which, and how to get them all."""
    from tulving.distribution import install_command
    from tulving.domain.errors import ConfigError

    return ConfigError(f"a package this command needs is not installed ({exc.name}): "
                       f"install the extra that provides it, or all of them: "
                       f"{install_command('all')}")


def _as_tulving(exc: OSError) -> TulvingError:
    from tulving.domain.errors import StorageError

    return StorageError(str(exc))


if __name__ == "__main__":
    sys.exit(main())
