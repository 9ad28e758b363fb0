"""Encryption at rest from the command line: keygen, encrypt, rekey, decrypt.

The key is always named, never typed: ``env:VARIABLE`` or ``file:PATH`` (as everywhere a
key is asked for). The store's current key is the usual ``--encryption`` /
``TULVING_ENCRYPTION`` / ``encryption =`` setting, so the command that opens the store
today is the one that converts it; the target key is ``--new-key`` (for ``encrypt`` it
defaults to that same setting, so the config that names the key opens the store next).
The conversion itself is crash-safe (see ``tulving.adapters.storage.sqlite.conversion``);
afterwards the store is opened once with its new key, which checks it and writes its
vector cache sealed (``--no-reindex`` skips that).
"""

from __future__ import annotations

import argparse
import os
import secrets
from typing import Any

from tulving.domain.errors import ConfigError, ValidationError
from tulving.interfaces.cli.config import add_common, add_json, open_memory, settings_from
from tulving.interfaces.cli.output import OK, Output

_KEY_HELP = "where the new key is: env:VARIABLE or file:PATH"


def register(sub: Any) -> None:
    p = sub.add_parser("keygen", help="write a new random encryption key to a file (mode 0600)")
    p.add_argument("file", help="the key file to create (never overwritten)")
    add_json(p)
    p.set_defaults(func=_keygen)

    p = sub.add_parser("encrypt", help="encrypt a plain SQLite store in place (crash-safe)")
    p.add_argument("--new-key", dest="new_key", default=None,
                   help=_KEY_HELP + " [default: --encryption / TULVING_ENCRYPTION]")
    _conversion_options(p)
    p.set_defaults(func=lambda a, o: _convert(a, o, "encrypt"))

    p = sub.add_parser("rekey", help="re-encrypt a store under a new key (crash-safe); the "
                       "current key is --encryption")
    p.add_argument("--new-key", dest="new_key", required=True, help=_KEY_HELP)
    _conversion_options(p)
    p.set_defaults(func=lambda a, o: _convert(a, o, "rekey"))

    p = sub.add_parser("decrypt", help="turn an encrypted store back into a plain one "
                       "(crash-safe); the current key is --encryption")
    _conversion_options(p)
    p.set_defaults(func=lambda a, o: _convert(a, o, "decrypt"))


def _conversion_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-reindex", dest="reindex", action="store_false",
                   help="do not open the store afterwards (its vector cache is then "
                   "rebuilt on the next open)")
    add_json(p)
    add_common(p)


def _keygen(args: argparse.Namespace, out: Output) -> int:
    path = os.path.expanduser(args.file)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise ValidationError(f"{path} exists; a key file is never overwritten") from None
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(secrets.token_hex(32) + "\n")
    out.result({"key_file": path}, f"wrote a new 256-bit key to {path}; use it with "
               f"--encryption file:{path} (keep a copy: without it the store is lost)")
    return OK


def _convert(args: argparse.Namespace, out: Output, action: str) -> int:
    from tulving.application.bootstrap import change_encryption
    from tulving.application.governance.encryption import parse_encryption

    settings = settings_from(args)
    current = settings.encryption
    if action == "encrypt":
        old = None
        new_source = args.new_key or current
        if not new_source:
            raise ConfigError("encrypt needs a key: --new-key env:VARIABLE (or file:PATH), "
                              "or --encryption / TULVING_ENCRYPTION")
        if args.new_key and current and args.new_key != current:
            raise ConfigError("the store is plain: give the target key once, as --new-key")
        new = parse_encryption(new_source)
    else:
        if not current:
            raise ConfigError(f"{action} needs the current key: --encryption env:VARIABLE "
                              "(or file:PATH), or TULVING_ENCRYPTION")
        old = parse_encryption(current)
        new_source = args.new_key if action == "rekey" else None
        new = parse_encryption(new_source) if new_source else None
    result = change_encryption(settings.path, old, new)
    if args.reindex:
        memory = open_memory(settings, encryption=new_source if new is not None else None)
        try:
            memory.startup()
        finally:
            memory.close()
    state = "encrypted" if new is not None else "plain"
    out.result({"path": settings.path, "action": action, "state": state,
                "entries": result.entries, "bytes": result.bytes_after},
               f"{action}: {settings.path} is now {state} ({result.entries} entries)")
    return OK
