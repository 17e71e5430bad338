"""A terminal progress bar for the import and export management commands."""

import time
from collections.abc import Iterable, Iterator

CHUNK_BYTES = 1 << 20


class ProgressBar:
    """Redraws one line on ``stream`` (a tty or not) at most ten times a second."""

    def __init__(self, stream, *, total: int | None = None, label: str = ""):
        self.stream, self.total, self.label = stream, total, label
        self.done, self.started, self.drawn = 0, time.monotonic(), 0.0

    def add(self, amount: int) -> None:
        self.done += amount
        now = time.monotonic()
        if now - self.drawn >= 0.1:
            self.drawn = now
            self._draw(now)

    def finish(self) -> None:
        self._draw(time.monotonic())
        self.stream.write("\n")
        self.stream.flush()

    def _draw(self, now: float) -> None:
        megabytes, rate = self.done / 1e6, self.done / 1e6 / max(now - self.started, 1e-9)
        if self.total:
            share = min(self.done / self.total, 1.0)
            bar = "#" * round(30 * share)
            line = f"[{bar:<30}] {share:4.0%} {megabytes:,.1f} MB {rate:,.1f} MB/s"
        else:
            line = f"{megabytes:,.1f} MB written, {rate:,.1f} MB/s"
        self.stream.write(f"\r{self.label}{line}")
        self.stream.flush()

    def chunks(self, file) -> Iterator[bytes]:
        """Read ``file`` (binary) a chunk at a time, advancing the bar."""
        while chunk := file.read(CHUNK_BYTES):
            self.add(len(chunk))
            yield chunk
        self.finish()

    def written(self, chunks: Iterable[bytes], out) -> None:
        for chunk in chunks:
            out.write(chunk)
            self.add(len(chunk))
        self.finish()
