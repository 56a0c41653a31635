"""The lab's key, both halves: `LabKey` signs, `TrustedKey` verifies. securesystemslib holds the
key material, so a PEM file here and a GPG key, cloud KMS or HSM in a lab are the same to hil.

A private key is given as a PEM file (ed25519, ECDSA or RSA, PKCS#8; an encrypted one takes its
passphrase from HIL_SIGNING_KEY_PASSWORD) or as a securesystemslib signer URI (`gnupg:`,
`gcpkms:`, `awskms:`, `azurekms:`, `hsm:`, `file2:` ...), which also needs the public key. A
public key is a PEM file or securesystemslib's JSON form of a key (`keyid`, `keytype`, `scheme`,
`keyval`), which is how KMS and GPG public keys are exported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil import environment
from hil.errors import SigningError

_KEY_FIXES = (
    "make a key pair with `openssl genpkey -algorithm ed25519 -out lab.key` and "
    "`openssl pkey -in lab.key -pubout -out lab.pub`, or give a signer URI (gnupg:, gcpkms:, "
    "awskms:, azurekms:, hsm:) with --key for its public half"
)


@dataclass(frozen=True)
class TrustedKey:
    """A public key hil verifies signatures with."""

    key: Any  # securesystemslib.signer.Key
    source: str

    @property
    def keyid(self) -> str:
        return str(self.key.keyid)

    def describe(self) -> str:
        return f"{self.key.keytype} key {self.keyid[:16]} ({self.source})"


@dataclass(frozen=True)
class LabKey:
    """The lab's private key, wherever it is kept: signs bytes, names itself."""

    signer: Any  # securesystemslib.signer.Signer
    source: str

    @property
    def public(self) -> TrustedKey:
        return TrustedKey(self.signer.public_key, self.source)

    @property
    def keyid(self) -> str:
        return self.public.keyid

    def describe(self) -> str:
        return self.public.describe()


def load_trusted_key(path: Path) -> TrustedKey:
    """A public key from a PEM file or from securesystemslib's JSON form of a key."""
    from securesystemslib.signer import Key, SSlibKey

    data = _read(path, "public key")
    try:
        if data.lstrip().startswith(b"{"):
            found = json.loads(data)
            keyid = found.pop("keyid", None)
            if not isinstance(keyid, str):
                raise ValueError('the JSON key has no "keyid"')
            return TrustedKey(Key.from_dict(keyid, found), str(path))
        from cryptography.hazmat.primitives.serialization import load_pem_public_key

        return TrustedKey(SSlibKey.from_crypto(load_pem_public_key(data)), str(path))
    except (ValueError, TypeError, KeyError) as e:
        raise SigningError(
            f"{path} is not a public key hil can use: {e}",
            fix="give the PEM public key (`openssl pkey -in lab.key -pubout`) or a "
            "securesystemslib key JSON with keyid, keytype, scheme and keyval",
        ) from e


def load_lab_key(spec: str, public: Path | None = None) -> LabKey:
    """The signing key: a PEM private key file, or a signer URI with its public key."""
    if _is_signer_uri(spec):
        return _from_uri(spec, public)
    path = Path(spec).expanduser()
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    from securesystemslib.signer import CryptoSigner

    data = _read(path, "private key")
    password = environment.SIGNING_KEY_PASSWORD.text().encode() or None
    try:
        private = load_pem_private_key(data, password)
    except (ValueError, TypeError) as e:
        raise SigningError(
            f"{path} is not a private key hil can read: {e}",
            fix="give an unencrypted PKCS#8 PEM key, or set HIL_SIGNING_KEY_PASSWORD for an "
            "encrypted one; " + _KEY_FIXES,
        ) from e
    try:
        trusted = load_trusted_key(public).key if public is not None else None
        return LabKey(CryptoSigner(private, trusted), str(path))
    except Exception as e:  # securesystemslib: KeyMismatchError, ValueError (unsupported key)
        raise SigningError(
            f"{path} cannot sign: {e}",
            fix="check that --key is this key's public half; " + _KEY_FIXES,
        ) from e


def _from_uri(uri: str, public: Path | None) -> LabKey:
    from securesystemslib.signer import Signer

    if public is None:
        raise SigningError(
            f"the signer URI {uri} needs its public key",
            fix="give --key PUBLIC_KEY (PEM, or the key JSON your KMS or GPG import printed)",
        )
    trusted = load_trusted_key(public)
    try:
        return LabKey(Signer.from_priv_key_uri(uri, trusted.key), uri)
    except Exception as e:  # each signer raises its own (network, GPG, KMS, file errors)
        raise SigningError(
            f"the signer {uri} could not be opened: {type(e).__name__}: {e}",
            fix="check the URI and that this machine can reach the key store",
        ) from e


def _is_signer_uri(spec: str) -> bool:
    from securesystemslib.signer import SIGNER_FOR_URI_SCHEME

    scheme, colon, _ = spec.partition(":")
    return bool(colon) and scheme in SIGNER_FOR_URI_SCHEME and not Path(spec).exists()


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise SigningError(f"cannot read the {what} {path}: {e.strerror}", fix=_KEY_FIXES) from e
