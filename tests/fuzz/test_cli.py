"""Random command lines, each run by OCM v1.2.1's program and by ours: the same outcome.

Four pairs: ``work agent`` / ``workagent agent``, ``work manager`` / ``hubcontroller
manager``, ``work webhook-server`` / ``hubcontroller webhook-server`` and ``server grpc``
/ ``hubcontroller grpc-server``. A line is a runnable base (a real control plane's
kubeconfig, namespace, free ports, certificates; a base setting now and then left out)
plus random flags of OCM's ``--help`` (ints, float32s, Go durations, booleans, klog
levels, feature-gate lists, kubeconfigs missing, garbage, empty or pointing nowhere...),
flags only ours has, and oddities (``--``, ``-hx``, unknown flags, stray words, repeated
flags, ``=``/separate/missing values, ``_`` spellings). Most lines end with an unknown
flag, which makes every line whose values parse a quick refusal on both sides and so
compares the parsers; the others run for real.

Outcomes: ``refused`` (OCM: exit 1, ``Error: <message>``; ours: exit 2,
``<program>: <message>``, docs/compatibility.md "a refused command line"), ``fatal``
(OCM's klog ``F`` line, exit 255; ours: exit 2 and one JSON log line), ``panic``,
``help``, ``accepted`` (still running: OCM after 4.5 s, ours 1 s after its start event)
and ``exit<N>``. The classes must match, and the messages of refusals too (the docs
promise pflag's and klog's words there, nowhere else). Differences a documented row
explains are logged as known; every other one is a finding.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from random import Random

import pytest

from tests.fuzz.common import fuzz_marks, fuzz_run
from tests.hub.test_replicaset import NS, hub_client
from tests.support.ocmpeer import ocm_binary
from tests.support.processes import free_port, start_program
from tests.support.serving_endpoint import grpc_server_args, issue
from tests.support.targets import REAL, PlanePool, open_cluster

DEFAULT_BUDGET = 600.0
# A line takes up to about 25 s (ours may need 20 s to start on a loaded machine).
pytestmark = fuzz_marks(DEFAULT_BUDGET, 600)

OCM_PATIENCE = 4.5  # OCM's fatal errors after start came within about 2.5 s
OURS_PATIENCE = 20.0
PFLAG = re.compile(r"unknown (shorthand )?flag|invalid argument|flag needs an|bad flag syntax")
OURS_READY = ('"event": "starting"', '"event": "serving admission webhooks"')

# -- what is drawn --------------------------------------------------------------------------

INTS = ["0", "1", "-1", "5", "2147483647", "2147483648", "-2147483649", "9223372036854775808",
        "", "abc", "1.5", "0x10", "0o17", "017", "0b101", "1_000", "_1", " 5", "+5", "08", "0x",
        "99999999999999999999", "٣"]  # fmt: skip
FLOATS = ["0", "1", "-1", "0.5", ".5", "5.", "1e3", "1e39", "3.4028235e38", "3.4028236e38",
          "1e-46", "inf", "+Inf", "NaN", "+nan", "-NaN", "0x1p-2", "0x1.8p1", "0x10", "0x1.8",
          "1_0", "0x1_0p0", "+-0x1p0", "", "abc", "1,5", " 1", "1e", "٣", "1e309", "Inf1",
          'a"b', "a\\b", "a\tb", "1  2"]  # fmt: skip
DURATIONS = ["10s", "0", "0s", "1h2m", "-1s", "1e3s", "", ".5s", "5.s", "1µs", "1μs", "1ns",
             "1d", "5", "+5s", "-0", "2562047h", "2562048h", "1h-1m", " 1s", "1S",
             "0.0000000001s", "9223372036854775807ns", "9223372036854775808ns", "abc", "137s",
             "107s", "26s", "1ms", "30s", "1h", ".s", "-", "0x10s", "1_0s", "876000h",
             "2562047h47m16.854775807s", "2562047h47m16.854775808s", "1h 2m", "1.s5"]  # fmt: skip
BOOLS = ["true", "false", "TRUE", "True", "t", "F", "1", "0", "2", "yes", "", " true", "tRue",
         'x"y']  # fmt: skip
LEVELS = ["0", "2", "4", "10", "-1", "abc", "", "2147483648", "0x2", "2.0", "+3", "007", "1_0"]
VMODULES = ["a=1", "a=1,b=2", "foo", "a=-1", "", "a=1,,b=2", "=1", "a=", "a=1=2", "*=3",
            "a=99999999999", "a=0x2", "a=2147483648", "a = 1", "a=1,", ","]  # fmt: skip
STRINGS = ["", "x", "cluster1", "ümlaut", " spaced ", "a,b", "-dash", "a=b", "x" * 300]
CLUSTER_NAMES = ["cluster1", "", "Bad_Name", "UPPER", "a.b", "a" * 63, "a" * 64, "-lead",
                 "trail-", "123", "c1 ", "ünicode"]  # fmt: skip
NAMESPACES = [NS, "", "Bad_NS", "a" * 64, "x.y", "default"]
DRIVERS = ["kube", "grpc", "mqtt", "kafka", "pubsub", "KUBE", "", "http", "kube "]
CODECS = ["manifest", "manifest,manifestbundle", "", '"a,b",c', '"unterminated', 'a"b', " x , y "]
TLS_VERSIONS = ["VersionTLS12", "VersionTLS13", "VersionTLS10", "", "TLS1.3", "versiontls12"]
CIPHERS = ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "", "bogus", "TLS_RSA_WITH_RC4_128_SHA",
           "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"]  # fmt: skip
GATES = {
    "agent": ["ExecutorValidatingCaches", "RawFeedbackJsonString"],
    "hub": ["CleanUpCompletedManifestWork", "ManifestWorkReplicaSet", "NilExecutorValidating"],
}
ODDITIES = [
    ["--bogus"], ["--bogus=1"], ["-x"], ["-"], ["--"], ["--", "--namespace=x"], ["extra"],
    ["---triple"], ["--spoke-cluster"], ["--kubeconfi=x"], ["-hx"], ["-h"], ["--help"],
    ["--help=false"], ["--help=maybe"], ["-vh"], ["-v2h"], ["--=x"], ["--feature-gates"],
    ["-help"], ["--v"], ["--V=2"], ["--Namespace=x"], ["--manifestlimit=5"], ["--version"],
    ["--kube-api-qps=1", "--kube-api-qps=abc"], ["--namespace=a", "--namespace"],
]  # fmt: skip


def kinds(spec: str) -> dict[str, str]:
    """``"kind=name name; kind=name"`` as ``{name: kind}``."""
    pairs = (part.split("=", 1) for part in spec.split(";"))
    return {name: kind.strip() for kind, names in pairs for name in names.split()}


SHARED = (
    "level=v; vmodule=vmodule; duration=log-flush-frequency leader-election-lease-duration "
    "leader-election-renew-deadline leader-election-retry-period; bool=disable-leader-election; "
    "string=config; int=kube-api-burst; float32=kube-api-qps; kubeconfig=kubeconfig; "
    "listen=listen; namespace=namespace; file=terminate-on-files"
)
# OCM v1.2.1's flags of each program (from its --help), by kind.
OCM_FLAGS = {
    "agent": kinds(
        f"{SHARED}; string=agent-id cloudevents-client-id hub-kubeconfig-dir; "
        "duration=appliedmanifestwork-eviction-grace-period status-sync-interval; "
        "codecs=cloudevents-client-codecs; cluster=cluster-name spoke-cluster-name; "
        "gates:agent=feature-gates; int=hub-kube-api-burst max-feedback-watch "
        "max-json-raw-length; float32=hub-kube-api-qps; driver=workload-source-driver; "
        "kubeconfig=hub-kubeconfig spoke-kubeconfig workload-source-config"
    ),
    "manager": kinds(
        f"{SHARED}; string=cloudevents-client-id; driver=work-driver; "
        "kubeconfig=work-driver-config; gates:hub=feature-gates"
    ),
    "webhook": kinds(
        "level=v; vmodule=vmodule; duration=log-flush-frequency; certdir=certdir; "
        "int=manifestLimit; port=port; gates:hub=feature-gates; kubeconfig=kubeconfig"
    ),
    "grpc": kinds(
        f"{SHARED}; bool=broker-heartbeat-disabled; duration=broker-heartbeat-interval; "
        "serverconfig=server-config"
    ),
}
# Flags only ours has, with the row of docs/compatibility.md saying why OCM lacks them.
OURS_KINDS = kinds(
    "bool=insecure-serving metrics-work-labels; certfile=tls-cert-file; "
    "keyfile=tls-private-key-file; tlsversion=tls-min-version; ciphers=tls-cipher-suites; "
    "loglevel=log-level; logformat=log-format; int=workload-agent-workers health-port; "
    "port=metrics-port health-probe-port; string=bind-address"
)
OURS_ROWS = {
    "insecure-serving": "`--insecure-serving`",
    "tls-cert-file": "`--tls-cert-file`, `--tls-private-key-file`",
    "tls-private-key-file": "`--tls-cert-file`, `--tls-private-key-file`",
    "log-level": "`--log-level`, `--log-format`",
    "log-format": "`--log-level`, `--log-format`",
    "metrics-work-labels": "operations.md `--metrics-work-labels` (ours only)",
    "bind-address": "server bind address",
}
SERVING = "insecure-serving tls-cert-file tls-private-key-file tls-min-version tls-cipher-suites"
OURS_FLAGS = {
    "agent": f"{SERVING} log-level log-format workload-agent-workers health-port "
    "metrics-work-labels",
    "manager": f"{SERVING} log-level log-format",
    "webhook": "metrics-port health-probe-port tls-min-version tls-cipher-suites log-level "
    "log-format",
    "grpc": f"{SERVING} log-level log-format bind-address",
}


@dataclass(frozen=True)
class Pair:
    """One program pair: commands, OCM's flags and ours only (name -> kind)."""

    ocm: tuple[str, ...]
    ours: tuple[str, ...]
    flags: dict[str, str]
    ours_only: dict[str, str]


