"""How long the event loop was held up: a ticker that notes how late its sleeps end."""

from __future__ import annotations

import asyncio


class LoopLag:
    """The worst delay of a ticker sleeping ``period`` seconds, while in the ``with`` block."""

    def __init__(self, period: float = 0.02) -> None:
        self.period = period
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(self.period)  # sleep-ok: the ticker measuring event-loop lag
            self.worst = max(self.worst, loop.time() - before - self.period)

    def __enter__(self) -> LoopLag:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
