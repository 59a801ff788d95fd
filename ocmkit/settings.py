"""What the settings of the long-running programs (agent, hub manager, gRPC server) share.

Imported by ``--help`` and every refused command line: the runtime (and with
it the Kubernetes client) is imported only where a value needs it.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, ClassVar

from ocmkit.command import LOG_FORMATS, LOG_LEVELS

if TYPE_CHECKING:
    import ssl

    from ocmkit.kube.client import KubeClient
    from ocmkit.runtime import LeaderElectionSettings, ManagerSettings


def check_logging(log_format: str, log_level: str) -> None:
    """Raise ValueError naming the flag if the log format or level is not one we have."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"--log-format {log_format!r} is not one of {', '.join(LOG_FORMATS)}")
    if log_level not in LOG_LEVELS:
        raise ValueError(f"--log-level {log_level!r} is not one of {', '.join(LOG_LEVELS)}")


def check_gates(gates: frozenset[str], known: frozenset[str]) -> None:
    """Raise ValueError for feature gates this program does not know."""
    unknown = sorted(gates - known)
    if unknown:
        raise ValueError(f"unrecognized feature gate: {', '.join(unknown)}")


def check_client_limits(flag: str, qps: float, burst: int) -> None:
    """Raise ValueError for a client's ``--<flag>-qps``/``--<flag>-burst`` that cannot work."""
    if not math.isfinite(qps):
        raise ValueError(f"--{flag}-qps must be a finite number, got {qps}")
    if burst < 0:
        raise ValueError(f"--{flag}-burst must be >= 0, got {burst}")


class ServingSettings:
    """Mixin of the settings of every program with a metrics and probe endpoint.

    The subclass declares these fields; ``SERVING_CERT_NAME`` is the common
    name of the self-signed serving certificate (``<name>@<unix time>``).
    """

    SERVING_CERT_NAME: ClassVar[str]

    listen: str
    insecure_serving: bool
    tls_cert_file: str
    tls_private_key_file: str
    tls_min_version: str
    tls_cipher_suites: str
    component_namespace: str

    def manager_settings(
        self, ssl_context: ssl.SSLContext | None, auth_client: KubeClient, *, handle_signals: bool
    ) -> ManagerSettings:
        """How the program's manager serves ``--listen``.

        ``ssl_context`` is :meth:`serving_tls`'s; callers of an HTTPS endpoint
        are reviewed through ``auth_client``.
        """
        from ocmkit.runtime import ManagerSettings  # noqa: PLC0415 (see the module)

        return ManagerSettings(
            bind_address=self.listen,
            ssl_context=ssl_context,
            auth_client=auth_client,
            handle_signals=handle_signals,
            build_info=self.component_namespace,
        )

    def serving_tls(self) -> ssl.SSLContext | None:
        """The context of the /metrics and probe endpoint; None for plain HTTP.

        Without ``--tls-cert-file`` every call makes a new self-signed certificate.
        Raises ValueError naming the flag at fault (a certificate or key that
        cannot be read or does not load).
        """
        if self.insecure_serving:
            return None
        from ocmkit.runtime.tls import serving_context  # noqa: PLC0415 (see the module)

        return serving_context(
            cert_file=self.tls_cert_file,
            key_file=self.tls_private_key_file,
            min_version=self.tls_min_version,
            cipher_suites=self.tls_cipher_suites,
            common_name=f"{self.SERVING_CERT_NAME}@{int(time.time())}",
        )

    def validate_serving(self) -> None:
        """Raise ValueError naming the flag at fault in ``--listen`` and the TLS flags.

        Only the TLS files' names are checked: the files are read when the
        process starts (as kubeconfigs are), where a pair that does not load is
        still exit code 2.
        """
        from ocmkit.runtime import parse_bind_address  # noqa: PLC0415 (see the module)
        from ocmkit.runtime.tls import TLSConfigError, server_context  # noqa: PLC0415

        try:
            parse_bind_address(self.listen)
        except ValueError as err:
            raise ValueError(f"--listen: {err}") from None
        cert_file, key_file = self.tls_cert_file, self.tls_private_key_file
        if self.insecure_serving and (cert_file or key_file):
            raise TLSConfigError(
                "--insecure-serving serves plain HTTP: it cannot be combined with "
                "--tls-cert-file/--tls-private-key-file"
            )
        if bool(cert_file) != bool(key_file):
            raise TLSConfigError(
                "--tls-cert-file and --tls-private-key-file must be given together"
            )
        server_context(self.tls_min_version, self.tls_cipher_suites)


class ProgramSettings(ServingSettings):
    """Mixin of the agent's and the hub manager's settings dataclasses (see the base)."""

    KNOWN_GATES: ClassVar[frozenset[str]]

    feature_gates: frozenset[str]
    leader_election: LeaderElectionSettings
    log_format: str
    log_level: str

    @property
    def namespace(self) -> str:
        """The component namespace (``--namespace``), where the Lease lives."""
        return self.leader_election.namespace

    def gate(self, name: str) -> bool:
        """Whether a feature gate is on."""
        return name in self.feature_gates

    def validate_shared(self) -> None:
        """Raise ValueError naming the flag at fault in the fields every program shares.

        Gates, ``--listen``, the TLS flags, logging and leader election, in that order.
        """
        check_gates(self.feature_gates, self.KNOWN_GATES)
        self.validate_serving()
        check_logging(self.log_format, self.log_level)
        try:
            self.leader_election.validate()
        except ValueError as err:
            raise ValueError(f"{err} (--leader-election-* flags)") from None
