"""TLS for our HTTPS endpoints: Go's version and cipher suite names, serving contexts.

``--tls-min-version`` and ``--tls-cipher-suites`` take Go's names; OpenSSL
names the same suites differently, so the table below translates. TLS 1.3
suites are accepted and ignored, as Go ignores them: neither Go nor Python's
``ssl`` lets a server choose them. A self-signed serving certificate never
touches the disk, so a read-only root filesystem is no obstacle.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final

import structlog

from ocmkit.kube.certpair import CertificatePairError, load_cert_pair

log = structlog.get_logger(__name__)

TLS_VERSIONS: Final[dict[str, ssl.TLSVersion]] = {
    "VersionTLS10": ssl.TLSVersion.TLSv1,
    "VersionTLS11": ssl.TLSVersion.TLSv1_1,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}
#: The floor when ``--tls-min-version`` is empty (library-go's and controller-runtime's).
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

# Run as a script (not ``-m``): the process imports nothing of ours but it.
_GENERATOR: Final = Path(__file__).with_name("selfsigned.py")


class TLSConfigError(ValueError):
    """A TLS flag value, certificate or key that cannot serve; the message names the flag."""


def parse_tls_version(name: str) -> ssl.TLSVersion:
    """``VersionTLS12`` -> TLS 1.2; empty -> the default (1.2). ValueError when unknown."""
    if not name:
        return DEFAULT_TLS_VERSION
    try:
        return TLS_VERSIONS[name]
    except KeyError:
        raise TLSConfigError(
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
            raise TLSConfigError(
                f"--tls-cipher-suites: Cipher suite {name} not supported or doesn't exist"
            )
        openssl = CIPHER_SUITES[name]
        if openssl is not None and openssl not in names:
            names.append(openssl)
    return tuple(names)


def server_context(min_version: str = "", cipher_suites: str = "") -> ssl.SSLContext:
    """A server context with this TLS floor and these suites, without a certificate.

    Raises ValueError for unknown names or when the local OpenSSL offers none
    of the chosen suites (e.g. only RC4 on a modern build).
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = parse_tls_version(min_version)
    ciphers = parse_cipher_suites(cipher_suites)
    if ciphers:
        try:
            ctx.set_ciphers(":".join(ciphers))
        except ssl.SSLError:
            raise TLSConfigError(
                f"--tls-cipher-suites: none of {cipher_suites} is available in this "
                f"OpenSSL build ({ssl.OPENSSL_VERSION})"
            ) from None
    # Both servers speak HTTP/1.1 only; say so during the handshake.
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


# -- serving certificates -------------------------------------------------------------


def default_hostnames() -> tuple[str, ...]:
    """The names a self-signed certificate covers: the pod's hostname and loopback."""
    names = ["localhost", "127.0.0.1", "::1"]
    hostname = socket.gethostname()
    if hostname and hostname not in names:
        names.insert(0, hostname)
    return tuple(names)


def self_signed_certificate(
    common_name: str, hostnames: Iterable[str], *, rsa_key: bool = False
) -> tuple[bytes, bytes]:
    """A new key and a self-signed serving certificate for ``hostnames``, both PEM.

    Made by :mod:`ocmkit.runtime.selfsigned` in a short-lived process of its
    own: ``cryptography`` would otherwise stay in the agent's memory (about
    10 MiB) for a certificate made once. Returns (cert, key).
    """
    options = ["--rsa"] if rsa_key else []
    command = [sys.executable, str(_GENERATOR), *options, "--", common_name, *hostnames]
    try:
        done = subprocess.run(command, capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise TLSConfigError(f"cannot make a self-signed certificate: {err}") from None
    if done.returncode != 0:
        problem = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise TLSConfigError(f"cannot make a self-signed certificate: {problem[0]}")
    pair = json.loads(done.stdout)
    return pair["cert"].encode(), pair["key"].encode()


@contextlib.contextmanager
def pem_file(content: bytes) -> Iterator[str]:
    """A path holding ``content`` for as long as the block runs.

    ``ssl`` loads certificates from paths only. Where the kernel offers
    anonymous memory files the key never reaches a file system; elsewhere it
    lives for a moment in a private temporary directory.
    """
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fd = os.memfd_create("serving-cert", os.MFD_CLOEXEC)
        try:
            os.write(fd, content)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="serving-cert-") as directory:
        path = Path(directory) / "tls.pem"
        path.touch(mode=0o600)
        path.write_bytes(content)
        yield str(path)


def serving_context(
    *,
    cert_file: str = "",
    key_file: str = "",
    min_version: str = "",
    cipher_suites: str = "",
    common_name: str = "serving",
    hostnames: Iterable[str] | None = None,
) -> ssl.SSLContext:
    """An HTTPS server context: the given certificate, else a new self-signed one.

    Raises :class:`TLSConfigError` (a ValueError naming the flag) for bad
    names, a missing half of the pair or files that do not load.
    """
    context = server_context(min_version, cipher_suites)
    if bool(cert_file) != bool(key_file):
        raise TLSConfigError("--tls-cert-file and --tls-private-key-file must be given together")
    if cert_file:
        try:
            load_cert_pair(context, cert_file, key_file)
        except (OSError, CertificatePairError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else err
            raise TLSConfigError(
                f"--tls-cert-file/--tls-private-key-file: cannot load {cert_file} with "
                f"{key_file}: {reason}"
            ) from None
        return context
    # An RSA key when the chosen TLS 1.2 suites all authenticate with RSA (ECDSA could not).
    tls12 = parse_cipher_suites(cipher_suites)
    cert_pem, key_pem = self_signed_certificate(
        common_name,
        default_hostnames() if hostnames is None else hostnames,
        rsa_key=bool(tls12) and not any("ECDSA" in openssl for openssl in tls12),
    )
    with pem_file(cert_pem + key_pem) as path:
        context.load_cert_chain(path)
    # library-go's words for the same situation, so operators recognise it.
    log.warning("Using insecure, self-signed certificates", subject=f"CN={common_name}")
    return context
