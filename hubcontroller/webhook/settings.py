"""Settings of the ``hubcontroller webhook-server`` process (``flags.md`` §3).

Invalid values raise ValueError at construction, so a bad flag stops the
process before anything listens.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hubcontroller.settings import (
    DEFAULT_MANIFEST_LIMIT,
    DEFAULT_WEBHOOK_PORT,
    KNOWN_HUB_GATES,
    WebhookFlags,
)
from ocmkit.runtime.tls import parse_cipher_suites, parse_tls_version
from ocmkit.settings import check_gates

CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"


def default_cert_dir() -> Path:
    """controller-runtime's default: ``<TMPDIR>/k8s-webhook-server/serving-certs``.

    Go's ``os.TempDir()`` reads ``$TMPDIR`` and falls back to ``/tmp``; we do
    the same rather than Python's ``gettempdir()``, which probes other variables.
    """
    return Path(os.environ.get("TMPDIR") or "/tmp") / "k8s-webhook-server" / "serving-certs"


@dataclass(frozen=True)
class ValidationOptions:
    """What the admission rules depend on: the manifest size limit and the hub gates."""

    manifest_limit: int = DEFAULT_MANIFEST_LIMIT
    feature_gates: frozenset[str] = frozenset()


@dataclass(frozen=True)
class WebhookSettings(WebhookFlags):
    """Flags of ``work webhook-server`` (:class:`~hubcontroller.settings.WebhookFlags`), checked.

    As controller-runtime, ``--port`` 0 or negative means 9443, and
    ``--health-probe-port`` 0 or negative turns the probes off. ``host`` (the
    listen address, empty: all interfaces) and ``free_port`` (listen on a port
    the system picks, for tests) are not flags: OCM exposes neither.
    """

    host: str = ""
    free_port: bool = False

    def __post_init__(self) -> None:
        for flag, value in (("--port", self.port), ("--health-probe-port", self.health_probe_port)):
            if value > 65535:
                raise ValueError(f"{flag}={value}: must be a port number (at most 65535)")
        if self.metrics_port > 65535:
            raise ValueError(f"--metrics-port={self.metrics_port}: must be a port number")
        if self.manifest_limit < 0:
            raise ValueError(f"--manifestLimit={self.manifest_limit}: must not be negative")
        check_gates(self.feature_gates, KNOWN_HUB_GATES)
        # Parsed here only to fail early; the TLS context parses them again.
        parse_tls_version(self.tls_min_version)
        parse_cipher_suites(self.tls_cipher_suites)

    @property
    def listen_port(self) -> int:
        """The webhook's port: 0 (any) with ``free_port``, else ``--port`` (9443 when
        not positive)."""
        if self.free_port:
            return 0
        return self.port if self.port > 0 else DEFAULT_WEBHOOK_PORT

    @property
    def cert_dir(self) -> Path:
        """The directory holding ``tls.crt`` and ``tls.key``."""
        return Path(self.certdir) if self.certdir else default_cert_dir()

    @property
    def cert_file(self) -> Path:
        """The serving certificate (PEM, chain allowed)."""
        return self.cert_dir / CERT_FILE

    @property
    def key_file(self) -> Path:
        """The serving certificate's private key (PEM)."""
        return self.cert_dir / KEY_FILE

    @property
    def metrics_enabled(self) -> bool:
        """``--metrics-port`` 0 or negative disables metrics."""
        return self.metrics_port > 0

    @property
    def health_probes_enabled(self) -> bool:
        """``--health-probe-port`` 0 or negative disables the probes."""
        return self.health_probe_port > 0

    def validation_options(self) -> ValidationOptions:
        """The part of the settings the admission rules use."""
        return ValidationOptions(self.manifest_limit, self.feature_gates)