def pairs() -> dict[str, Pair]:
    """The four pairs, OCM's binaries from ``make ocm`` and ours from this environment."""
    work, server = str(ocm_binary("work")), str(ocm_binary("server"))
    bin_dir = Path(sys.executable).parent
    agent, hub = str(bin_dir / "workagent"), str(bin_dir / "hubcontroller")
    commands = {
        "agent": ((work, "agent"), (agent, "agent")),
        "manager": ((work, "manager"), (hub, "manager")),
        "webhook": ((work, "webhook-server"), (hub, "webhook-server")),
        "grpc": ((server, "grpc"), (hub, "grpc-server")),
    }
    return {
        program: Pair(ocm, ours, OCM_FLAGS[program],
                      {n: OURS_KINDS[n] for n in OURS_FLAGS[program].split()})
        for program, (ocm, ours) in commands.items()
    }  # fmt: skip


@dataclass
class Files:
    """What the lines point at: a good kubeconfig, bad ones, certificates, configs."""

    root: Path
    kubeconfig: str
    certdir: str
    server_config: str

    def values(self, kind: str, port: int) -> list[str]:
        """The values drawn for a flag of ``kind`` (``port``: a free port of the line)."""
        bad = self.root / "bad"
        good, dotted = self.kubeconfig, str(bad / "garbage.yaml")
        tables = {
            "int": INTS, "float32": FLOATS, "duration": DURATIONS, "bool": BOOLS,
            "level": LEVELS, "vmodule": VMODULES, "cluster": CLUSTER_NAMES,
            "namespace": NAMESPACES, "driver": DRIVERS, "codecs": CODECS,
            "tlsversion": TLS_VERSIONS, "ciphers": CIPHERS,
            "loglevel": ["debug", "info", "warning", "error", "", "loud", "INFO"],
            "logformat": ["json", "console", "", "text"],
            "kubeconfig": [good, good, good, "", str(bad / "missing"), dotted, str(bad),
                           str(bad / "empty.yaml"), str(bad / "nocontext.yaml"),
                           str(bad / "list.yaml"), str(bad / "nowhere.yaml")],
            "file": ["/nonexistent/file", str(bad / "empty.yaml"), "a,b", "", str(bad)],
            "listen": [f"127.0.0.1:{port}", f"127.0.0.1:{port}", "", "8443", f":{port}",
                       "127.0.0.1:0", ":-1",
                       "localhost:abc", f"[::1]:{port}", "127.0.0.1:70000", "127.0.0.1:",
                       "999.1.1.1:80", f"localhost:{port}"],
            "port": [str(port), str(port), "0", "-1", "65535", "65536", "abc", "", "0x2000"],
            "certdir": [self.certdir, self.certdir, "", "/nonexistent", str(bad)],
            "serverconfig": [self.server_config] * 3 + ["", "/nonexistent.yaml", dotted,
                             str(bad / "unknown-key.yaml"), str(bad / "bad-yaml.yaml")],
            "certfile": [f"{self.certdir}/tls.crt", "", "/nonexistent.crt"],
            "keyfile": [f"{self.certdir}/tls.key", "", "/nonexistent.key"],
        }  # fmt: skip
        if kind.startswith("gates:"):
            g, h = GATES[kind[len("gates:") :]][:2]
            other = GATES["hub" if kind == "gates:agent" else "agent"][0]
            return [f"{g}=true", f"{g}=false", f"{g}=true,{h}=false", f"{g}=true, {h}=true",
                    f" {g}=true", f"{g} =true", "UnknownGate=true", f"{other}=true",
                    "AllAlpha=true", "AllBeta=true", f"AllAlpha=true,{g}=false", g, "",
                    f"{g}=maybe", f"{g}=T", f"{g}=2", f"{g.lower()}=true", f"{g}=true,",
                    f"{g}=true,,{h}=true", "=true", f"{g}=true;{h}=true", "a=b=c", " ",
                    f"Unknown=true,{g}=maybe"]  # fmt: skip
        return tables.get(kind, STRINGS)


