"""The serving certificate, reloaded when ``tls.crt``/``tls.key`` change, without a restart.

Certificates are rotated by cert-manager or the cluster-manager operator
writing new files into the mounted Secret. Every new TLS connection compares
the files' contents with what is being served (two small reads, far cheaper
than the handshake itself) and, when they differ, loads them into a fresh
context that the connection, and every later one, uses. Contents rather than
mtimes: a rewrite within the file system's timestamp granularity would go
unnoticed, contents cannot.

A pair that fails to load (a half-written rotation: new certificate, old key)
leaves the previous certificate in service; the next connection tries again.
"""

from __future__ import annotations

import datetime
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import structlog
from cryptography import x509

from hubcontroller.webhook import metrics
from ocmkit.kube.certpair import CertificatePairError, load_cert_pair

log = structlog.get_logger(__name__)


class CertificateError(Exception):
    """The serving certificate or key cannot be read or does not load."""


@dataclass(frozen=True)
class _Pair:
    cert: bytes
    key: bytes


class CertificateReloader:
    """Hands each new TLS connection the newest loadable certificate of ``cert_file``/``key_file``.

    ``make_context`` builds an empty server context with the TLS settings
    (version floor, suites); the reloader adds the certificate. Give
    :attr:`context` to the listening socket.
    """

    def __init__(
        self, cert_file: Path, key_file: Path, make_context: Callable[[], ssl.SSLContext]
    ) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self._make_context = make_context
        self._listening: ssl.SSLContext | None = None
        self._current: ssl.SSLContext | None = None
        self._served: _Pair | None = None
        # The pair that last failed to load, so a broken rotation is logged once.
        self._failed: _Pair | str | None = None
        self.reloads = 0

    @property
    def context(self) -> ssl.SSLContext:
        """The listening socket's context (call :meth:`load` first)."""
        if self._listening is None:
            raise CertificateError("the serving certificate is not loaded yet")
        return self._listening

    def load(self) -> None:
        """Load the certificate for the first time; raises CertificateError."""
        try:
            pair = self._read()
        except CertificateError:
            metrics.CERT_READ_ERRORS.inc()
            raise
        context = self._context_for(pair)
        # The listening context serves the first pair itself and, through the
        # SNI hook (called on every handshake, with or without SNI), hands a
        # newer context to connections once the files change.
        context.sni_callback = self._on_handshake
        self._listening = context
        self._current = context
        self._served = pair
        log.info("serving certificate loaded", **self._describe(pair))

    def check(self) -> bool:
        """Reload if the files changed; True when a new certificate is now served.

        Never raises: a read or load failure keeps the current certificate.
        """
        try:
            pair = self._read()
        except CertificateError as err:
            if self._failed != str(err):
                self._failed = str(err)
                metrics.CERT_READ_ERRORS.inc()
                log.warning(
                    "cannot read the serving certificate; keeping the current one", error=str(err)
                )
            return False
        if pair in (self._served, self._failed):
            return False
        try:
            context = self._context_for(pair)
        except CertificateError as err:
            self._failed = pair
            log.warning(
                "the new serving certificate does not load; keeping the current one", error=str(err)
            )
            return False
        self._current = context
        self._served = pair
        self._failed = None
        self.reloads += 1
        log.info("serving certificate reloaded", **self._describe(pair))
        return True

    def _on_handshake(
        self,
        connection: ssl.SSLObject | ssl.SSLSocket,
        server_name: str | None,
        context: ssl.SSLContext,
    ) -> None:
        # An exception here would fail the handshake: check() never raises.
        self.check()
        current = self._current
        if current is not None and current is not context:
            connection.context = current

    def _read(self) -> _Pair:
        try:
            return _Pair(self.cert_file.read_bytes(), self.key_file.read_bytes())
        except OSError as err:
            raise CertificateError(f"{err.filename}: {err.strerror}") from err

    def _context_for(self, pair: _Pair) -> ssl.SSLContext:
        # Counted like controller-runtime's certwatcher: one read per load attempt.
        metrics.CERT_READS.inc()
        context = self._make_context()
        try:
            # load_cert_chain reads files; what is loaded may be newer than
            # `pair` if a write lands in between, then the next check reloads.
            load_cert_pair(context, self.cert_file, self.key_file)
        except (OSError, CertificatePairError) as err:
            metrics.CERT_READ_ERRORS.inc()
            raise CertificateError(
                f"cannot load {self.cert_file} with {self.key_file}: {err}"
            ) from err
        return context

    @staticmethod
    def _describe(pair: _Pair) -> dict[str, str]:
        """Subject and expiry for the log line (nothing secret)."""
        try:
            cert = x509.load_pem_x509_certificate(pair.cert)
        except ValueError:
            return {}
        not_after = cert.not_valid_after_utc
        metrics.CERT_EXPIRY.set(not_after.timestamp())
        return {
            "subject": cert.subject.rfc4514_string(),
            "not_after": not_after.astimezone(datetime.UTC).isoformat(),
        }
