"""DSSE envelopes (Dead Simple Signing Envelope, what in-toto attestations and Sigstore bundles
carry): a payload, its type, and signatures over both. securesystemslib's own `Envelope` makes
and checks them, so `Envelope.from_dict(...).verify([key], 1)` in any lab tool agrees with hil.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from hil.errors import SignatureInvalid, SigningError
from hil.signing.keys import LabKey, TrustedKey


def seal_envelope(payload: bytes, payload_type: str, key: LabKey) -> dict[str, Any]:
    """The payload in a DSSE envelope signed with the lab's key (JSON-ready)."""
    from securesystemslib.dsse import Envelope

    envelope = Envelope(payload=payload, payload_type=payload_type, signatures={})
    try:
        envelope.sign(key.signer)
    except Exception as e:  # a KMS, GPG agent or HSM says no in its own words
        raise SigningError(
            f"{key.source} could not sign: {type(e).__name__}: {e}",
            fix="check that the key store is reachable and the key may sign",
        ) from e
    document: dict[str, Any] = envelope.to_dict()
    return document


def open_envelope(envelope: Mapping[str, Any], key: TrustedKey, payload_type: str) -> bytes:
    """The payload, once a signature by `key` over it verifies; SignatureInvalid otherwise."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError

    try:
        opened = Envelope.from_dict(copy.deepcopy(dict(envelope)))  # from_dict pops members
    except (KeyError, TypeError, ValueError) as e:
        raise SignatureInvalid(
            f"not a DSSE envelope: {type(e).__name__}: {e}",
            fix="give the .intoto.jsonl file `hil report --sign` wrote",
        ) from e
    if opened.payload_type != payload_type:
        raise SignatureInvalid(
            f"the envelope carries {opened.payload_type!r}, not {payload_type!r}",
            fix="give the envelope of a hil certification report",
        )
    signers = ", ".join(sorted(opened.signatures)) or "no one"
    try:
        opened.verify([key.key], 1)
    except VerificationError as e:
        raise SignatureInvalid(
            f"no signature in the envelope verifies with {key.describe()} (signed by key ids: "
            f"{signers}): it was signed with another key, or changed after signing",
            fix="verify with the lab's public key; a changed envelope must be signed again",
        ) from e
    payload: bytes = opened.payload
    return payload
