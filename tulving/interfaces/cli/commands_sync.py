"""``tulving sync URL``: exchange deltas between this store and a Tulving server.

The server's bearer token is read from an environment variable (``--token-env``, default
``TULVING_TOKEN``), never from the command line, where ``ps`` and the shell history would
show it. ``--e2e-key env:VAR|file:PATH`` encrypts the deltas end to end (every device of
the tenant uses the same key; the server stores them unread). ``--quarantined`` lists the
tenant's deltas the server could not merge, with its reasons, and syncs nothing.

The report says when this store's entries were re-homed to the token's tenant (a store
with no user or workspace), which pulled deltas this store could not merge, and which of
its pushed deltas the server did not merge.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from tulving.domain.errors import ConfigError
from tulving.interfaces.cli.config import add_common, add_json
from tulving.interfaces.cli.output import OK, Output

if TYPE_CHECKING:
    from tulving.application.memory import Memory
    from tulving.client import TulvingClient
    from tulving.interfaces.cli.command_types import RunWithMemory


def register(sub: Any, run_with_memory: RunWithMemory) -> None:
    p = sub.add_parser("sync", help="pull and push deltas with a Tulving server")
    p.add_argument("url", help="the server, e.g. http://127.0.0.1:8765")
    p.add_argument("--token-env", default="TULVING_TOKEN",
                   help="the environment variable holding the bearer token [TULVING_TOKEN]")
    p.add_argument("--e2e-key", dest="e2e_key", default=None, metavar="env:VAR|file:PATH",
                   help="encrypt deltas end to end with this key")
    p.add_argument("--quarantined", action="store_true",
                   help="list the deltas the server could not merge (and why); sync nothing")
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: _checked(run_with_memory, a, o))


def _checked(run_with_memory: RunWithMemory, args: argparse.Namespace, out: Output) -> int:
    from tulving.interfaces.cli.extras import require

    require("sync")  # before the store is opened
    result: int = run_with_memory(args, out, _sync)
    return result


def _sync(memory: Memory, args: argparse.Namespace, out: Output) -> int:
    from tulving.client import TulvingClient

    token = os.environ.get(args.token_env)
    if not token:
        raise ConfigError(f"no server token: set the environment variable {args.token_env}")
    with TulvingClient(args.url, token, agent_id=memory.identity.agent_id) as remote:
        if args.quarantined:
            return _quarantined(remote, out)
        report = memory.sync(remote, encryption=args.e2e_key)
    lines = [f"pulled {report.pulled_deltas} deltas ({report.added} added, "
             f"{report.updated} updated), pushed {report.pushed_entries} entries"
             + (" (end-to-end encrypted)" if report.e2e else "")]
    if report.rehomed_to:
        lines.append(f"this store names no user or workspace: its entries were synced as "
                     f"{report.rehomed_to}, the token's tenant")
    for item in report.not_merged:
        lines.append(f"the server did not merge delta {item.seq} of this store (kept "
                     f"in quarantine, not sent to other devices): {item.reason}")
    if report.merging:
        lines.append(f"the server was still merging {len(report.merging)} delta(s) of this "
                     "store; a refusal would show at the next sync")
    for passed in report.skipped:
        lines.append(f"delta {passed.seq} could not be merged here and was passed over: "
                     f"{passed.reason}")
    out.result(report.as_dict(), "\n".join(lines))
    return OK


def _quarantined(remote: TulvingClient, out: Output) -> int:
    from tulving.application.portability.sync_service import delta_dict

    found = remote.sync_quarantined() or []
    text = "\n".join(f"delta {d.seq} from device {d.device} ({d.size} bytes, "
                     f"{d.pushed_at.isoformat()}): {d.reason}" for d in found)
    out.result({"quarantined": [delta_dict(d) for d in found]}, text or "no quarantined deltas")
    return OK
