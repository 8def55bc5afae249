"""The rich Console every command prints its tables with (rich is imported when one is made)."""

from __future__ import annotations

import os
import sys
from typing import IO, Any

from agenteval.reports.terminal import PIPED_WIDTH, output_width


def console(*, stderr: bool = False, file: IO[str] | None = None, default_width: int = PIPED_WIDTH, **options: Any) -> Any:
    """A Console on stdout (or stderr, or `file`), as wide as `output_width` says. When the reader
    of stdout goes away (`agenteval report ... | head`), what is left to print is dropped and the
    command ends with its own exit code: rich's own Console exits 1 there, which under `pipefail`
    reads as a failed gate."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), self.file.fileno())  # (nothing more to flush at exit)
            except (AttributeError, OSError, ValueError):  # not a real file
                pass
            self.quiet = True

    stream = file if file is not None else sys.stderr if stderr else sys.stdout
    return _Console(stderr=stderr, file=file, highlight=False, width=output_width(stream, default_width), **options)