def write_bad_files(root: Path, kubeconfig: Path) -> None:
    """Kubeconfigs and server configs that do not work, each in its own way."""
    bad = root / "bad"
    bad.mkdir()
    (bad / "garbage.yaml").write_text("this: is: not: [yaml\n\x00\x01")
    (bad / "empty.yaml").write_text("")
    (bad / "list.yaml").write_text("- a\n- b\n")
    (bad / "nocontext.yaml").write_text(
        "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"
    )
    nowhere = re.sub(r"server: .*", "server: https://127.0.0.1:1", kubeconfig.read_text())
    (bad / "nowhere.yaml").write_text(nowhere)
    (bad / "unknown-key.yaml").write_text("tls_cert_fil: /x\n")
    (bad / "bad-yaml.yaml").write_text("server_bind_port: [\n")


class Lines:
    """Random command lines for the pairs, from one seeded random source."""

    def __init__(self, rng: Random, files: Files, pairs: dict[str, Pair]) -> None:
        self.rng, self.files, self.pairs = rng, files, pairs

    def flag(self, name: str, kind: str, port: int) -> list[str]:
        """One occurrence of ``--name`` in one of pflag's forms."""
        rng = self.rng
        value = rng.choice(self.files.values(kind, port))
        draw = rng.random()
        spelt = f"--{name}"
        if draw < 0.03 and "-" in name:
            spelt = "--" + name.replace("-", "_")
        elif draw < 0.05:
            spelt = f"-{name}" if len(name) > 1 else f"--{name}"
        form = rng.random()
        if kind == "bool":
            return (
                [spelt] if form < 0.35 else [f"{spelt}={value}"] if form < 0.9 else [spelt, value]
            )
        if name == "v" and form < 0.4:
            return rng.choice([["-v", value], [f"-v={value}"], [f"-v{value}"], ["-v"]])
        return [f"{spelt}={value}"] if form < 0.6 else [spelt, value] if form < 0.95 else [spelt]

    def base(self, program: str, port: int) -> list[tuple[str, str]]:
        """Settings that let a line run against the test's control plane."""
        f = self.files
        if program == "webhook":
            return [("kubeconfig", f.kubeconfig), ("certdir", f.certdir), ("port", str(port))]
        line = [("kubeconfig", f.kubeconfig), ("namespace", NS), ("listen", f"127.0.0.1:{port}")]
        if program == "agent":
            return [*line, ("workload-source-config", f.kubeconfig), ("spoke-cluster-name", "c1")]
        if program == "grpc":
            return [*line, ("server-config", f.server_config)]
        return line

    def line(self, program: str) -> list[str]:
        """A random command line for ``program`` (without the program itself)."""
        rng, pair, port = self.rng, self.pairs[program], free_port()
        args = [f"--{n}={v}" for n, v in self.base(program, port) if rng.random() >= 0.06]
        if program != "webhook" and rng.random() < 0.85:
            args.append("--disable-leader-election")  # a held Lease would hide later checks
        ocm_flags, ours_flags = list(pair.flags.items()), list(pair.ours_only.items())
        extra: list[str] = []
        for _ in range(rng.choice([0, 1, 1, 1, 2, 2, 2, 3, 3, 4, 5])):
            draw = rng.random()
            if draw < 0.85:
                extra += self.flag(*rng.choice(ocm_flags), port)
            elif draw < 0.92:
                extra += self.flag(*rng.choice(ours_flags), port)
            else:
                extra += rng.choice(ODDITIES)
        if extra and rng.random() < 0.1:
            name, kind = rng.choice(ocm_flags)
            extra += self.flag(name, kind, port) + self.flag(name, kind, port)
        if rng.random() < 0.6:
            extra.append("--zz-unknown-end")
        at = rng.randint(0, len(args)) if rng.random() < 0.1 else len(args)
        return args[:at] + extra + args[at:]


