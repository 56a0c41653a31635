"""Signing is a boundary, like a transport: one small interface (sign, verify, name the key)
with the key store behind it, chosen by the lab. Everything hil vouches for with a key (the
certification report today) goes through it.

A content hash says "unchanged since it was written"; a signature says "written by the holder
of this key". hil never calls the first the second.

The envelope is DSSE (the signature format of in-toto and Sigstore) and the keys are
securesystemslib's, so a lab's existing tools verify what hil signs: a PEM key file here, and
wherever a lab keeps its key (GPG, a cloud KMS, an HSM) through securesystemslib's signer URIs.
"""

from hil.signing.envelope import open_envelope, seal_envelope
from hil.signing.keys import LabKey, TrustedKey, load_lab_key, load_trusted_key

__all__ = [
    "LabKey",
    "TrustedKey",
    "load_lab_key",
    "load_trusted_key",
    "open_envelope",
    "seal_envelope",
]
