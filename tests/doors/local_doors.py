"""The doors of the store's own machine: the library in-process and the CLI as a
subprocess (argv, exit code, stdout and stderr as a user's shell sees them)."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from tests.doors.door import Door, given, store_fields
from tests.doors.outcome import CLI_EXIT, Outcome, Unsupported, family_of, typed
from tests.e2e.conftest import FAST, ROOT, clean_env
from tulving.domain.errors import TulvingError

#: In Python the store's owner gets the raw texts back (docs/operations/governance.md:
#: "get() in Python returns the raw text to its owner"); only curated text is shown.
RAW_TO_OWNER = "the library returns raw entries to the store's owner (documented)"


def _plain(value: Any) -> Any:
    """A library result as wire-like data: entries as their fields, nothing masked."""
    entry = getattr(value, "entry", None)
    if entry is not None and hasattr(entry, "content"):  # a search result
        return _plain(entry)
    if hasattr(value, "content") and hasattr(value, "id") and hasattr(value, "type"):
        return {"id": value.id, "key": value.key, "content": value.content,
                "tags": list(value.tags), "metadata": dict(value.metadata)}
    if hasattr(value, "entries") and hasattr(value, "content"):  # curated
        items = [getattr(i, "entry", i) for i in value.entries]
        return {"content": value.content, "entries": [{"id": i.id} for i in items]}
    if hasattr(value, "entries") and hasattr(value, "next_cursor"):  # a page
        return {"entries": [_plain(e) for e in value.entries]}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class LibraryDoor(Door):
    """``tulving.Memory`` in this process, held open for the door's life."""

    name = "library"

    def __init__(self, path: Path, *, agent_id: str = "e2e", user_id: str = "u1",
                 read_only: bool = False) -> None:
        super().__init__(path)
        self.agent_id, self.user_id, self.read_only = agent_id, user_id, read_only
        self._memory: Any = None

    @property
    def memory(self) -> Any:
        if self._memory is None:
            from tulving import Memory

            self._memory = Memory(self.path, agent_id=self.agent_id, user_id=self.user_id,
                                  embedder="hashing", vectors="exact",
                                  read_only=self.read_only).startup()
        return self._memory

    def close(self) -> None:
        if self._memory is not None:
            self._memory.close()
            self._memory = None

    def _run(self, fn: Any, *, shows: bool = False) -> Outcome:
        try:
            result = fn(self.memory)
        except TulvingError as exc:
            return Outcome(self.name, family_of(type(exc).__name__), shown=str(exc),
                           kind=type(exc).__name__)
        except TypeError as exc:
            if "unexpected keyword argument" in str(exc):  # Python's own refusal of a name
                return Outcome(self.name, "invalid", shown=str(exc), kind="TypeError")
            return Outcome(self.name, "crash", shown=repr(exc), kind="TypeError")
        except Exception as exc:  # no typed error: the case fails
            return Outcome(self.name, "crash", shown=repr(exc), kind=type(exc).__name__)
        payload = _plain(result)
        shown = payload.get("content", "") if shows and isinstance(payload, dict) else ""
        return Outcome(self.name, "ok", payload=payload, shown=shown,
                       meta={} if shows else {"unshown": RAW_TO_OWNER})

    @staticmethod
    def _time(value: Any) -> Any:
        """An ISO string becomes the datetime the library takes; anything else is
        passed as it is (a number is refused by the library, as it should be)."""
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                return value
        return value

    def op_store(self, content: Any, type: Any = "FACT", agent_id: Any = None,
                 extra: dict[str, Any] | None = None, **fields: Any) -> Outcome:
        body = store_fields(content, type, **fields, extra=extra)
        if "valid_from" in body:
            body["valid_from"] = self._time(body["valid_from"])
        content, kind = body.pop("content"), body.pop("type")

        def do(m: Any) -> Any:
            target = m if agent_id is None else m.view(agent_id=agent_id)
            return target.store(content, type=kind, **body)
        return self._run(do)

    def op_get(self, id_or_key: Any) -> Outcome:
        return self._run(lambda m: m.get(id_or_key))

    def op_forget(self, id_or_key: Any, hard: bool = False) -> Outcome:
        return self._run(lambda m: m.forget(id_or_key, hard=hard))

    def op_correct(self, id_or_key: Any, content: Any, reason: Any = None) -> Outcome:
        extra = {"metadata": {"correction_reason": reason}} if reason is not None else {}
        return self._run(lambda m: m.correct(id_or_key, content, **extra))

    def op_history(self, id_or_key: Any) -> Outcome:
        return self._run(lambda m: m.history(id_or_key))

    def op_search(self, query: Any, top_k: Any = None, extra: dict[str, Any] | None = None,
                  **options: Any) -> Outcome:
        options = {**given(**options), **(extra or {})}
        if "since" in options:
            options["since"] = self._time(options["since"])
        return self._run(lambda m: m.search(query, *([top_k] if top_k is not None else []),
                                            **options))

    def op_store_deep(self, depth: int) -> Outcome:
        return self._run(lambda m: m.store("x", type="FACT", metadata={"a": nested(depth)}))

    def op_curate(self, query: Any = None, **options: Any) -> Outcome:
        return self._run(lambda m: m.curate(query, **given(**options)), shows=True)

    def op_list_keys(self, prefix: Any = "") -> Outcome:
        return self._run(lambda m: m.list_keys(prefix))

    def op_list_entries(self) -> Outcome:
        return self._run(lambda m: m.list_entries(200))

    def op_stats(self) -> Outcome:
        return self._run(lambda m: m.stats())

    def op_profile(self, subject: Any = "user") -> Outcome:
        return self._run(lambda m: m.profile(subject))

    def op_remember(self, text: Any) -> Outcome:
        return self._run(lambda m: m.remember(text))

    def op_start_session(self, goal: Any = None) -> Outcome:
        return self._run(lambda m: m.start_session(goal))

    def op_consolidate(self, apply: Any = False) -> Outcome:
        # a non-bool reaches the library's own check as it is ("yes" is not "not yes")
        dry_run = not apply if isinstance(apply, bool) else apply
        return self._run(lambda m: m.consolidate(dry_run=dry_run))

    def op_import_bundle(self, data: bytes, dry_run: bool = False) -> Outcome:
        return self._run(lambda m: m.import_bundle(io.BytesIO(data), dry_run=dry_run))


