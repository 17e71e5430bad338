"""Reading uploads line by line: lines with their numbers, blank lines skipped, ZIP
archives opened, repeated lines found, and errors that name the line. CSV records are
read in ``csv_reading``, JSON in ``json_reading``, single fields in ``fields``."""

import io
import tempfile
import zipfile
from array import array
from collections.abc import Iterable, Iterator
from itertools import repeat
from operator import length_hint
from typing import NamedTuple

import numpy as np

from judgements.importers.rows import LineError

MAX_LINE_BYTES = 1 << 20


class _Problem(NamedTuple):
    """Stands for a line that cannot be read; ``message`` says why."""

    message: str


class Lines:
    """An upload's text lines with their line ends, numbered from 1.

    The upload is read a block of whole lines at a time. A block is decoded at once,
    which is several times faster than line by line; only a block that fails is
    decoded again line by line to find the culprit. A line that is not UTF-8 or is
    longer than ``MAX_LINE_BYTES`` comes out as a bare line end, and its error waits
    in ``pending`` for the parser to report before it skips the line.

    Iterating gives one line at a time. A parser may instead take the rest of the
    current block whole (``block``, then ``skip_block``) when none of its lines has
    a problem, and read it with a few calls instead of one per line.
    """

    def __init__(self, chunks: Iterable[bytes]):
        self.chunks, self.number, self.pending, self.at_end = iter(chunks), 0, [], False
        self._runs = self._decoded()
        # The current block: its lines not read yet, as an iterator that ``block`` and
        # the reading line by line share, or, before any line of it is read, its text
        # alone (split into lines only if it is read line by line).
        self._rest: Iterator = iter(())
        self._text, self._clean = None, True

    def __iter__(self) -> Iterator[str]:
        while True:
            rest = self._rest
            for line in rest:
                self.number += 1
                if line.__class__ is not str:
                    self._fail(line.message)
                    line = "\n"
                yield line
            # Unless ``block`` put the lines it looked at back, or a block of its own.
            if rest is self._rest and not self._load():
                break
        self.at_end = True

    def block(self) -> str | None:
        """The lines not read yet of the current block (else of the next) as one text,
        if none of them has a problem; None if one has, or at the end."""
        if length_hint(self._rest):
            lines = list(self._rest)
            self._rest = iter(lines)
            return "".join(lines) if self._clean else None
        if self._text is None:
            run = next(self._runs, None)
            if isinstance(run, list):
                self._rest, self._clean = iter(run), False
            else:
                self._text = run
        return self._text

    def skip_block(self, text: str) -> None:
        """Count ``text``, the lines ``block`` gave, as read."""
        self.number += text.count("\n") + (not text.endswith("\n"))
        self._rest, self._text = iter(()), None

    def block_done(self) -> bool:
        """Whether every line of the current block has been read."""
        return not length_hint(self._rest) and self._text is None

    def _load(self) -> bool:
        run = self._text if self._text is not None else next(self._runs, None)
        self._text = None
        if run is None:
            return False
        self._clean = isinstance(run, str)
        self._rest = iter(io.StringIO(run).readlines() if self._clean else run)
        return True

    def _decoded(self) -> Iterator[str | list]:
        """Each block: its text when every line reads, else its lines, a ``_Problem``
        standing for each line that does not."""
        first = True
        for block in self._blocks():
            if block is None:
                yield [_Problem(f"The line is longer than {MAX_LINE_BYTES >> 10} KB.")]
                continue
            try:
                text = block.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            # PostgreSQL cannot store NUL characters: such lines are refused here too.
            if text is None or "\x00" in text:
                yield list(self._line_by_line(block))
            elif len(text) <= MAX_LINE_BYTES:
                yield text.removeprefix("\ufeff") if first else text
            else:
                yield self._checked(text.removeprefix("\ufeff") if first else text)
            first = False

    @staticmethod
    def _checked(text: str) -> str | list:
        lines = io.StringIO(text).readlines()
        if max(map(len, lines)) <= MAX_LINE_BYTES:
            return text
        message = f"The line is longer than {MAX_LINE_BYTES >> 10} KB."
        return [_Problem(message) if len(line) > MAX_LINE_BYTES else line for line in lines]

    @staticmethod
    def _line_by_line(block: bytes) -> Iterator[str | _Problem]:
        for raw in io.BytesIO(block):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                byte, column = raw[error.start], error.start + 1
                message = f"Byte 0x{byte:02x} at column {column} is not UTF-8; save as UTF-8."
                yield _Problem(message)
                continue
            yield _Problem("The line contains a NUL character.") if "\x00" in line else line

    def _fail(self, message: str) -> None:
        self.pending.append(LineError(self.number, None, message))

    def drain(self) -> list[LineError]:
        errors, self.pending = self.pending, []
        return errors

    def _blocks(self) -> Iterator[bytes | None]:
        """Runs of whole lines; None stands for one line too long to keep."""
        rest, overlong = b"", False
        for number, chunk in enumerate(self.chunks):
            if number == 0 and (problem := binary_problem(chunk)):
                self.pending.append(problem)
                return
            end = chunk.rfind(b"\n") + 1
            if end and overlong:
                first = chunk.find(b"\n") + 1
                yield None
                chunk, end, overlong = chunk[first:], end - first, False
            if end:
                yield rest + chunk[:end]
                rest = chunk[end:]
            elif not overlong:
                rest += chunk
            if len(rest) > MAX_LINE_BYTES:
                rest, overlong = b"", True
        if rest or overlong:
            yield None if overlong else rest


