"""Commands on an agent's memory as a whole: profile, consolidate, erase.

With the entry, search and admin commands they cover seed 004's ``/memory`` set (see the
table in docs/operations/portability.md). ``erase`` deletes for good, so it asks the person to type the subject
back (``--yes`` for scripts that already know what they erase).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from tulving.domain.errors import ValidationError
from tulving.interfaces.cli.config import add_common, add_json
from tulving.interfaces.cli.output import OK, USAGE, Output, confirmed
from tulving.interfaces.render import erase_phrase

if TYPE_CHECKING:
    from tulving.application.memory import Memory
    from tulving.interfaces.cli.command_types import RunWithMemory


def register(sub: Any, run_with_memory: RunWithMemory) -> None:
    p = sub.add_parser("profile", help="what is known about a subject (default: the user)")
    p.add_argument("subject", nargs="?", default="user", help="a person or thing (any case)")
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: run_with_memory(a, o, _profile))

    p = sub.add_parser("consolidate", help="merge near-duplicates, lift recurring episodes "
                       "into facts (a plan unless --apply)")
    p.add_argument("--apply", action="store_true", help="carry the plan out")
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: run_with_memory(a, o, _consolidate))

    p = sub.add_parser("erase", help="delete every memory of this user or agent for good")
    p.add_argument("subject", choices=("user", "agent"),
                   help="user: --user-id's memories in every workspace; agent: --agent-id's")
    p.add_argument("--yes", action="store_true", help="do not ask (for scripts)")
    add_json(p)
    add_common(p)
    p.set_defaults(func=lambda a, o: run_with_memory(a, o, _erase))


def _profile(memory: Memory, args: argparse.Namespace, out: Output) -> int:
    profile = memory.profile(args.subject)
    out.result(profile, profile.text)
    return OK


def _consolidate(memory: Memory, args: argparse.Namespace, out: Output) -> int:
    report = memory.consolidate(dry_run=not args.apply)
    verb = "merged" if args.apply else "would merge"
    out.result({"report": report, "applied": args.apply},
               f"{verb} {len(report.clusters)} clusters; "
               f"{len(report.semantic)} facts lifted from episodes; "
               f"{report.archived} memories archived")
    return OK


def _erase(memory: Memory, args: argparse.Namespace, out: Output) -> int:
    me = memory.identity
    name = me.user_id if args.subject == "user" else me.agent_id
    if name is None:
        raise ValidationError("erase user needs --user-id (or TULVING_USER_ID)")
    phrase = erase_phrase(args.subject, name)
    if not confirmed(args.yes, "erase deletes for good",
                     f"This deletes every memory of {args.subject} {name!r} for good.", phrase):
        out.info("not erased")
        return USAGE
    report = memory.erase(**{f"{args.subject}_id": name})
    out.result({"erased": report},
               f"erased {report.deleted} memories of {args.subject} {name} "
               f"({report.derived} derived summaries among them)")
    return OK
