"""Progress of long work as bars on a stream: `Progress(sys.stderr)` wraps an iterable in a bar
(`tqdm`); `QUIET`, the default everywhere, wraps nothing. The compile draws its bars on the stream it
was given, so they show while the teleprompters' own output is kept out of the way."""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import BinaryIO, TextIO, TypeVar

T = TypeVar("T")


class Progress:
    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream

    def __call__(self, items: Iterable[T], *, desc: str, total: int | None = None, unit: str = "q") -> Iterable[T]:
        """`items`, drawn as a bar while they are taken (none when quiet)."""
        if self.stream is None:
            return items
        from tqdm import tqdm

        return tqdm(items, desc=desc, total=total, unit=unit, file=self.stream, dynamic_ncols=True, mininterval=1.0)

    def counting(self, call: Callable[..., T], *, desc: str, total: int, unit: str = "q") -> Callable[..., T]:
        """`call`, each call a step of a bar of `total` (a teleprompter's metric: one call per example tried)."""
        if self.stream is None:
            return call
        steps: Iterator[int] = iter(self(range(total), desc=desc, total=total, unit=unit))

        @functools.wraps(call)  # a teleprompter may read the metric's name and signature
        def counted(*args, **kwargs) -> T:
            next(steps, None)
            return call(*args, **kwargs)

        return counted

    @contextmanager
    def advancing(self, *, desc: str, total: int | None, unit: str, scale: bool = False) -> Iterator[Callable[[int], object]]:
        """A callable that moves a bar of `total` on by its argument (none when quiet): for work that
        reports how far it got (bytes read, triples read back) rather than being an iterable."""
        if self.stream is None:
            yield lambda count: None
            return
        from tqdm import tqdm

        with tqdm(desc=desc, total=total, unit=unit, unit_scale=scale, file=self.stream, dynamic_ncols=True, mininterval=1.0) as bar:
            yield bar.update

    @contextmanager
    def reading(self, handle: BinaryIO, *, desc: str, total: int) -> Iterator[BinaryIO]:
        """`handle`, its bytes drawn as a bar of `total` as they are read."""
        if self.stream is None:
            yield handle
            return
        with self.advancing(desc=desc, total=total, unit="B", scale=True) as advance:
            yield io.BufferedReader(_Counted(handle, advance), buffer_size=1 << 20)


class _Counted(io.RawIOBase):
    """A binary stream that reports how many bytes each read took from `raw`."""

    def __init__(self, raw: BinaryIO, advance: Callable[[int], object]) -> None:
        self.raw, self.advance = raw, advance

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        count = self.raw.readinto(buffer) or 0
        self.advance(count)
        return count


QUIET = Progress()
