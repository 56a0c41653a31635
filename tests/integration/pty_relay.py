"""A man in the middle for serial links: copies bytes between a board's port and a new pty,
damaging some of them on the way (flipped bits, dropped bytes, injected garbage), seeded so a
failure can be replayed. The client opens `relay.path` as if it were the board's port."""

from __future__ import annotations

import os
import random
import select
import threading
import tty
from dataclasses import dataclass, field


@dataclass
class Damage:
    """Every how many reads (per direction) each kind of damage happens; 0 = never."""

    flip_every: int = 0
    drop_every: int = 0
    garbage_every: int = 0
    directions: tuple[str, ...] = ("to_runner", "to_host")


@dataclass
class RelayStats:
    reads: dict[str, int] = field(default_factory=lambda: {"to_runner": 0, "to_host": 0})
    flipped: int = 0
    dropped: int = 0
    injected: int = 0

    @property
    def damaged(self) -> int:
        return self.flipped + self.dropped + self.injected


class CorruptingRelay:
    def __init__(self, board_path: str, damage: Damage, seed: int = 0) -> None:
        self.damage = damage
        self.rng = random.Random(seed)
        self.stats = RelayStats()
        self.board = os.open(board_path, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(self.board)
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        self.path = os.ttyname(self.slave)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _mangle(self, data: bytes, direction: str) -> bytes:
        if direction not in self.damage.directions:
            return data
        self.stats.reads[direction] += 1
        n = self.stats.reads[direction]
        out = bytearray(data)
        d = self.damage
        if d.flip_every and n % d.flip_every == 0:
            out[self.rng.randrange(len(out))] ^= 1 << self.rng.randrange(8)
            self.stats.flipped += 1
        if d.drop_every and n % d.drop_every == 0 and len(out) > 1:
            at = self.rng.randrange(len(out))
            del out[at : at + self.rng.randint(1, 8)]
            self.stats.dropped += 1
        if d.garbage_every and n % d.garbage_every == 0:
            at = self.rng.randrange(len(out) + 1)
            out[at:at] = b"\xa5\x5a" + self.rng.randbytes(self.rng.randint(1, 24))
            self.stats.injected += 1
        return bytes(out)

    def _pump(self) -> None:
        route = {self.master: (self.board, "to_runner"), self.board: (self.master, "to_host")}
        while not self._stop.is_set():
            ready, _, _ = select.select(list(route), [], [], 0.05)
            for fd in ready:
                try:
                    data = os.read(fd, 1 << 16)
                except OSError:
                    return  # one side hung up
                target, direction = route[fd]
                if data:
                    os.write(target, self._mangle(data, direction))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for fd in (self.board, self.master, self.slave):
            os.close(fd)


class ReplugPort:
    """A board's port as a USB serial adapter shows it: a stable path (a symlink, as under
    /dev/serial/by-id/) to a pty that goes away when unplugged (the client's descriptor fails
    with EIO, the path is gone) and comes back as a new pty when plugged in again. The board
    (the runner) keeps running behind it; what it says while unplugged is lost, as on a real
    adapter."""

    def __init__(self, board_path: str, path: str) -> None:
        self.path = path
        self.board = os.open(board_path, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(self.board)
        self._lock = threading.Lock()
        self._pty: tuple[int, int] | None = None
        self.plug()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def plug(self) -> None:
        with self._lock:
            master, slave = os.openpty()
            tty.setraw(slave)
            os.symlink(os.ttyname(slave), self.path)
            self._pty = (master, slave)

    def unplug(self) -> None:
        with self._lock:
            if self._pty is not None:
                os.unlink(self.path)
                for fd in self._pty:
                    os.close(fd)
                self._pty = None

    def _pump(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                master = self._pty[0] if self._pty is not None else None
            fds = [self.board] + ([master] if master is not None else [])
            ready, _, _ = select.select(fds, [], [], 0.05)
            with self._lock:
                if self._pty is None or self._pty[0] != master:
                    master = None  # unplugged meanwhile: what the board says is lost
                for fd in ready:
                    try:
                        if fd == self.board:
                            data = os.read(self.board, 1 << 16)
                            if master is not None:
                                os.write(master, data)
                        elif master is not None:
                            os.write(self.board, os.read(master, 1 << 16))
                    except OSError:
                        continue  # the client side closed: it may open the port again

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.unplug()
        os.close(self.board)
