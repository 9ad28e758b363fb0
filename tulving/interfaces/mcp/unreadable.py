"""The answer to a stdio line the SDK cannot read as a JSON-RPC message.

The SDK hands such a line on as an exception, which its dispatcher only logs: the client
that wrote it (say a tool call nested deeper than the parser's recursion limit) waits for
ever. ``answer`` is what the server writes back instead: a JSON-RPC error, with the
line's ``id`` when its shallow part names one (else ``null``, as JSON-RPC 2.0 says), code
-32700 for a line that is not JSON and -32600 for JSON that is not a message, nested
more than ``MAX_DEPTH`` deep included.
"""

from __future__ import annotations

import json
import re
from typing import Any

import mcp_types as types

#: Deepest nesting of arrays and objects a message may have (the SDK's parser gives up
#: somewhere between 100 and 200 levels; a tool's arguments never need this many).
MAX_DEPTH = 100
INVALID_REQUEST = -32600
#: A string (escapes included) or one bracket: what the scan below steps over.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


def shallow(line: str, keep: int = 2) -> tuple[str, int]:
    """``line`` with every array or object nested more than ``keep`` deep replaced by
    ``null``, and the line's deepest nesting (strings are stepped over whole)."""
    out: list[str] = []
    depth = deepest = 0
    cut = 0  # where the kept text resumes
    for match in _TOKEN.finditer(line):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if depth == keep + 1:
                out.append(line[cut:match.start()] + "null")
        elif token in "]}":
            if depth == keep + 1:
                cut = match.end()
            depth -= 1
    if depth <= keep:
        out.append(line[cut:])
    return "".join(out), deepest


def answer(line: str) -> types.JSONRPCError:
    """The JSON-RPC error that answers ``line`` (see the module's docstring)."""
    text, deepest = shallow(line)
    message: Any
    try:
        message = json.loads(text)
    except ValueError:
        message = None
    request_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    if message is None and deepest <= MAX_DEPTH:
        error = types.ErrorData(code=types.PARSE_ERROR,
                                message="Parse error: the line is not one JSON value")
    elif deepest > MAX_DEPTH:
        error = types.ErrorData(
            code=INVALID_REQUEST,
            message=f"Invalid request: the message is nested {deepest} deep, more than "
                    f"{MAX_DEPTH}")
    else:
        error = types.ErrorData(code=INVALID_REQUEST,
                                message="Invalid request: not a JSON-RPC 2.0 message")
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