def binary_problem(head: bytes) -> LineError | None:
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return LineError(None, None, "The file is UTF-16; save it as UTF-8.")
    if (nul := head.find(b"\x00")) >= 0:
        line = head.count(b"\n", 0, nul) + 1
        return LineError(line, None, "A NUL byte: this is not a text file.")
    return None


def empty_file_errors(lines: Lines) -> list[LineError]:
    return lines.drain() or [LineError(None, None, "The file is empty.")]


class Duplicates:
    """Remembers a 64-bit key per row (12 bytes a row) and reports repeats at the end."""

    def __init__(self, field_name: str, what: str):
        # Arrays of int64, not lists of Python ints (which cost about 70 bytes a row).
        self.field, self.what, self.keys, self.lines = field_name, what, array("q"), array("q")

    def add(self, key, line: int) -> None:
        self.keys.append(key if isinstance(key, int) else hash(key))
        self.lines.append(line)

    def extend(self, keys: np.ndarray, lines: np.ndarray) -> None:
        """``add`` for many rows at once: their 64-bit keys (hashes) and lines."""
        self.keys.frombytes(np.asarray(keys, np.int64).tobytes())
        self.lines.frombytes(np.asarray(lines, np.int64).tobytes())

    def errors(self) -> Iterator[LineError]:
        if not self.keys:
            return
        keys, lines = np.frombuffer(self.keys, np.int64), np.frombuffer(self.lines, np.int64)
        order = np.lexsort((lines, keys))
        keys, lines = keys[order], lines[order]
        starts = np.r_[True, keys[1:] != keys[:-1]]
        first = lines[starts][np.cumsum(starts) - 1]
        repeated = np.flatnonzero(~starts)
        for index in repeated[np.argsort(lines[repeated], kind="stable")]:
            line, original = int(lines[index]), int(first[index])
            yield LineError(line, self.field, f"{self.what} repeats line {original}.")


def nonblank_lines(lines: Lines, *, blocks=False) -> Iterator:
    """Yield ``(line, text)`` for every line that is not blank, or LineErrors.

    With ``blocks``, a block of lines without a problem comes as one LineBlock.
    """
    seen, one_by_one = False, iter(lines)
    while True:
        if blocks and (text := lines.block()) is not None:
            first = lines.number + 1
            lines.skip_block(text)
            if text.strip():
                seen = True
                yield LineBlock(first, text)
            continue
        for text in one_by_one:
            if problems := lines.drain():
                seen = True
                yield from problems
            elif text.strip():
                seen = True
                yield lines.number, text
            if blocks and lines.block_done():
                break
        else:
            break
    yield from lines.drain() if seen else empty_file_errors(lines)


class LineBlock(NamedTuple):
    """Lines of an upload read at once: their text, the first of them line ``first``."""

    first: int
    text: str

    def items(self) -> Iterator[tuple[int, str]]:
        """``(line, text)`` per line not blank, as ``nonblank_lines`` yields them."""
        for number, text in enumerate(io.StringIO(self.text), start=self.first):
            if text.strip():
                yield number, text

    def columns(self, width: int) -> list[list[str]] | None:
        """Each line's whitespace-separated fields as ``width`` columns, where every
        line is ASCII with ``width`` fields one space or tab apart (str.split's reading
        of it); else None."""
        text = self.text
        if not text.isascii() or any(space in text for space in "\x0b\x0c\x1c\x1d\x1e\x1f"):
            return None
        if "\r" in text:
            if text.count("\r") != text.count("\r\n"):
                return None
            text = text.replace("\r\n", "\n")
        text = text.removesuffix("\n").replace("\t", " ")
        if "  " in text or " \n" in text or "\n " in text or text[:1] == " " or text[-1:] == " ":
            return None
        rows = text.split("\n")
        if list(map(str.count, rows, repeat(" "))).count(width - 1) != len(rows):
            return None
        del rows  # A block's fields are many small strings: one copy of them at a time.
        fields = text.replace("\n", " ").split(" ")
        return [fields[column::width] for column in range(width)]


class Unreadable(ValueError):
    """An upload that cannot be read at all; the message says why."""


ZIP_MAGIC = b"PK\x03\x04"


def unzipped(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The chunks, or, for a ZIP archive, those of its first member, read as they come.

    A ZIP's directory is at its end, so the archive is spooled to a temporary file
    (on disk past a few megabytes) first. A broken archive raises ``Unreadable``.
    """
    chunks = iter(chunks)
    first = next(chunks, b"")
    if not first.startswith(ZIP_MAGIC):
        yield first
        yield from chunks
        return
    with tempfile.SpooledTemporaryFile(max_size=8 << 20) as spool:
        spool.write(first)
        for chunk in chunks:
            spool.write(chunk)
        try:
            with zipfile.ZipFile(spool) as archive, archive.open(archive.namelist()[0]) as member:
                yield from iter(lambda: member.read(1 << 20), b"")
        except (zipfile.BadZipFile, IndexError, OSError) as error:
            raise Unreadable(f"The ZIP archive cannot be read ({error}).") from None
