"""A command's text written to a file whole: a temporary file renamed into place, so that
a reader never sees half of it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from guestbench.errors import InputError


class OutputError(InputError):
    """The file cannot be written: the message names it and the fix (bad input)."""


def write(text: str, output: Path) -> Path:
    """The text into output (-o FILE); returns the file's full path."""
    target = output.resolve()
    if not target.parent.is_dir():
        raise OutputError(f"--output {str(output)!r}: folder {target.parent} does not exist "
                          "(fix: create it first)")
    if target.is_dir():
        raise OutputError(f"--output {str(output)!r}: is a folder (fix: name a file in it)")
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes 0600; a report is for sharing
        os.replace(temporary, target)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise OutputError(f"--output {str(output)!r}: cannot write ({error.strerror}) "
                          "(fix: name a file you can write)") from None
    return target
