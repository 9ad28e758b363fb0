"""Vendor-prefixed credentials that neither maintained rule set finds standing alone
(betterleaks wants the vendor's name or a ``*_TOKEN=`` beside some of them; detect-secrets
has no rule): the prefix is the vendor's documented marker, distinctive enough to need no
context. Payment gateways' access tokens are among them (Braintree/PayPal, Square,
Razorpay, Flutterwave, Mollie, Checkout.com).

Each pattern starts where a token starts and is bounded; the mask is widened to the
whole token, as for every rule set. Measured on ``tests/fixtures/secrets_corpus``'s
third corpus (every kind masked) and on the negative sets and dev conversations (none
changed: ``benchmarks/redaction.py --only-54``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tulving.domain.detection import Finder, Rule

_EDGE = r"(?<![A-Za-z0-9_\-$])"
#: kind -> (pattern after the token's start, literal fragments one of which it needs).
PREFIXED: dict[str, tuple[str, tuple[str, ...]]] = {
    "planetscale_token": (r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.]{32,64}", ("pscale_",)),
    "sentry_token": (r"sntry[su]_[A-Za-z0-9_=+/\-]{40,400}", ("sntry",)),
    "figma_token": (r"figd_[A-Za-z0-9_\-]{40,64}", ("figd_",)),
    "tailscale_key": (r"tskey-[a-z]{3,8}-[A-Za-z0-9]{6,}-[A-Za-z0-9]{20,64}", ("tskey-",)),
    "fly_token": (r"fo1_[A-Za-z0-9_\-]{40,64}", ("fo1_",)),
    "new_relic_key": (r"NR(?:AK|JS|II|AA)-[A-Z0-9]{27}", ("NRAK-", "NRJS-", "NRII-", "NRAA-")),
    "heroku_key": (r"HRKU-[A-Za-z0-9_\-]{20,100}", ("HRKU-",)),
    "braintree_access_token": (
        r"access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}",
        ("access_token$",)),
    "square_access_token": (r"EAAA[A-Za-z0-9_\-]{60}", ("EAAA",)),
    "razorpay_key": (r"rzp_(?:live|test)_[A-Za-z0-9]{14,32}", ("rzp_",)),
    "flutterwave_secret_key": (r"FLWSECK(?:_TEST)?-[a-f0-9]{32}-X", ("FLWSECK",)),
    "mollie_key": (r"(?:live|test)_(?=[A-Za-z]*[0-9])(?=[0-9]*[A-Za-z])[A-Za-z0-9]{30}"
                   r"(?![A-Za-z0-9])", ("live_", "test_")),
    "checkout_secret_key": (r"sk_(?:sbox_)?[a-z0-9]{26,32}(?![A-Za-z0-9])", ("sk_",)),
}


def _finder(pattern: re.Pattern[str]) -> Finder:
    def find(text: str) -> Iterable[tuple[int, int]]:
        for match in pattern.finditer(text):
            yield match.span()
    return find


def prefixed_rules() -> tuple[Rule, ...]:
    """One rule a vendor, run only on texts holding its prefix. A Braintree token holds
    ``$``, which no token runs on: its match is masked as it stands."""
    return tuple(
        Rule(kind, _finder(re.compile(_EDGE + pattern)), triggers=triggers,
             whole_token="$" not in pattern, min_run=20)
        for kind, (pattern, triggers) in PREFIXED.items())