# -- running and judging --------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """How a line ended: class, the message compared or shown, exit code (None: running)."""

    kind: str
    message: str
    code: int | None


async def run_line(command: list[str], log: Path, *, patience: float, ready: bool) -> Outcome:
    """Runs ``command`` until it exits, or until ``patience`` seconds passed (or, with
    ``ready``, 1 s after our start event), and classifies the result."""
    process = await start_program(command, log)
    loop = asyncio.get_running_loop()
    start = loop.time()
    ready_at: float | None = None
    while process.exited() is None and loop.time() - start < patience:
        if ready and ready_at is None and any(m in process.log() for m in OURS_READY):
            ready_at = loop.time()
        if ready_at is not None and loop.time() - ready_at > 1.0:
            break
        await asyncio.sleep(0.05)  # sleep-ok: polling with a deadline
    code = process.exited()
    await process.terminate(timeout=10)
    lines = [line for line in process.log().splitlines() if line.strip()]
    if code is None:
        return Outcome("accepted", "", None)
    if code == 0 and any(line.startswith("Usage:") for line in lines):
        return Outcome("help", "", 0)
    return classify(Path(command[0]).name, code, lines)


def classify(program: str, code: int, lines: list[str]) -> Outcome:
    """The class of a program's ending from its exit code and output lines."""
    last = lines[-1] if lines else ""
    if program in {"workagent", "hubcontroller"}:
        if code == 2 and last.startswith(f"{program}: "):
            return Outcome("refused", last[len(program) + 2 :], code)
        with contextlib.suppress(ValueError):
            record = json.loads(last)
            if isinstance(record, dict):
                last = f"{record.get('event')}: {record.get('error', '')}"
        return Outcome("fatal" if code == 2 else f"exit{code}", last[:300], code)
    errors = [line for line in lines if line.startswith("Error: ")]
    if code == 1 and errors:  # cobra's words for a failed run too: pflag's tell a refusal
        message = errors[0][len("Error: ") :]
        return Outcome("refused" if PFLAG.match(message) else "exit1", message, code)
    panics = [line for line in lines if line.startswith("panic: ")]
    if panics:
        return Outcome("panic", panics[0][len("panic: ") :][:300], code)
    fatals = [line for line in lines if line.startswith("F1")]
    if fatals:
        return Outcome("fatal", fatals[0].split("] ", 1)[-1][:300], code)
    return Outcome(f"exit{code}", last[:300], code)