def nested(depth: int) -> list[Any]:
    """A list nested ``depth`` deep, built without recursion."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _arg(value: Any, what: str) -> str:
    """One argv word: text as it is, a number as its digits; anything else cannot be
    typed at a shell prompt."""
    if isinstance(value, str):
        if "\x00" in value:
            raise Unsupported("argv cannot hold a NUL byte")
        if any("\ud800" <= ch <= "\udfff" and not "\udc80" <= ch <= "\udcff" for ch in value):
            raise Unsupported("argv is bytes: only undecodable bytes (U+DC80..U+DCFF) reach "
                              "Python's argv as lone surrogates")
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise Unsupported(f"argv holds text only: {what}={value!r} cannot be typed")


def _text(value: Any, what: str) -> str:
    """One argv word for a field whose value is text: anything else (a number, a bool)
    would reach the CLI as its digits, the same text, so it goes by ``store --jsonl``."""
    if not isinstance(value, str):
        raise Unsupported(f"argv holds text only: {what}={value!r} would arrive as text")
    return _arg(value, what)


class CLIDoor(Door):
    """``python -m tulving.interfaces.cli.main`` per operation, with ``--json`` (or the
    human text with ``text=True``)."""

    missing: ClassVar[dict[str, str]] = {
        "correct": "the CLI has no correct command (store again under the key)",
        "remember": "the CLI has no remember command",
        "start_session": "the CLI has no session commands",
        "audit": "the CLI has no per-entry audit command",
    }

    def __init__(self, path: Path, *, agent_id: str = "e2e", user_id: str = "u1",
                 text: bool = False) -> None:
        super().__init__(path)
        self.name = "cli-text" if text else "cli"
        self.agent_id, self.user_id, self.text = agent_id, user_id, text
        self._files = itertools.count()

    def run(self, *argv: str, agent_id: str | None = None) -> Outcome:
        common = ["--path", str(self.path), "--agent-id", agent_id or self.agent_id,
                  "--user-id", self.user_id, *FAST]
        words = [os.fsencode(a) for a in [*argv, *common, *([] if self.text else ["--json"])]]
        proc = subprocess.run([sys.executable.encode(), b"-m", b"tulving.interfaces.cli.main",
                               *words], capture_output=True, env=clean_env(), cwd=str(ROOT),
                              timeout=120)
        out = proc.stdout.decode("utf-8", "backslashreplace")
        err = proc.stderr.decode("utf-8", "backslashreplace")
        shown = out + err
        if "Traceback" in shown:
            return Outcome(self.name, "crash", shown=shown, code=proc.returncode)
        if proc.returncode == 0:
            payload: Any = None
            if not self.text:
                try:
                    payload = json.loads(out)
                except ValueError:
                    return Outcome(self.name, "crash", shown=shown, code=0,
                                   kind="not JSON under --json")
            return Outcome(self.name, "ok", payload=payload, shown=shown, code=0)
        kind = "(no JSON error object)"
        if not self.text:
            with contextlib.suppress(ValueError, KeyError, IndexError, TypeError):
                kind = json.loads(out.strip().splitlines()[-1])["error"]["type"]
        else:  # the human line names no type: judge by the documented exit code alone
            kind = next((k for k, code in (("ValidationError", 2), ("NotFoundError", 1),
                                           ("ConfigError", 3), ("StorageError", 4),
                                           ("SecurityError", 5))
                         if code == proc.returncode), "(unknown exit code)")
        return typed(self.name, kind, proc.returncode, shown, CLI_EXIT)

    def _jsonl(self, item: dict[str, Any]) -> Path:
        """One JSON line in a file of the store's folder (escaped: any text fits)."""
        path = self.path.parent / f"{self.name}-line-{next(self._files)}.jsonl"
        path.write_text(json.dumps(item) + "\n")
        return path

    def store_many(self, items: list[dict[str, Any]]) -> Outcome:
        """``store --jsonl``: the CLI's way of writing many memories, one process."""
        path = self.path.parent / f"{self.name}-batch-{next(self._files)}.jsonl"
        path.write_text("".join(json.dumps(i) + "\n" for i in items))
        return self.run("store", "--jsonl", str(path))

    def op_store(self, content: Any, type: Any = "FACT", agent_id: Any = None,
                 extra: dict[str, Any] | None = None, **fields: Any) -> Outcome:
        body = store_fields(content, type, **fields)
        try:  # the command line, where every value can be typed there
            argv = ["store", _text(content, "content"), "--type", _text(type, "type")]
            if "metadata" in body or "valid_from" in body:
                raise Unsupported("no flag for metadata or valid_from")
            if "key" in body:
                argv += ["--key", _text(body["key"], "key")]
            tags = body.get("tags", [])
            if not isinstance(tags, list):
                raise Unsupported("tags are repeated --tag flags")
            for tag in tags:
                argv += ["--tag", _text(tag, "tag")]
            if "importance" in body:
                if not isinstance(body["importance"], int | float) or isinstance(
                        body["importance"], bool):
                    raise Unsupported("--importance reads a number from its text")
                argv += ["--importance", _arg(body["importance"], "importance")]
            if "pinned" in body:
                if not isinstance(body["pinned"], bool):
                    raise Unsupported("pinned is a flag")
                argv.append("--pinned" if body["pinned"] else "--unpinned")
        except Unsupported:
            # what argv cannot carry, a JSON Lines file can: `store --jsonl`, the
            # CLI's door for structured input (wrong types included)
            if agent_id is not None:
                raise
            return self.run("store", "--jsonl", str(self._jsonl({**body, **(extra or {})})))
        for name, value in (extra or {}).items():
            argv += [f"--{name}", _arg(value, name)]
        return self.run(*argv, agent_id=None if agent_id is None else _arg(agent_id, "agent"))

    def op_get(self, id_or_key: Any) -> Outcome:
        return self.run("get", _arg(id_or_key, "id_or_key"))

    def op_store_deep(self, depth: int) -> Outcome:
        line = ('{"content": "x", "type": "FACT", "metadata": {"a": ' + "[" * depth
                + "]" * depth + "}}")
        path = self.path.parent / f"{self.name}-deep-{next(self._files)}.jsonl"
        path.write_text(line + "\n")
        return self.run("store", "--jsonl", str(path))

    def op_forget(self, id_or_key: Any, hard: bool = False) -> Outcome:
        return self.run("forget", _arg(id_or_key, "id_or_key"), *(["--hard"] if hard else []))

    def op_history(self, id_or_key: Any) -> Outcome:
        return self.run("history", _arg(id_or_key, "key"))

    def op_search(self, query: Any, top_k: Any = None, tags: Any = None, since: Any = None,
                  mode: Any = None, extra: dict[str, Any] | None = None,
                  min_score: Any = None) -> Outcome:
        argv = ["search", _arg(query, "query")]
        if min_score is not None:
            argv += ["--min-score", _arg(min_score, "min_score")]
        for name, value in (extra or {}).items():
            argv += [f"--{name}", _arg(value, name)]
        if top_k is not None:
            argv += ["--top-k", _arg(top_k, "top_k")]
        for tag in tags or []:
            argv += ["--tag", _arg(tag, "tag")]
        if since is not None:
            argv += ["--since", _arg(since, "since")]
        if mode is not None:
            argv += ["--mode", _arg(mode, "mode")]
        return self.run(*argv)

    def op_curate(self, query: Any = None, token_budget: Any = None,
                  mode: Any = None) -> Outcome:
        argv = ["curate"] + ([_arg(query, "query")] if query is not None else [])
        if mode == "orient":
            argv.append("--orient")
        elif mode is not None:
            raise Unsupported(f"curate has no mode {mode!r} (--orient or a query)")
        if token_budget is not None:
            argv += ["--budget", _arg(token_budget, "token_budget")]
        return self.run(*argv)

    def op_list_keys(self, prefix: Any = "") -> Outcome:
        return self.run("list", *([_arg(prefix, "prefix")] if prefix else []))

    def op_list_entries(self) -> Outcome:
        return self.run("list", "--all", "--limit", "1000")

    def op_stats(self) -> Outcome:
        return self.run("stats")

    def op_profile(self, subject: Any = "user") -> Outcome:
        return self.run("profile", _arg(subject, "subject"))

    def op_consolidate(self, apply: Any = False) -> Outcome:
        if not isinstance(apply, bool):
            raise Unsupported("--apply is a flag")
        return self.run("consolidate", *(["--apply"] if apply else []))

    def op_import_bundle(self, data: bytes, dry_run: bool = False) -> Outcome:
        path = self.path.parent / f"{self.name}-bundle-{next(self._files)}.tulving"
        path.write_bytes(data)
        return self.run("import", str(path), *(["--dry-run"] if dry_run else []))

    def op_export(self) -> Outcome:
        return self.run("export", str(self.path.parent / f"export-{next(self._files)}.zip"))
