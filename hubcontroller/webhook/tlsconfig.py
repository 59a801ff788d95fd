"""TLS settings of the webhook server: Go's version and cipher suite names to OpenSSL's.

``--tls-min-version`` and ``--tls-cipher-suites`` take the names Go's
``crypto/tls`` (and component-base's flag parser) use; OpenSSL names the same
suites differently, so the table below translates. TLS 1.3 suites are
accepted and ignored, as Go ignores them: neither Go nor Python's ``ssl``
lets a server choose them.
"""

from __future__ import annotations

import ssl
from typing import Final

TLS_VERSIONS: Final[dict[str, ssl.TLSVersion]] = {
    "VersionTLS10": ssl.TLSVersion.TLSv1,
    "VersionTLS11": ssl.TLSVersion.TLSv1_1,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}
#: The webhook's floor when ``--tls-min-version`` is empty.
DEFAULT_TLS_VERSION: Final = ssl.TLSVersion.TLSv1_2

# IANA name (as Go spells it) -> OpenSSL name; None: a TLS 1.3 suite (not configurable).
CIPHER_SUITES: Final[dict[str, str | None]] = {
    # Go's secure suites.
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    # Go's legacy aliases of the two above.
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    # Go's insecure suites (still accepted by the flag).
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    # TLS 1.3.
    "TLS_AES_128_GCM_SHA256": None,
    "TLS_AES_256_GCM_SHA384": None,
    "TLS_CHACHA20_POLY1305_SHA256": None,
}


def parse_tls_version(name: str) -> ssl.TLSVersion:
    """``VersionTLS12`` -> TLS 1.2; empty -> the default (1.2). ValueError when unknown."""
    if not name:
        return DEFAULT_TLS_VERSION
    try:
        return TLS_VERSIONS[name]
    except KeyError:
        raise ValueError(
            f"--tls-min-version: unknown tls version {name!r} (one of {', '.join(TLS_VERSIONS)})"
        ) from None


def parse_cipher_suites(text: str) -> tuple[str, ...]:
    """The OpenSSL names of a comma-separated list of Go names (TLS 1.3 ones dropped).

    Empty text means the defaults (an empty tuple). ValueError names the first
    unknown suite, in component-base's words.
    """
    names: list[str] = []
    for raw in text.split(","):
        name = raw.strip()
        if not name:
            continue
        if name not in CIPHER_SUITES:
            raise ValueError(
                f"--tls-cipher-suites: Cipher suite {name} not supported or doesn't exist"
            )
        openssl = CIPHER_SUITES[name]
        if openssl is not None and openssl not in names:
            names.append(openssl)
    return tuple(names)


def server_context(min_version: str = "", cipher_suites: str = "") -> ssl.SSLContext:
    """A server context with the webhook's TLS floor and suites, without a certificate.

    Raises ValueError for unknown names, and ssl.SSLError when the local
    OpenSSL offers none of the chosen suites (e.g. RC4 on a modern build).
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = parse_tls_version(min_version)
    ciphers = parse_cipher_suites(cipher_suites)
    if ciphers:
        ctx.set_ciphers(":".join(ciphers))
    # The API server speaks HTTP/1.1 to webhooks; say so during the handshake.
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx
