"""``tulving sync URL``: exchange deltas between this store and a Tulving server.

The server's bearer token is read from an environment variable (``--token-env``, default
``TULVING_TOKEN``), never from the command line, where ``ps`` and the shell history would
show it. ``--e2e-key env:VAR|file:PATH`` encrypts the deltas end to end (every device of
the tenant uses the same key; the server stores them unread).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from tulving.domain.errors import ConfigError
from tulving.interfaces.cli.config import add_common, add_json
from tulving.interfaces.cli.output import OK, Output


def register(sub: Any, run_with_memory: Any) -> None:
    p = sub.add_parser("sync", help="pull and push deltas with a Tulving server")
    p.add_argument("url", help="the server, e.g. http://127.0.0.1:8765")
    p.add_argument("--token-env", default="TULVING_TOKEN",
                   help="the environment variable holding the bearer token [TULVING_TOKEN]")
    p.add_argument("--e2e-key", dest="e2e_key", default=None, metavar="env:VAR|file:PATH",
                   help="encrypt deltas end to end with this key")
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: _checked(run_with_memory, a, o))


def _checked(run_with_memory: Any, args: argparse.Namespace, out: Output) -> int:
    from tulving.interfaces.cli.extras import require

    require("sync")  # before the store is opened
    result: int = run_with_memory(args, out, _sync)
    return result


def _sync(memory: Any, args: argparse.Namespace, out: Output) -> int:
    from tulving.client import TulvingClient

    token = os.environ.get(args.token_env)
    if not token:
        raise ConfigError(f"no server token: set the environment variable {args.token_env}")
    with TulvingClient(args.url, token, agent_id=memory.identity.agent_id) as remote:
        report = memory.sync(remote, encryption=args.e2e_key)
    out.result(report.as_dict(),
               f"pulled {report.pulled_deltas} deltas ({report.added} added, "
               f"{report.updated} updated), pushed {report.pushed_entries} entries"
               + (" (end-to-end encrypted)" if report.e2e else ""))
    return OK
