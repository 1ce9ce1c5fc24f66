"""The arena's data files are its operator's alone: created with mode 0600, folders 0700.

The database holds owners' token hashes, sealed keys, every reply agents sent;
an export holds the matches and runs. Neither is for the other users of the
machine, whatever their umask, so each file is created with its mode given
(never created first and narrowed after, which leaves a moment it is open to
all) and a file found wider than 0600 is narrowed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO, Final

__all__ = ["PRIVATE_DIR", "PRIVATE_FILE", "make_private", "private_dir", "private_writer"]

PRIVATE_FILE: Final = 0o600
PRIVATE_DIR: Final = 0o700


def private_writer(path: Path) -> BinaryIO:
    """``path`` opened for writing from empty, readable and writable by its owner only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)  # a file that was there kept its mode through O_CREAT
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "wb")


def make_private(path: Path, *, create: bool = True) -> int | None:
    """Narrow ``path`` to 0600 if it is wider; if it is missing, create it empty with mode
    0600 (unless not ``create``). The mode it had, when it was narrowed."""
    try:
        if not create:
            raise FileExistsError
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            return None
        if mode & ~PRIVATE_FILE:
            path.chmod(PRIVATE_FILE)
            return mode
    else:
        os.close(fd)
    return None


def private_dir(path: Path) -> None:
    """Create the folder ``path`` (and its parents) if missing, the folder itself 0700."""
    if not path.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(mode=PRIVATE_DIR, exist_ok=True)
