"""Whether a file or folder hil is about to act on could have been written by someone else.

A device file can make hil run commands (`flash.command`, `ssh_options`, CMake defines), so it
is read only when nobody but this user (or root) could have put it there: owned by this user
or root, and writable by neither its group nor others. The same rule as OpenSSH's for
`~/.ssh/config`. A folder is held to it too, since whoever may write a folder may add a file.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


@dataclass(frozen=True)
class Untrusted:
    """Why a path is refused: its owner and mode, in words, and the commands that fix it."""

    path: Path
    reason: str
    fix: str


def _user_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return f"uid {uid}"


def untrusted(path: Path) -> Untrusted | None:
    """None when `path` (followed through symlinks) is this user's or root's and writable by
    no one else; otherwise what is wrong with it. On a system without POSIX owners (Windows),
    None: there is nothing this check could read."""
    if not hasattr(os, "getuid"):
        return None
    info = path.stat()
    me = os.getuid()
    mode = stat.S_IMODE(info.st_mode)
    owner = _user_name(info.st_uid)
    reasons: list[str] = []
    fixes: list[str] = []
    if info.st_uid not in (me, 0):
        reasons.append(f"owned by {owner}, not by you ({_user_name(me)}) or root")
        fixes.append(f"chown {_user_name(me)} {path}")
    if mode & WRITABLE_BY_OTHERS:
        who = " and ".join(
            w for bit, w in ((stat.S_IWGRP, "its group"), (stat.S_IWOTH, "others")) if mode & bit
        )
        reasons.append(f"writable by {who} (mode {mode:04o}, owner {owner})")
        fixes.append(f"chmod go-w {path}")
    if not reasons:
        return None
    return Untrusted(path, "; ".join(reasons), " && ".join(fixes))
