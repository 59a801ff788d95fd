"""Makes the self-signed serving certificate of :mod:`ocmkit.runtime.tls`.

Run as a script by :func:`ocmkit.runtime.tls.self_signed_certificate`, in
a process of its own, so that ``cryptography`` never loads into the agent:
``python selfsigned.py [--rsa] COMMON_NAME HOSTNAME...`` prints
``{"cert": PEM, "key": PEM}``. It imports only the standard library and
``cryptography``.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import json
import sys
from collections.abc import Iterable, Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: How long the start-up certificate is valid (the agent restarts long before).
SELF_SIGNED_VALIDITY = datetime.timedelta(days=365)
# Tolerated clock skew between the agent and a client that checks dates.
_BACKDATE = datetime.timedelta(minutes=5)


def _subject_alt_names(hostnames: Iterable[str]) -> list[x509.GeneralName]:
    """DNS names and IP addresses, each once, in order."""
    alt: list[x509.GeneralName] = []
    for name in dict.fromkeys(hostnames):
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt.append(x509.DNSName(name))
    return alt


def self_signed_certificate(
    common_name: str, hostnames: Iterable[str], *, rsa_key: bool = False
) -> tuple[bytes, bytes]:
    """A new key and a self-signed serving certificate for ``hostnames``, both PEM.

    ECDSA P-256 unless ``rsa_key`` (RSA 2048, for suites that authenticate
    with RSA); valid for :data:`SELF_SIGNED_VALIDITY`. Returns (cert, key).
    """
    key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if rsa_key
        else ec.generate_private_key(ec.SECP256R1())
    )
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + SELF_SIGNED_VALIDITY)
        .add_extension(x509.SubjectAlternativeName(_subject_alt_names(hostnames)), critical=False)
        # Its own CA, so that a client may pin it (verify against it) if it wants to.
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def main(argv: Sequence[str] | None = None) -> int:
    """Print a new certificate and key as JSON (see the module docstring)."""
    parser = argparse.ArgumentParser(description="a self-signed serving certificate")
    parser.add_argument("--rsa", action="store_true", help="RSA 2048 instead of ECDSA P-256")
    parser.add_argument("common_name")
    parser.add_argument("hostnames", nargs="+")
    args = parser.parse_args(argv)
    cert, key = self_signed_certificate(args.common_name, args.hostnames, rsa_key=args.rsa)
    json.dump({"cert": cert.decode(), "key": key.decode()}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
