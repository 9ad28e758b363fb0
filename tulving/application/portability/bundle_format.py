"""The bundle: one zip file, self-describing, safe to read from strangers.

Members, and nothing else (any other name, a directory or a traversal path is refused):

- ``manifest.json``: ``format`` ("tulving-bundle"), ``schema_version``, the creating
  library version, ``created_at``, ``entry_count``, the source identity, the filters used,
  ``redacted``, the embedding block of seed 001 (``model_name``/``model_id``,
  ``dimensions``, ``metric``, ``provider``, or null), and the digests: ``entries_digest``
  (sha256 over every entry's digest, in order), ``embeddings_digest`` (sha256 of the
  vector member) and ``bundle_digest`` over both;
- ``entries.jsonl``: one record per line, every field of the entry, its own ``digest``
  and ``vector_row`` (its row in the vector member, or null); deflate-compressed;
- ``embeddings.f32``: the vectors, little-endian float32 rows of ``dimensions`` values in
  entry order (stored, not compressed: floats barely compress).

Reading is strict: the file must be exactly what ``BundleWriter`` produces, these three
members in this order (entries deflated, vectors stored, manifest deflated), each local
header agreeing with the central directory, no byte before the first member, between
members or after the end record (no comment, no extra field but zip64's); anything else
is refused before a byte is inflated. Reading is bounded: the declared sizes and
compression ratios are checked first (a zip bomb is refused, not unpacked), a line is at
most ``MAX_LINE`` bytes, and zipfile's CRC check catches a truncated or altered member;
every zip or inflate failure (``zlib.error`` included) is a ``BundleError``. The archive seam
(``open_writer``/``open_reader`` over a binary file) is where encryption plugs in.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import struct
import zipfile
import zlib
from collections.abc import Iterator
from typing import IO, Any

import attrs

from tulving.application.plumbing.sealed_spool import sealed_spool
from tulving.application.portability.entry_codec import digest_of
from tulving.domain.errors import BundleError
from tulving.domain.validation import MAX_DEPTH, first_invalid_text, nesting_of

FORMAT = "tulving-bundle"
#: The version this library writes. Earlier versions are converted on read by the steps
#: in ``UPGRADES`` (version -> function returning the manifest of the next version);
#: schema 1 is the first, so there are none yet. A newer version is refused.
SCHEMA_VERSION = 1
UPGRADES: dict[int, Any] = {}
MANIFEST, ENTRIES, VECTORS = "manifest.json", "entries.jsonl", "embeddings.f32"
MEMBERS = frozenset({MANIFEST, ENTRIES, VECTORS})
#: What the writer produces, in its order, with each member's compression method.
LAYOUT = ((ENTRIES, zipfile.ZIP_DEFLATED), (VECTORS, zipfile.ZIP_STORED),
          (MANIFEST, zipfile.ZIP_DEFLATED))
#: Everything a damaged zip can raise while it is listed, read or inflated (a flipped flag
#: bit asks for a password: RuntimeError; an unknown method: NotImplementedError).
ZIP_FAILURES = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError,
                RuntimeError, NotImplementedError, struct.error, ValueError)
MAX_LINE = 4 * 1024 * 1024
MAX_MANIFEST = 1024 * 1024
#: Defaults a caller may raise: the whole bundle's inflated size and the inflate ratio.
DEFAULT_MAX_BYTES = 8 * 1024**3
MAX_RATIO = 200


def _check_member_names(infos: list[zipfile.ZipInfo]) -> dict[str, zipfile.ZipInfo]:
    found: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        name = info.filename
        if name not in MEMBERS or info.is_dir():
            shown = name[:80].encode("unicode_escape").decode("ascii")
            raise BundleError(f"unexpected member {shown!r} in the bundle (path traversal or "
                              "foreign file): only manifest, entries and embeddings belong")
        if name in found:
            raise BundleError(f"member {name} appears twice")
        found[name] = info
    for required in (MANIFEST, ENTRIES):
        if required not in found:
            raise BundleError(f"the bundle has no {required}")
    return found


_LOCAL = struct.Struct("<4s5H3L2H")  # the local file header, before name and extra
_EOCD, _EOCD64, _LOCATOR64 = 22, 56, 20
_ZIP64_EXTRA = 0x0001
#: General-purpose flag bits the writer may set: 3 (a data descriptor follows the data,
#: when it wrote to an unseekable stream) and 11 (UTF-8 names).
_ALLOWED_FLAGS = 0x0008 | 0x0800


def _extra_ids(extra: bytes) -> list[int]:
    ids, at = [], 0
    while at < len(extra):
        if at + 4 > len(extra):
            raise BundleError("a member's extra field is malformed")
        ident, size = struct.unpack_from("<HH", extra, at)
        ids.append(ident)
        at += 4 + size
    if at != len(extra):
        raise BundleError("a member's extra field is malformed")
    return ids


def check_layout(source: IO[bytes], archive: zipfile.ZipFile) -> None:
    """Refuse any zip ``BundleWriter`` does not produce: other members, order or
    compression; a local header that disagrees with the central directory; extra fields
    other than zip64's; and any byte outside the members, the directory and one end record
    (leading bytes, gaps, trailing bytes, a comment)."""
    infos = archive.infolist()
    if [(i.filename, i.compress_type) for i in infos] != list(LAYOUT):
        raise BundleError("the bundle's members are not the format's (entries, embeddings, "
                          "manifest, in that order and compression)")
    if archive.comment:
        raise BundleError("the bundle carries a zip comment (not written by Tulving)")
    size = source.seek(0, io.SEEK_END)
    position = 0
    for info in infos:
        if info.header_offset != position:
            raise BundleError(f"bytes before member {info.filename} (not a bundle as written)")
        if info.flag_bits & ~_ALLOWED_FLAGS:
            raise BundleError(f"member {info.filename} has flags the format never sets")
        if any(ident != _ZIP64_EXTRA for ident in _extra_ids(info.extra)):
            raise BundleError(f"member {info.filename} has extra data")
        source.seek(position)
        (signature, _version, flags, method, _time, _date, crc, compressed, plain, name_len,
         extra_len) = _LOCAL.unpack(source.read(_LOCAL.size))
        name = source.read(name_len)
        extra = source.read(extra_len)
        if (signature != b"PK\x03\x04" or name != info.filename.encode() or flags != info.flag_bits
                or method != info.compress_type):
            raise BundleError(f"member {info.filename}: its local header disagrees with the "
                              "central directory")
        zip64 = _ZIP64_EXTRA in _extra_ids(extra)
        if not flags & 0x0008 and (crc != info.CRC or (not zip64 and (
                compressed != info.compress_size or plain != info.file_size))):
            raise BundleError(f"member {info.filename}: its local header disagrees with the "
                              "central directory")
        position += _LOCAL.size + name_len + extra_len + info.compress_size
        if flags & 0x0008:
            descriptor = 24 if zip64 else 16
            source.seek(position)
            fields = source.read(descriptor)
            if len(fields) != descriptor or fields[:4] != b"PK\x07\x08" or \
                    struct.unpack_from("<L", fields, 4)[0] != info.CRC:
                raise BundleError(f"member {info.filename}: its data descriptor is damaged")
            position += descriptor
    if position != archive.start_dir:
        raise BundleError("bytes between the last member and the central directory")
    source.seek(size - _EOCD)
    end = source.read(_EOCD)
    if end[:4] != b"PK\x05\x06" or end[-2:] != b"\x00\x00":
        raise BundleError("bytes after the end of the bundle (not a bundle as written)")
    directory_size, directory_offset = struct.unpack_from("<LL", end, 12)
    tail = size - _EOCD - (archive.start_dir + directory_size)
    if directory_offset == 0xFFFFFFFF or tail:
        if tail != _EOCD64 + _LOCATOR64:
            raise BundleError("bytes after the end of the bundle (not a bundle as written)")
        source.seek(archive.start_dir + directory_size)
        if (source.read(4) != b"PK\x06\x06"
                or (source.seek(size - _EOCD - _LOCATOR64), source.read(4))[1] != b"PK\x06\x07"):
            raise BundleError("the bundle's zip64 end records are damaged")
    elif directory_offset != archive.start_dir:
        raise BundleError("bytes before the bundle (not a bundle as written)")


@attrs.frozen
class Manifest:
    data: dict[str, Any]

    @property
    def entry_count(self) -> int:
        return int(self.data["entry_count"])

    @property
    def embedding(self) -> dict[str, Any] | None:
        block = self.data.get("embedding")
        return dict(block) if isinstance(block, dict) else None

    @property
    def dimensions(self) -> int | None:
        block = self.embedding
        return int(block["dimensions"]) if block else None


def check_manifest(given: object) -> Manifest:
    if not isinstance(given, dict) or given.get("format") != FORMAT:
        raise BundleError("not a Tulving bundle (manifest format is missing or foreign)")
    raw: dict[str, Any] = given
    version = raw.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise BundleError(f"schema_version must be a positive integer, got {version!r}")
    if version > SCHEMA_VERSION:
        raise BundleError(
            f"bundle schema_version {version} is newer than this library reads "
            f"({SCHEMA_VERSION}): upgrade tulving to import it")
    while version < SCHEMA_VERSION:
        raw = UPGRADES[version](raw)
        version = raw["schema_version"]
    count = raw.get("entry_count")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise BundleError("entry_count must be a non-negative integer")
    for name in ("entries_digest", "embeddings_digest", "bundle_digest"):
        value = raw.get(name)
        if not isinstance(value, str) or len(value) != 64:
            raise BundleError(f"manifest {name} must be a sha256 hex digest")
    block = raw.get("embedding")
    if block is not None:
        dims = block.get("dimensions") if isinstance(block, dict) else None
        if (isinstance(dims, bool) or not isinstance(dims, int) or not 1 <= dims <= 65536
                or not isinstance(block.get("model_id"), str)):
            raise BundleError("manifest embedding block needs model_id and dimensions")
    return Manifest(raw)


def bundle_digest(entries_digest: str, embeddings_digest: str) -> str:
    return hashlib.sha256(f"{entries_digest}:{embeddings_digest}".encode()).hexdigest()


class BundleWriter:
    """Streams records into ``entries.jsonl`` and vectors into a spooled file, then writes
    the vector member and the manifest on ``finish``."""

    def __init__(self, target: IO[bytes]) -> None:
        self._zip = zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED,
                                    compresslevel=1, allowZip64=True)
        self._entries = self._zip.open(ENTRIES, "w", force_zip64=True)
        self._vectors: IO[bytes] = _spool()
        self._entries_hash = hashlib.sha256()
        self._vectors_hash = hashlib.sha256()
        self.rows = 0
        self.count = 0

    def add(self, record: dict[str, Any], vector: bytes | None) -> None:
        if vector is not None:
            record["vector_row"] = self.rows
            self._vectors.write(vector)
            self._vectors_hash.update(vector)
            self.rows += 1
        else:
            record["vector_row"] = None
        digest = digest_of(record)
        record["digest"] = digest
        self._entries_hash.update(digest.encode())
        self._entries.write(_line(record))
        self.count += 1

    def finish(self, manifest: dict[str, Any]) -> dict[str, Any]:
        self._entries.close()
        self._vectors.seek(0)
        info = zipfile.ZipInfo(VECTORS, date_time=(2020, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED
        with self._zip.open(info, "w", force_zip64=True) as out:
            while chunk := self._vectors.read(1 << 20):
                out.write(chunk)
        self._vectors.close()
        entries_digest = self._entries_hash.hexdigest()
        vectors_digest = self._vectors_hash.hexdigest()
        manifest = {**manifest, "format": FORMAT, "schema_version": SCHEMA_VERSION,
                    "entry_count": self.count, "entries_digest": entries_digest,
                    "embeddings_digest": vectors_digest,
                    "bundle_digest": bundle_digest(entries_digest, vectors_digest)}
        self._zip.writestr(MANIFEST, json.dumps(manifest, indent=2, sort_keys=True))
        self._zip.close()
        return manifest

    def abort(self) -> None:
        for closer in (self._entries.close, self._vectors.close, self._zip.close):
            with contextlib.suppress(OSError, ValueError, zipfile.BadZipFile):
                closer()


def _spool() -> IO[bytes]:
    # what spills to disk is sealed: a bundle of an encrypted store is never in clear there
    return sealed_spool(64 * 1024 * 1024)


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def load_json(data: bytes, what: str) -> Any:
    """``data`` parsed, every fault of the input a ``BundleError``: not JSON, not UTF-8,
    or nested deeper than ``MAX_DEPTH`` (a manifest 50,000 brackets deep overflowed the
    parser's recursion: a 500 at the server, a traceback at the CLI)."""
    if nesting_of(data):
        raise BundleError(f"{what} nests deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise BundleError(f"{what} is not JSON: {str(exc)[:200]}") from exc


def declared_entries(source: IO[bytes]) -> int | None:
    """How many entries the bundle in ``source`` declares (its manifest read, nothing
    else inflated), or None when it is not a plain bundle this can read (an encrypted
    one; a damaged one, which the import itself reports). ``source`` is rewound."""
    try:
        reader = BundleReader(source)
    except BundleError:
        return None
    finally:
        source.seek(0)
    try:
        return reader.manifest.entry_count
    finally:
        reader.close()
        source.seek(0)


class BundleReader:
    """Reads a bundle from a binary file, checking names, sizes and digests as it goes."""

    def __init__(self, source: IO[bytes], *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        try:
            self._zip = zipfile.ZipFile(source, "r")
            infos = self._zip.infolist()
        except ZIP_FAILURES as exc:
            raise BundleError(f"not a readable bundle (truncated or corrupt zip): {exc}") from exc
        self._members = _check_member_names(infos)
        try:
            check_layout(source, self._zip)
        except BundleError:
            self._zip.close()
            raise
        except ZIP_FAILURES as exc:
            self._zip.close()
            raise BundleError(f"not a readable bundle (corrupt zip): {exc}") from exc
        total = sum(i.file_size for i in infos)
        if total > max_bytes:
            raise BundleError(f"the bundle inflates to {total} bytes; the limit is {max_bytes}")
        for info in infos:
            if info.file_size > 1_000_000 and info.file_size > MAX_RATIO * max(info.compress_size, 1):
                raise BundleError(f"member {info.filename} would inflate {info.file_size} bytes "
                                  f"from {info.compress_size}: refused as a zip bomb")
        manifest_info = self._members[MANIFEST]
        if manifest_info.file_size > MAX_MANIFEST:
            raise BundleError("the manifest is oversized")
        raw = load_json(self._read(MANIFEST, MAX_MANIFEST), "the manifest")
        self.manifest = check_manifest(raw)
        dims = self.manifest.dimensions
        self.row_bytes = 4 * dims if dims else 0
        vector_info = self._members.get(VECTORS)
        size = vector_info.file_size if vector_info else 0
        if size and (not self.row_bytes or size % self.row_bytes):
            raise BundleError("the vector member does not hold whole rows of the declared "
                              "dimensions")
        self.vector_rows = size // self.row_bytes if self.row_bytes else 0

    def _read(self, name: str, limit: int) -> bytes:
        try:
            with self._zip.open(name) as handle:
                data = handle.read(limit + 1)
        except ZIP_FAILURES as exc:
            raise BundleError(f"member {name} is corrupt or truncated: {exc}") from exc
        if len(data) > limit:
            raise BundleError(f"member {name} is over {limit} bytes")
        return data

    def records(self) -> Iterator[tuple[dict[str, Any], bytes | None]]:
        """(record, vector bytes or None) in order; BundleError on any inconsistency,
        including digests that do not match the manifest (checked after the last line)."""
        entries_hash, vectors_hash = hashlib.sha256(), hashlib.sha256()
        count = 0
        expected_row = 0
        vectors = None
        try:
            vectors = self._zip.open(VECTORS) if VECTORS in self._members else None
            with self._zip.open(ENTRIES) as raw:
                stream = io.BufferedReader(raw, 1 << 20)  # type: ignore[type-var]
                while True:
                    line = stream.readline(MAX_LINE + 1)
                    if not line:
                        break
                    if len(line) > MAX_LINE:
                        raise BundleError(f"entry line {count + 1} is over {MAX_LINE} bytes")
                    record = load_json(line, f"entry line {count + 1}")
                    invalid = first_invalid_text(record, "entry")
                    if invalid is not None:
                        raise BundleError(f"entry line {count + 1}: {invalid} is not valid "
                                          "Unicode text")
                    if not isinstance(record, dict) or digest_of(record) != record.get("digest"):
                        raise BundleError(f"entry line {count + 1}: digest mismatch (tampered)")
                    entries_hash.update(str(record["digest"]).encode())
                    row = record.get("vector_row")
                    vector = None
                    if row is not None:
                        if row != expected_row or vectors is None:
                            raise BundleError(f"entry line {count + 1}: vector row out of order")
                        vector = vectors.read(self.row_bytes)
                        if len(vector) != self.row_bytes:
                            raise BundleError("the vector member is truncated")
                        vectors_hash.update(vector)
                        expected_row += 1
                    count += 1
                    if count > self.manifest.entry_count:
                        raise BundleError("more entries than the manifest declares")
                    yield record, vector
        except BundleError:
            raise
        except ZIP_FAILURES as exc:
            raise BundleError(f"the bundle is corrupt or truncated: {exc}") from exc
        finally:
            if vectors is not None:
                vectors.close()
        data = self.manifest.data
        if count != self.manifest.entry_count:
            raise BundleError(f"the bundle holds {count} entries; its manifest says "
                              f"{self.manifest.entry_count} (truncated?)")
        if expected_row != self.vector_rows:
            raise BundleError("the vector member holds rows no entry names")
        if (entries_hash.hexdigest() != data["entries_digest"]
                or vectors_hash.hexdigest() != data["embeddings_digest"]
                or bundle_digest(data["entries_digest"], data["embeddings_digest"])
                != data["bundle_digest"]):
            raise BundleError("the bundle digest does not match its contents (tampered)")

    def close(self) -> None:
        self._zip.close()