def documented(pair: Pair, args: list[str], ocm: Outcome, ours: Outcome) -> str | None:
    """The documented difference (docs/compatibility.md unless named) a divergence is."""
    line, om, um = " ".join(args), ocm.message, ours.message
    not_refused = ocm.kind != "refused"
    unknown = re.match(r"unknown flag: --([\w-]+)", om) if ocm.kind == "refused" else None
    flag = unknown[1] if unknown else ""
    if "_" in flag and flag.replace("_", "-") in pair.flags.keys() | pair.ours_only.keys():
        return "`_` in flag names"
    if flag in pair.ours_only:
        return OURS_ROWS.get(flag, "flags of newer OCM releases")
    if ours.kind == "refused" and um.startswith("unexpected argument") and not_refused:
        return "words that are not flags"
    if ocm.kind in {"fatal", "exit1"} and ours.kind in {"fatal", "refused"} and "kubeconfig" in um:
        return "a missing or unreadable kubeconfig"
    if ocm.kind == "accepted" and "--hub-kubeconfig" in line and "kubeconfig" in um:
        return "`--hub-kubeconfig`"
    if ocm.kind == "fatal" and om == "namespace may not be empty" and ours.kind == "accepted":
        # OCM has no fallback outside a pod; ours falls back as in one.
        return "`--namespace` (manager); operations.md and hub.md `--namespace` rows"
    if ocm.kind == "fatal" and "delegating authentication" in om and ours.kind == "accepted":
        # Its extension-apiserver-authentication ConfigMap, read at start (the hub unreachable).
        return "agent's (and manager's) metrics and probe endpoint: OCM refuses to start"
    if "bindAddress is invalid" in om and ours.kind in {"accepted", "exit1"}:
        return "`--listen`"
    if (
        "bindAddress is invalid: strconv" in om
        and um.startswith("--listen: ")
        and ours.kind == "refused"
    ):
        return "`--listen`"  # a port that is not a number
    if "burst is required to be greater than 0" in om and ours.kind == "accepted":
        return "`--*-burst=0`"
    if ocm.kind == "panic" and ours.kind == "accepted" and re.search(r"--listen[= ]\S*:0\b", line):
        return "`--listen` port `0`"  # OCM: a nil pointer; ours binds a free port
    if ocm.kind == "panic" and "NewTicker" in om and "--log-flush-frequency" in line:
        return "`--vmodule`, `--log-flush-frequency`, ...: accepted, no effect"  # OCM: 0 panics
    if re.search(r"(^| )--config[= ]", line) and om.startswith("open ") and ours.kind == "accepted":
        return "`--vmodule`, ..., `--config`: accepted, no effect"
    if ocm.kind == "fatal" and ours.kind == "exit1" and "gRPC serving certificate" in um:
        return "hub.md `--server-config`: a certificate file that does not load ends with code 1"
    if ours.kind != "refused" or not not_refused:
        return None
    # The rest: ours refuses at start what OCM runs, crashes on or fails at later.
    rows = {
        r"--status-sync-interval must be > 0": "`--status-sync-interval` of 0 or less",
        r"finite number": "`--kube-api-qps`, `--hub-kube-api-qps`",
        r"manifestLimit": "`--manifestLimit` (webhook)",
        r"must be >= 0|must not be negative": "`--appliedmanifestwork-eviction-grace-period`, ...",
        r"leader election": "`--leader-election-*`",
        r"spoke-cluster-name|--cluster-name": "`--spoke-cluster-name`",
        r"--workload-source-driver=.* is not supported": "`--workload-source-driver`",
        r"--work-driver": "`--work-driver`",
        r"--cloudevents-client-id is required": "`--cloudevents-client-id`",
        r"--server-config": "server `--server-config` keys; hub.md: malformed values exit 2",
        r"--broker-heartbeat-interval": "heartbeats (0 or a negative interval)",
        r"--port=.* port number": "hub.md (webhook): ports are checked before anything listens",
        r"--terminate-on-files": "`--terminate-on-files` of an empty name or a directory",
        r"port -\d+ out of range": "`--listen` port `0` (a negative port is a usage error)",
        # OCM: fatal when it listens (`invalid port`), after start (seed 90).
        r"port \d+ out of range": "`--listen` port `0` (one above 65535 is a usage error)",
    }
    return next((row for pattern, row in rows.items() if re.search(pattern, um)), None)


