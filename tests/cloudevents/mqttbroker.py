"""A real MQTT v5 broker for the tests: Debian's mosquitto on 127.0.0.1 and a free port."""

from __future__ import annotations

import asyncio
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.processes import free_port

MOSQUITTO_PATHS = ("/usr/sbin/mosquitto", "/usr/bin/mosquitto")


def mosquitto_binary() -> str:
    """The broker binary (`make setup-debian` installs it); fails loudly when absent."""
    found = shutil.which("mosquitto") or next(
        (p for p in MOSQUITTO_PATHS if Path(p).exists()), None
    )
    if found is None:
        raise AssertionError("mosquitto is not installed: run `make setup-debian`")
    return found


@dataclass
class Mosquitto:
    """One broker process; :meth:`restart` keeps the port (sessions are lost)."""

    directory: Path
    port: int = field(default_factory=free_port)
    process: asyncio.subprocess.Process | None = None
    #: Lines added to the configuration (an ``acl_file``, say).
    extra: str = ""

    @property
    def host(self) -> str:
        """``brokerHost`` for a driver config."""
        return f"127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Start the broker and wait until it accepts connections."""
        conf = self.directory / "mosquitto.conf"
        conf.write_text(
            f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n{self.extra}"
        )
        log = (self.directory / "mosquitto.log").open("ab")
        try:
            self.process = await asyncio.create_subprocess_exec(
                mosquitto_binary(), "-c", str(conf), stdout=log, stderr=log
            )
        finally:
            log.close()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 15
        while True:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                if self.process.returncode is not None or loop.time() > deadline:
                    raise AssertionError(
                        f"mosquitto did not start: {(self.directory / 'mosquitto.log').read_text()}"
                    ) from None
                await asyncio.sleep(0.05)  # sleep-ok: polling a port with a deadline
                continue
            writer.close()
            await writer.wait_closed()
            return

    async def stop(self) -> None:
        """Stop the broker (every client is disconnected)."""
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            try:
                await asyncio.wait_for(self.process.wait(), 10)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        self.process = None

    def reload(self) -> None:
        """Read the ACL and password files again (SIGHUP); connections stay."""
        assert self.process is not None and self.process.returncode is None
        self.process.send_signal(signal.SIGHUP)

    def log(self) -> str:
        """What the broker logged so far."""
        return (self.directory / "mosquitto.log").read_text(errors="replace")

    async def restart(self) -> None:
        """Stop, then start again on the same port."""
        await self.stop()
        await self.start()
