"""The reports one run (or one `agenteval report`) writes, fed from the same stream of results.

Paths are checked before anything runs, so a typo costs seconds, not a whole run; files are
written to a temporary name and renamed, so a reader never sees half a report; a device, a FIFO
or a symlink is written through, never replaced.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import orjson

from agenteval.reports.failures import FailureCollector, render_failures
from agenteval.results import CaseResult

FORMATS = ("table", "json", "markdown", "junit", "html")
DEFAULT_SHOWN_FAILURES = 10


class ReportError(Exception):
    """A report cannot be written (bad path, full disk): one line, exit 2."""


def check_writable(path: Path) -> None:
    """Create the parent folders and prove a file can be written there, before a run starts.

    A device, a FIFO or a symlink is written through, never replaced (`--junit /dev/null` must not
    turn the system's /dev/null into a file), so for those only the right to write is checked:
    opening a FIFO here would wait for its reader, and opening some devices has effects.
    """
    if path.is_dir():
        raise ReportError(f"{path} is a directory; give a file path for the report")
    target = _rename_target(path)
    if target is None:
        if not os.access(path, os.W_OK):
            raise ReportError(f"cannot write a report to {path}: Permission denied")
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}."):
            pass
    except OSError as exc:
        raise ReportError(f"cannot write a report to {path}: {exc.strerror or exc}") from None


def _rename_target(path: Path) -> Path | None:
    """Where a complete report is renamed to: `path` itself, or the regular file a symlink points
    to, existing or not yet (the link stays a link); None when `path` is written straight into
    (a device, a FIFO, a symlink to one, or a link through /proc such as /dev/stdout)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return path  # absent (created by the rename), or unreachable (the temporary file says why)
    if stat.S_ISREG(mode):
        return path
    if not stat.S_ISLNK(mode):
        return None
    resolved = Path(os.path.realpath(path))
    try:
        if stat.S_ISREG(os.stat(path).st_mode) and os.path.samefile(resolved, path):
            return resolved
    except FileNotFoundError:
        return resolved  # a dangling link: its target is created
    except OSError:
        pass
    return None


@contextmanager
def replacing(path: Path) -> Iterator[IO[bytes]]:
    """A file written beside `path` and renamed over it when complete; a device, a FIFO or a
    symlink is written through instead (for a symlink to a regular file, its target is replaced)."""
    target = _rename_target(path)
    if target is None:
        try:
            through = open(path, "wb")  # noqa: SIM115 (closed below)
        except OSError as exc:
            raise ReportError(f"cannot write {path}: {exc.strerror or exc}") from None
        try:
            with through:
                yield through
        except OSError as exc:
            raise ReportError(f"cannot write {path}: {exc.strerror or exc}") from None
        return
    try:
        handle = tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", delete=False)
    except OSError as exc:
        raise ReportError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with handle:
            yield handle
        os.chmod(handle.name, 0o666 & ~_umask())  # as open() would have made it, not the temporary file's 0600
        os.replace(handle.name, target)
    except OSError as exc:
        raise ReportError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(handle.name):
            os.unlink(handle.name)


@contextmanager
def stdout_reader_may_leave() -> Iterator[None]:
    """`agenteval report ... | head` stops quietly when the reader goes away, as `run -o -` does."""
    try:
        yield
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more to flush at exit


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class Reports:
    """Every report asked for, fed one result at a time; `targets` are (format, path or None for stdout)."""

    def __init__(self, show_failures: int = DEFAULT_SHOWN_FAILURES, targets: Sequence[tuple[str, Path | None]] = ()) -> None:
        if show_failures < 0:
            raise ReportError(f"--show-failures must be 0 or more, got {show_failures}")
        for _, path in targets:
            if path is not None:
                check_writable(path)
        self.targets = list(targets)
        self.failures = FailureCollector(show_failures)
        wanted = {fmt for fmt, _ in self.targets}
        self._junit: Any = None
        self._html: Any = None
        if "junit" in wanted:  # each imported only when asked for (junit's XML brings urllib, email...)
            from agenteval.reports.junit import JunitWriter

            self._junit = JunitWriter()
        if "html" in wanted:
            from agenteval.reports.html import HtmlWriter

            self._html = HtmlWriter()

    def add(self, result: CaseResult) -> None:
        self.failures.add(result)
        if self._junit is not None:
            self._junit.add(result)
        if self._html is not None:
            self._html.add(result)

    def render_failures(self, console: Any) -> None:
        render_failures(self.failures, console)

    def write(self, summary: dict[str, Any]) -> list[Path]:
        """Write every target; the files written, in order."""
        written = []
        try:
            for fmt, path in self.targets:
                if path is None:
                    with stdout_reader_may_leave():
                        self._produce(fmt, summary, None)
                    continue
                if fmt == "markdown":  # small: kept, to append to the job summary without reading `path` back
                    text = io.BytesIO()
                    self._produce(fmt, summary, text)
                    with replacing(path) as handle:
                        handle.write(text.getvalue())
                    _append_step_summary(path, text.getvalue())
                else:
                    with replacing(path) as handle:
                        self._produce(fmt, summary, handle)
                written.append(path)
        finally:
            self.close()
        return written

    def _produce(self, fmt: str, summary: dict[str, Any], out: IO[bytes] | None) -> None:
        if fmt == "table":
            from agenteval.reports.console import console
            from agenteval.reports.table import render_summary

            if out is None:
                shown = console()
                render_summary(summary, shown)
                self.render_failures(shown)
                return
            text = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
            try:
                shown = console(file=text, color_system=None)
                render_summary(summary, shown)
                self.render_failures(shown)
            finally:
                text.detach()  # the caller closes `out`
            return
        stream = sys.stdout.buffer if out is None else out
        if fmt == "json":
            stream.write(orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n")
        elif fmt == "markdown":
            from agenteval.reports.markdown import summary_markdown

            stream.write(summary_markdown(summary, self.failures.worst(), self.failures.total).encode())
        elif fmt == "junit" and self._junit is not None:
            self._junit.write(stream, summary)
        elif fmt == "html" and self._html is not None:
            self._html.write(stream, summary)
        else:
            raise ReportError(f"unknown report format {fmt!r} (known: {', '.join(FORMATS)})")
        stream.flush()

    def close(self) -> None:
        if self._junit is not None:
            self._junit.close()
        if self._html is not None:
            self._html.close()


def _append_step_summary(path: Path, text: bytes) -> None:
    """In GitHub Actions, the Markdown report also becomes the job summary. That is a convenience: a
    summary that cannot be written is a warning, and the run's exit code stays the verdict's."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target or Path(target).resolve() == path.resolve():
        return
    try:
        with open(target, "ab") as summary:
            summary.write(text)
    except OSError as exc:
        print(f"warning: cannot append the Markdown report to GITHUB_STEP_SUMMARY ({target}): {exc.strerror or exc}", file=sys.stderr)


def run_reports(options: Any) -> Reports:
    """The reports `agenteval run` asked for (its --show-failures, --junit, --markdown and --html)."""
    targets = [(fmt, path) for fmt, path in (("junit", options.junit), ("markdown", options.markdown), ("html", options.html)) if path]
    return Reports(options.show_failures, targets)
