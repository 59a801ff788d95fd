"""Loading a certificate and its key into an SSL context, with errors an operator can act on.

Used for client certificates (kubeconfigs) and serving certificates alike,
so it lives with the client, the bottom layer of the kit.
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path

__all__ = ["CertificatePairError", "load_cert_pair"]


class CertificatePairError(ValueError):
    """A certificate and key that were read but do not load; the message says which is wrong."""


def _no_passphrase() -> bytes:
    # OpenSSL's default is to prompt on the terminal for an encrypted key,
    # which would block the event loop; an empty passphrase fails at once.
    return b""


def load_cert_pair(
    context: ssl.SSLContext, cert_file: str | os.PathLike[str], key_file: str | os.PathLike[str]
) -> None:
    """``context.load_cert_chain(cert_file, key_file)`` that never prompts for a passphrase.

    Raises OSError for a file that cannot be read, and :class:`CertificatePairError`
    naming the problem (no PEM certificate, no PEM key, an encrypted key, a key of
    another certificate) where OpenSSL only says ``PEM lib``.
    """
    try:
        context.load_cert_chain(cert_file, key_file, password=_no_passphrase)
    except ssl.SSLError as err:
        raise CertificatePairError(_pair_problem(Path(cert_file), Path(key_file), err)) from err


def _pair_problem(cert_file: Path, key_file: Path, err: ssl.SSLError) -> str:
    """Which half of a pair OpenSSL refused, in words an operator can act on."""
    if err.reason == "KEY_VALUES_MISMATCH":
        return "the private key does not match the certificate"
    try:
        cert = cert_file.read_text(encoding="ascii", errors="ignore")
        key = key_file.read_bytes()
    except OSError:
        return str(err)  # replaced meanwhile: OpenSSL's words are all there is
    try:
        # Parses every certificate of the file, as the chain load does.
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=cert)
    except (ssl.SSLError, ValueError):
        return "the certificate file holds no readable PEM certificate"
    if b"ENCRYPTED" in key:
        return "the private key is encrypted (an unencrypted key is needed)"
    return "the key file holds no readable PEM private key"
