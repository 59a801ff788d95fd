"""Serving contexts of ``ocmkit.runtime.tls`` behind a real ObservabilityServer."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from ocmkit.kube.certpair import CertificatePairError, load_cert_pair
from ocmkit.runtime import ObservabilityServer
from ocmkit.runtime.tls import TLSConfigError, default_hostnames, serving_context
from tests.support.throwaway_pki import (
    new_key,
    pem,
    pem_encrypted_key,
    pem_key,
    signed_certificate,
)


@contextlib.asynccontextmanager
async def served(context: ssl.SSLContext) -> AsyncIterator[ObservabilityServer]:
    """An ObservabilityServer on a free loopback port with this context."""
    server = ObservabilityServer("127.0.0.1:0", ssl_context=context)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def tls12_client(openssl_cipher: str) -> ssl.SSLContext:
    """A TLS 1.2-only client offering one suite, verifying nothing."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(openssl_cipher)
    return ctx


async def negotiate(server: ObservabilityServer, client: ssl.SSLContext) -> tuple[str, bytes]:
    """(cipher, server certificate DER) of one handshake."""
    _reader, writer = await asyncio.open_connection(server.host, server.port, ssl=client)
    try:
        tls = writer.get_extra_info("ssl_object")
        cipher = tls.cipher()
        der = tls.getpeercert(binary_form=True)
        assert cipher is not None and der is not None
        return cipher[0], der
    finally:
        writer.close()
        await writer.wait_closed()


@pytest.mark.parametrize(
    ("go_suite", "openssl_suite", "key_type"),
    [
        ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256", rsa.RSAPublicKey),
        (
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            "ECDHE-ECDSA-AES128-GCM-SHA256",
            ec.EllipticCurvePublicKey,
        ),
    ],
)
async def test_self_signed_key_fits_the_chosen_suites(
    go_suite: str, openssl_suite: str, key_type: type
) -> None:
    """With only RSA-authenticated suites an ECDSA key could serve no TLS 1.2 client."""
    context = serving_context(cipher_suites=go_suite, common_name="test")
    async with served(context) as server:
        cipher, der = await negotiate(server, tls12_client(openssl_suite))
        assert cipher == openssl_suite
        assert isinstance(x509.load_der_x509_certificate(der).public_key(), key_type)


async def test_suites_outside_the_list_are_refused() -> None:
    context = serving_context(
        cipher_suites="TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", common_name="test"
    )
    async with served(context) as server:
        with pytest.raises((ssl.SSLError, ConnectionResetError)):
            await negotiate(server, tls12_client("ECDHE-ECDSA-AES128-GCM-SHA256"))
        cipher, _ = await negotiate(server, tls12_client("ECDHE-ECDSA-AES256-GCM-SHA384"))
        assert cipher == "ECDHE-ECDSA-AES256-GCM-SHA384"


def test_tls13_suites_are_accepted_and_leave_tls12_at_its_defaults() -> None:
    """As Go: TLS 1.3 suites cannot be chosen, so naming them changes nothing."""
    context = serving_context(
        cipher_suites="TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384", hostnames=("localhost",)
    )
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_version": "VersionTLS14"}, "--tls-min-version: unknown tls version"),
        ({"cipher_suites": "AES128-SHA"}, "--tls-cipher-suites: Cipher suite AES128-SHA"),
        ({"cipher_suites": "TLS_RSA_WITH_RC4_128_SHA"}, "none of TLS_RSA_WITH_RC4_128_SHA"),
        ({"cert_file": "/tls.crt"}, "must be given together"),
        (
            {"cert_file": "/nonexistent/tls.crt", "key_file": "/nonexistent/tls.key"},
            "cannot load /nonexistent/tls.crt with /nonexistent/tls.key: No such file",
        ),
    ],
)
def test_unusable_settings_name_the_flag(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(TLSConfigError, match=message):
        serving_context(**kwargs)


def _bad_pairs() -> dict[str, tuple[bytes, bytes]]:
    key = new_key()
    cert = pem(signed_certificate("pair", key))
    encrypted = pem_encrypted_key(key)
    return {
        "not PEM": (b"garbage\n", pem_key(key)),
        "a key as certificate": (pem_key(key), pem_key(key)),
        "key not PEM": (cert, b"garbage\n"),
        "a certificate as key": (cert, cert),
        "encrypted key": (cert, encrypted),
        "another key": (cert, pem_key(new_key())),
    }


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("not PEM", "the certificate file holds no readable PEM certificate"),
        ("a key as certificate", "the certificate file holds no readable PEM certificate"),
        ("key not PEM", "the key file holds no readable PEM private key"),
        ("a certificate as key", "the key file holds no readable PEM private key"),
        # OpenSSL would prompt for the passphrase on the terminal (or fail with EINVAL).
        ("encrypted key", "the private key is encrypted (an unencrypted key is needed)"),
        ("another key", "the private key does not match the certificate"),
    ],
)
def test_a_pair_that_does_not_load_says_which_half_is_wrong(
    tmp_path: Path, case: str, reason: str
) -> None:
    """Where OpenSSL only says ``[SSL] PEM lib``; the serving flags carry the same words."""
    cert_file, key_file = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert, key = _bad_pairs()[case]
    cert_file.write_bytes(cert)
    key_file.write_bytes(key)
    with pytest.raises(CertificatePairError) as caught:
        load_cert_pair(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), cert_file, key_file)
    assert str(caught.value) == reason
    with pytest.raises(TLSConfigError) as flagged:
        serving_context(cert_file=str(cert_file), key_file=str(key_file))
    assert str(flagged.value) == (
        f"--tls-cert-file/--tls-private-key-file: cannot load {cert_file} with {key_file}: {reason}"
    )


def test_self_signed_names_cover_loopback_and_the_hostname() -> None:
    names = default_hostnames()
    assert {"localhost", "127.0.0.1", "::1"} <= set(names)
    assert len(names) == len(set(names))


def test_the_certificate_is_made_out_of_process() -> None:
    """``cryptography`` (about 10 MiB resident) never loads into the agent."""
    script = (
        "import sys, workagent.agent\n"
        "from ocmkit.runtime.tls import serving_context\n"
        "serving_context()\n"
        "assert not [m for m in sys.modules if m.startswith('cryptography')], 'loaded'\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=120, check=False
    )
    lines = done.stdout.decode().strip().splitlines()
    assert (done.returncode, lines[-1:]) == (0, ["ok"]), done.stderr.decode()
