"""The secret that encrypts a store or a bundle, as a value that never prints itself.

Reading it from the environment or a key file is the application's job (the domain reads
nothing); this object only carries the bytes and says where they came from, so an error
message or a log line can name the source without ever showing the secret.
"""

from __future__ import annotations

import attrs

from tulving.domain.errors import EncryptionKeyError

#: A passphrase shorter than this is refused: it would fall to a brute-force search of
#: the key derivation long before the cipher mattered.
MIN_SECRET_BYTES = 16


@attrs.frozen(repr=False, eq=False)
class EncryptionKey:
    secret: bytes = attrs.field(repr=False)
    #: Where the secret came from ("env TULVING_ENCRYPTION_KEY", "file /etc/key"), shown
    #: in errors instead of the secret.
    source: str = "a key given in code"

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.secret, bytes):
            raise EncryptionKeyError(f"the encryption key from {self.source} must be bytes")
        if len(self.secret) < MIN_SECRET_BYTES:
            raise EncryptionKeyError(
                f"the encryption key from {self.source} is shorter than {MIN_SECRET_BYTES} "
                "bytes; use a long passphrase or `tulving keygen`"
            )

    def __repr__(self) -> str:
        return f"EncryptionKey(from {self.source})"

    def same_secret(self, other: EncryptionKey) -> bool:
        import hmac

        return hmac.compare_digest(self.secret, other.secret)
