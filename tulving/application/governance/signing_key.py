"""The HMAC key that signs entries, read from the environment when a Memory is made.

Its own module (not ``integrity``'s, which verifies and reviews) so that ``Memory(...)``
fails fast on a missing or short key without loading the governance services.
"""

from __future__ import annotations

import os
from typing import Any

from tulving.domain.errors import ConfigError
from tulving.domain.signing import MIN_KEY_BYTES
from tulving.domain.write_policy import WritePolicy


def load_signing_key(policy: WritePolicy, environ: Any = None) -> bytes | None:
    """The HMAC key from the environment, or None when signing is off."""
    env = os.environ if environ is None else environ
    if policy.signing is False:
        return None
    raw = env.get(policy.signing_key_env)
    if not raw:
        if policy.signing is True:
            raise ConfigError(
                f"policy signing=True needs a key in the environment variable {policy.signing_key_env}"
            )
        return None
    key = raw.encode("utf-8")
    if len(key) < MIN_KEY_BYTES:
        raise ConfigError(
            f"the signing key in {policy.signing_key_env} is shorter than {MIN_KEY_BYTES} bytes"
        )
    return key
