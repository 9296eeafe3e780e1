"""Writing files so that no reader ever sees half of one, and probing folders before long work."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import BadInput


def probe_writable(folder: Path) -> None:
    """Create and remove a file in ``folder``: the only test root cannot pass by permission bits alone.

    Raises OSError when no file can be created there (``/proc``, ``/sys``, a read-only mount).
    """
    fd, probe = tempfile.mkstemp(dir=folder, prefix=".roofline-probe-")
    os.close(fd)
    os.unlink(probe)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: Path, exclusive: bool = False, mode: int | None = None) -> Iterator[Path]:
    """A temporary file beside ``path``, same suffix; when the block succeeds it becomes ``path``.

    A reader sees the old file or the whole new one, never a part; an error or a signal inside
    the block leaves ``path`` as it was and removes the temporary file. ``exclusive``: never
    replace an existing ``path`` (BadInput). ``mode``: the new file's permissions (default:
    the existing file's, else what the umask allows).
    """
    path = Path(path)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix or ".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        if mode is None:
            mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask()
        os.chmod(tmp, mode)
        yield tmp
        if exclusive:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise BadInput(f"{path} exists; roofline never overwrites a result (choose a new name)") from None
        else:
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write(path: Path, data: str | bytes, exclusive: bool = False) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_path`)."""
    with atomic_path(path, exclusive=exclusive) as tmp:
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8")
        else:
            tmp.write_bytes(data)
