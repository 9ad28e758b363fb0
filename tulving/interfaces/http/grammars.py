"""The grammars of the values the ``/v1`` API takes, as regular expressions its OpenAPI
document publishes and its request models enforce.

A client generating requests from the document (schemathesis does, so do code
generators) must get an answer for every value the schema allows and a 422 for every
value it forbids: so each pattern here is exactly the rule the library applies
(``tulving.domain.validation.check_key``, ``tulving.domain.identity.check_identity``),
written without look-arounds so that JSON Schema validators, ECMA-262 and Python read it
alike, or, for tags, the wire's own narrower rule, which the server checks with this very
pattern before the library's.

The address shapes (keys, ids, identities): a letter or digit, then letters, digits and
the shape's punctuation, where ``.`` and ``/`` never repeat (no ``..``, no empty
segment) and the end is not ``/``. Between two other characters they may alternate
(``a/./b``, ``a./.b``), so the separator is an alternation of the two.
"""

from __future__ import annotations

import functools
import re

#: ``.`` and ``/`` alternating, of any length (or nothing), between two other characters.
_SEPARATOR = r"(?:\.(?:/\.)*/?|/(?:\./)*\.?)?"
#: What may follow the last other character: nothing, or an alternation ending with ".".
_ENDING = r"(?:\.(?:/\.)*|/(?:\./)*\.)?"


def address(punctuation: str) -> str:
    """The anchored pattern of an address whose characters are letters, digits, ``.``,
    ``/`` and ``punctuation`` (escaped for a character class)."""
    other = rf"[A-Za-z0-9{punctuation}]"
    return rf"^[A-Za-z0-9](?:{_SEPARATOR}{other})*{_ENDING}$"


#: A key (``check_key``: at most 200 characters) or an id (26 of Crockford's base32,
#: which the key shape holds): what ``/v1/memory/{memory_id}`` and ``/v1/forget/...``
#: take.
KEY_OR_ID = address(r"_:\-")
KEY_MAX = 200
#: A user, workspace or agent id (``check_identity``: at most 256 characters).
IDENTITY = address(r"_:@+\-")
IDENTITY_MAX = 256

#: The Unicode blocks a tag may take its characters from over HTTP (the library takes any
#: printable character; a pattern every validator reads alike cannot name Unicode's
#: categories, so the door lists ranges, as literal characters): Latin, IPA, Greek,
#: Cyrillic, Armenian, Hebrew, Arabic, Devanagari, Bengali, Thai, Georgian, Hangul Jamo,
#: punctuation, symbols, arrows, shapes, dingbats, CJK (kana, ideographs), Hangul
#: syllables, full-width forms and emoji.
TAG_BLOCKS = ((0x21, 0x7E), (0xA1, 0x52F), (0x531, 0x58A), (0x5D0, 0x5F4),
              (0x600, 0x6FF), (0x900, 0x9FF), (0xE01, 0xE5B), (0x10A0, 0x10FF),
              (0x1100, 0x11FF), (0x1E00, 0x1FFF), (0x2010, 0x205E), (0x20A0, 0x2BFF),
              (0x3001, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3),
              (0xFF01, 0xFFEE), (0x1F300, 0x1FAFF))
TAG_MAX = 64


def _in_class(code: int) -> str:
    char = chr(code)
    return "\\" + char if char in "\\]^-[" else char


@functools.cache
def tag_pattern() -> str:
    """A tag over HTTP: 1 to 64 characters of ``TAG_BLOCKS`` that are printable (by this
    Python's Unicode tables, as the library's check), no comma, spaces inside only."""
    runs: list[tuple[int, int]] = []
    for low, high in TAG_BLOCKS:
        for code in range(low, high + 1):
            char = chr(code)
            if not char.isprintable() or char == ",":
                continue
            if runs and runs[-1][1] == code - 1:
                runs[-1] = (runs[-1][0], code)
            else:
                runs.append((code, code))
    chars = "".join(_in_class(a) if a == b else f"{_in_class(a)}-{_in_class(b)}"
                    for a, b in runs)
    one = f"[{chars}]"
    return rf"^{one}(?:(?:{one}| ){{0,{TAG_MAX - 2}}}{one})?$"


#: What Python's ``str.strip()`` removes (``str.isspace``), spelled out so that every
#: engine reads the class alike (ECMA's ``\s`` and Python's differ at the edges).
_BLANK = r"\t-\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
#: Text the library takes only when it is not blank (``not text.strip()`` is refused).
FILLED = rf"^[{_BLANK}]*[^{_BLANK}][\s\S]*$"
#: A memory's text (``check_content``): not blank, and no NUL anywhere.
CONTENT = rf"^[{_BLANK}]*[^\x00{_BLANK}][^\x00]*$"

_compiled: dict[str, re.Pattern[str]] = {}


def matches(pattern: str, value: str) -> bool:
    """Whether ``value`` is in the grammar ``pattern`` (one of the above)."""
    compiled = _compiled.get(pattern)
    if compiled is None:
        compiled = _compiled[pattern] = re.compile(pattern)
    return compiled.fullmatch(value) is not None
