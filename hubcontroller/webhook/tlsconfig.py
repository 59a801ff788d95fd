"""TLS settings of the webhook server: Go's version and cipher suite names to OpenSSL's.

The name tables and parsers are shared with the agent's HTTPS endpoint
(:mod:`ocmkit.runtime.tls`).
"""

from __future__ import annotations

import ssl

from ocmkit.runtime.tls import (
    CIPHER_SUITES,
    DEFAULT_TLS_VERSION,
    TLS_VERSIONS,
    parse_cipher_suites,
    parse_tls_version,
)

__all__ = [
    "CIPHER_SUITES",
    "DEFAULT_TLS_VERSION",
    "TLS_VERSIONS",
    "parse_cipher_suites",
    "parse_tls_version",
    "server_context",
]


def server_context(min_version: str = "", cipher_suites: str = "") -> ssl.SSLContext:
    """A server context with the webhook's TLS floor and suites, without a certificate.

    Raises ValueError for unknown names, and ssl.SSLError when the local
    OpenSSL offers none of the chosen suites (e.g. RC4 on a modern build): the
    webhook reports that as unusable TLS settings when it starts.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = parse_tls_version(min_version)
    ciphers = parse_cipher_suites(cipher_suites)
    if ciphers:
        ctx.set_ciphers(":".join(ciphers))
    # The API server speaks HTTP/1.1 to webhooks; say so during the handshake.
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx
