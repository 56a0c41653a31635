"""Capture what compilers and reference models print, natively or from Python.

Vela prints its report with Python's print, the TOSA reference model and Vela's C++ core write to
the process's file descriptors. Both end up in the text `captured_output` yields, so a library
call stays quiet and the words are kept for logs and error messages.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from collections.abc import Iterator


@contextlib.contextmanager
def captured_output() -> Iterator[list[str]]:
    """Redirect fds 1 and 2 and sys.stdout/sys.stderr; the list holds the text after the block."""
    text: list[str] = []
    python = io.StringIO()
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile(mode="w+b") as sink:
        try:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            with contextlib.redirect_stdout(python), contextlib.redirect_stderr(python):
                yield text
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            sink.seek(0)
            text.append(python.getvalue() + sink.read().decode("utf-8", errors="replace"))
