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
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, Final

import structlog

from palaestra.errors import ConfigurationError

__all__ = [
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "make_private",
    "private_dir",
    "private_writer",
    "secret_file",
]

log = structlog.get_logger(__name__)

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


def secret_file(path: Path, generate: Callable[[], str]) -> str:
    """The secret kept in ``path``, generated into it (mode 0600) when missing.

    A file found readable or writable by other users is narrowed to 0600 with a warning
    (whoever could read it may hold what it opens); one that cannot be narrowed raises
    :class:`ConfigurationError`, so that the start stops and says why."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        _narrow_secret(path)
        return path.read_text().strip()
    secret = generate()
    with os.fdopen(fd, "w") as handle:
        handle.write(secret + "\n")
    return secret


def _narrow_secret(path: Path) -> None:
    try:
        was = make_private(path, create=False)
    except OSError as exc:
        mode = stat.S_IMODE(path.stat().st_mode)
        raise ConfigurationError(
            f"{path} is readable by other users (mode {oct(mode)}) and cannot be narrowed "
            f"({exc.strerror}); make it the operator's alone (chmod 600) and start again"
        ) from exc
    if was is not None:
        log.warning(
            "the secret key file was readable by other users: narrowed to 0600",
            path=str(path),
            was=oct(was),
            advice="whoever could read it can open the agents' and providers' keys "
            "sealed with it; consider them exposed",
        )