@pytest.fixture
async def files(realkube_pool: PlanePool, tmp_path: Path) -> AsyncIterator[Files]:
    """A real control plane with OCM's CRDs and namespaces, and the files lines use."""
    async with open_cluster(REAL, realkube_pool) as plane:
        kubeconfig = plane.write_kubeconfig(tmp_path / "hub.kubeconfig")
        client = await hub_client(kubeconfig, ["c1"])
        await client.close()
        certs = tmp_path / "certs"
        certs.mkdir()
        issue(certs)
        server_args = grpc_server_args(tmp_path)
        server_config = next(a for a in server_args if a.startswith("--server-config="))
        path = Path(server_config.split("=", 1)[1])
        path.write_text(path.read_text().replace('"0"', f'"{free_port()}"'))
        write_bad_files(tmp_path, kubeconfig)
        yield Files(tmp_path, str(kubeconfig), str(certs), str(path))


async def test_random_command_lines(files: Files, monkeypatch: pytest.MonkeyPatch) -> None:
    """OCM's programs and ours end random command lines alike."""
    run = fuzz_run("cli", DEFAULT_BUDGET)
    for name in ("KUBECONFIG", "POD_NAMESPACE"):  # outside a pod, as the lines say
        monkeypatch.delenv(name, raising=False)
    (files.root / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(files.root / "tmp"))  # OCM writes serving certs there
    all_pairs = pairs()
    lines = Lines(run.rng("lines"), files, all_pairs)
    log = files.root / "line.log"
    count = known = 0
    while run.left() > 0:
        program = list(all_pairs)[count % len(all_pairs)]
        pair, args = all_pairs[program], lines.line(program)
        count += 1
        ocm = await run_line([*pair.ocm, *args], log, patience=OCM_PATIENCE, ready=False)
        ours = await run_line([*pair.ours, *args], log, patience=OURS_PATIENCE, ready=True)
        # Ours names the known gates after an unknown one ("`--feature-gates` with an
        # unknown gate").
        message = re.sub(r" \(known: [^)]*\)", "", ours.message)
        same = ocm.kind == ours.kind and (ocm.kind != "refused" or ocm.message == message)
        row = None if same else documented(pair, args, ocm, ours)
        verdict = "same" if same else f"known ({row})" if row else "DIFFERENT"
        shown = " ".join(args).replace(str(files.root), "<tmp>")
        run.log(f"{count} {program} {ocm.kind} / {ours.kind}: {verdict}: {shown}")
        if row:
            known += 1
        elif not same:
            what = f"{program}: OCM {ocm.kind} {ocm.message!r}, ours {ours.kind} {message!r}"
            run.finding(what, line=shown, ocm=ocm, ours=ours)
    run.log(f"{count} lines, {known} documented differences")
    run.assert_none()
