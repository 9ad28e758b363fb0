"""How the CLI speaks: human text or ``--json``, errors as exit codes, progress on stderr.

Results go to stdout (so ``--json`` output pipes cleanly into ``jq``); progress, warnings
and errors go to stderr. Every printed string is redacted by ``render``.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from tulving.application.plumbing.rule_set_source import redact
from tulving.domain import errors as E
from tulving.interfaces.render import scrub

OK, NOT_FOUND, USAGE, CONFIG, STORAGE, SECURITY, INTEGRITY, FAILURE = 0, 1, 2, 3, 4, 5, 6, 7
INTERRUPTED = 130

EXIT_CODES_HELP = """\
exit codes:
  0    success
  1    not found (no memory with that id or key, no such token)
  2    usage or validation error (bad arguments, bad content, unknown type)
  3    configuration error (unknown adapter, bad tulving.toml, missing extra)
  4    storage error (I/O, corruption, the store is locked by another process)
  5    refused for security (traversal path, entry outside your scope, policy)
  6    integrity check failed (audit chain, index or database check)
  7    other failure (embedder, LLM, vector index)
  130  interrupted

configuration (first match wins): command-line flags, environment variables
(TULVING_PATH, TULVING_AGENT_ID, TULVING_USER_ID, TULVING_WORKSPACE_ID, TULVING_STORAGE,
TULVING_VECTORS, TULVING_EMBEDDER, TULVING_TOKENIZER, TULVING_LLM, TULVING_ENCRYPTION,
TULVING_CONFIG), then
tulving.toml ([tulving] table; --config FILE or ./tulving.toml), then defaults
(~/.tulving/memory.db, agent "default", SQLite + usearch + the local model).
"""


def exit_code_for(exc: BaseException) -> int:
    if isinstance(exc, E.NotFoundError):
        return NOT_FOUND
    if isinstance(exc, E.ValidationError):
        return USAGE
    if isinstance(exc, E.ConfigError):
        return CONFIG
    if isinstance(exc, E.StorageError):
        return STORAGE
    if isinstance(exc, E.SecurityError | E.ScopeError):  # both are refusals
        return SECURITY
    if isinstance(exc, E.IntegrityError):
        return INTEGRITY
    return FAILURE


class Output:
    def __init__(
        self, as_json: bool = False, out: TextIO | None = None, err: TextIO | None = None
    ) -> None:
        self.as_json = as_json
        self.out = out or sys.stdout
        self.err = err or sys.stderr

    def result(self, data: Any, text: str | None = None) -> None:
        """Print ``data`` as JSON with ``--json``, else ``text`` (both redacted)."""
        if self.as_json or text is None:
            print(json.dumps(scrub(data), indent=2, ensure_ascii=False), file=self.out)
        else:
            print(redact(text), file=self.out)

    def info(self, text: str) -> None:
        """Human commentary: stderr with ``--json``, so stdout stays machine-readable."""
        print(redact(text), file=self.err if self.as_json else self.out)

    def error(self, exc: BaseException, code: int | None = None) -> int:
        """Report ``exc`` and return its exit code. With ``--json`` the error is also one
        JSON object on stdout, ``{"error": {"type", "message", "exit_code"}}`` (the HTTP
        server's error shape plus the exit code), so a script that parses stdout always
        gets JSON; the human line still goes to stderr."""
        code = exit_code_for(exc) if code is None else code
        message = redact(str(exc))
        if self.as_json:
            print(json.dumps(error_object(type(exc).__name__, message, code),
                             ensure_ascii=False), file=self.out)
        print(f"tulving: error: {message}", file=self.err)
        return code


def error_object(kind: str, message: str, code: int) -> dict[str, Any]:
    """The one shape of an error under ``--json``."""
    return {"error": {"type": kind, "message": message, "exit_code": code}}


class ProgressLine:
    """Progress of long commands (import, reindex, export) as a tqdm bar on stderr, one per
    stage; silent when stderr is not a terminal unless forced, so logs of scripted runs are
    not flooded with carriage returns. Called as ``progress(stage, done, total)``."""

    def __init__(
        self, stream: TextIO | None = None, force: bool = False, min_interval: float = 0.1
    ) -> None:
        self.stream = stream or sys.stderr
        self.enabled = force or self.stream.isatty()
        self.min_interval = min_interval
        self._bar: Any = None
        self._stage: str | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._bar is None or stage != self._stage:
            self.finish()
            from tqdm import tqdm

            self._bar = tqdm(total=total or None, desc=f"{stage:<10}", file=self.stream,
                             mininterval=self.min_interval, leave=True, unit="item",
                             dynamic_ncols=True)
            self._stage = stage
        if total and self._bar.total != total:
            self._bar.total = total
        self._bar.update(max(0, done - self._bar.n))
        if total and done >= total:
            self.finish()

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
            self._stage = None


def confirmed(yes: bool, what: str, question: str, answer: str) -> bool:
    """Whether a destructive command may go on: ``--yes``, or the person typed ``answer``
    at the terminal. Without a terminal and without ``--yes`` it is a usage error, never
    a silent go-ahead."""
    if yes:
        return True
    if not sys.stdin.isatty():
        from tulving.domain.errors import ValidationError

        raise ValidationError(f"{what}: confirm with --yes when not at a terminal")
    return input(f"{question} Type {answer!r} to go on: ").strip() == answer
