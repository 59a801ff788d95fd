"""Throw-away certificates for the tests' TLS endpoints: a one-call certificate builder.

Every suite that serves or dials TLS (the programs' endpoints, the webhook, the
gRPC server) makes its own CA and leaf certificates with :func:`signed_certificate`,
valid from five minutes ago for a day, and writes keys with :func:`pem_key`.
"""

from __future__ import annotations

import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


def new_key() -> ec.EllipticCurvePrivateKey:
    """A P-256 key."""
    return ec.generate_private_key(ec.SECP256R1())


def common_name(name: str) -> x509.Name:
    """The subject ``CN=<name>``."""
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])


def signed_certificate(
    subject: str | x509.Name,
    key: PrivateKey,
    *extensions: tuple[x509.ExtensionType, bool],
    issuer: x509.Name | None = None,
    signer: PrivateKey | None = None,
) -> x509.Certificate:
    """A certificate for ``subject`` (a CN or a whole name) and ``key``, valid from five
    minutes ago for a day; self-signed unless ``issuer`` and its ``signer`` key are given.
    ``extensions`` are (extension, critical) pairs."""
    now = datetime.datetime.now(datetime.UTC)
    name = common_name(subject) if isinstance(subject, str) else subject
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer or name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical=critical)
    return builder.sign(signer or key, hashes.SHA256())


def pem(cert: x509.Certificate) -> bytes:
    """The certificate, PEM."""
    return cert.public_bytes(serialization.Encoding.PEM)


def pem_encrypted_key(key: PrivateKey, passphrase: bytes = b"secret") -> bytes:
    """The private key, PKCS#8 PEM encrypted with ``passphrase``."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(passphrase),
    )


def pem_key(key: PrivateKey) -> bytes:
    """The private key, unencrypted PKCS#8 PEM."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
