"""Whether anything in the rules directory may have changed: inotify on Linux, a once-a-second poll elsewhere.

The rules registry used to stat every rule file of a database on every request (several syscalls and path
objects each time: a visible share of a ``POST /v1/sql``). Now it asks a :class:`Watch` for its
:meth:`~Watch.generation`, and stats the files only when that moved.

With inotify (through ctypes: no dependency) the kernel queues an event in the same system call that
changes a file, so a change is seen by the next request, as before. One inotify instance serves the whole
process (its number per user is limited); each watch covers the rules directory, its per-database
subdirectories and the directories that symlinked rule files point into (a Kubernetes ConfigMap, an
editor's link). Where inotify is not available (another OS, the instance or watch limit reached, the
directory missing) the generation moves at most once a second, so a change takes effect within a second.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
import time
import weakref
from pathlib import Path

POLL_S = 1.0  # how stale the rules may be without inotify

_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF, _IN_Q_OVERFLOW, _IN_ONLYDIR = 0x400, 0x800, 0x4000, 0x01000000
_MASK = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
         | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR)
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then len bytes of name)


class _Inotify:
    """The process's one inotify instance; events are handed to the watches of their watch descriptor."""

    def __init__(self) -> None:
        name = ctypes.util.find_library("c")
        libc = ctypes.CDLL(name, use_errno=True)
        self._add = libc.inotify_add_watch
        self._add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        self._rm = libc.inotify_rm_watch
        self._rm.argtypes = (ctypes.c_int, ctypes.c_int)
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self.fd = fd
        self.alive = True  # False in a forked child (the descriptor's queue is the parent's) or after an error
        self._watches: dict[int, weakref.WeakSet[Watch]] = {}

    def add(self, path: str, watch: Watch) -> int:
        wd = int(self._add(self.fd, os.fsencode(path), _MASK))
        if wd < 0:
            raise OSError(ctypes.get_errno(), f"inotify_add_watch failed for {path}")
        self._watches.setdefault(wd, weakref.WeakSet()).add(watch)
        return wd

    def remove(self, wd: int, watch: Watch | None) -> None:
        watchers = self._watches.get(wd)
        if watchers is not None and watch is not None:
            watchers.discard(watch)
        if not watchers:
            self._watches.pop(wd, None)
            self._rm(self.fd, wd)  # a descriptor already gone (its directory deleted) fails: nothing to do

    def drain(self) -> None:
        """Hand every queued event to its watches (one read; nothing queued is the usual case)."""
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            except OSError:  # the descriptor is unusable: every watch falls back to polling
                self.alive = False
                return
            offset = 0
            while offset < len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size + length
                if mask & _IN_Q_OVERFLOW:  # events were lost: every watch may have changed
                    for watchers in list(self._watches.values()):
                        for watch in list(watchers):
                            watch.changed(wd)
                    continue
                for watch in list(self._watches.get(wd, ())):
                    watch.changed(wd)


_instance: _Inotify | None = None


def _inotify() -> _Inotify | None:
    """The process's instance, made on first use (again in a forked child); None where there is none."""
    global _instance
    if _instance is not None and _instance.alive:
        return _instance
    try:
        _instance = _Inotify()
    except (OSError, AttributeError):  # no inotify on this system (AttributeError: no such libc symbol)
        _instance = None
    return _instance


def _after_fork_in_child() -> None:
    # The child shares the parent's inotify descriptor: reading it would take the parent's events.
    if _instance is not None and _instance.alive:
        _instance.alive = False
        os.close(_instance.fd)


os.register_at_fork(after_in_child=_after_fork_in_child)


class Watch:
    """Changes under ``directory``: :meth:`generation` moves whenever something there may have changed."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._generation = 0
        self._root_wd: int | None = None
        self._wds: set[int] = set()
        self._rescan = False
        self._polled_at = time.monotonic()
        self._inotify = self._start()

    @property
    def watching(self) -> bool:
        """Whether inotify watches the directory (else the generation moves once a second)."""
        return self._inotify is not None

    def generation(self) -> int:
        """A number that differs from any earlier answer when something may have changed since then."""
        inotify = self._inotify
        if inotify is not None and not inotify.alive:  # forked, or the descriptor failed: start over
            self._wds.clear()
            self._root_wd = None
            self._generation += 1
            self._inotify = inotify = self._start()
        if inotify is not None:
            inotify.drain()
            if self._rescan:  # a directory appeared, moved or went: watch what is there now
                self._rescan = False
                self._watch_all(inotify)
            return self._generation
        now = time.monotonic()
        if now - self._polled_at >= POLL_S:
            self._polled_at = now
            self._generation += 1
            self._inotify = self._start()  # the directory may exist now, or the process forked
        return self._generation

    def changed(self, wd: int) -> None:
        """Called by the instance for an event on one of this watch's descriptors."""
        self._generation += 1
        if wd == self._root_wd or wd not in self._wds:
            self._rescan = True

    def _start(self) -> _Inotify | None:
        inotify = _inotify()
        if inotify is None or not self.directory.is_dir():
            return None
        try:
            self._root_wd = inotify.add(str(self.directory), self)
            self._wds.add(self._root_wd)
            self._watch_all(inotify)
        except OSError:  # the watch limit, or the directory went meanwhile: poll instead
            self.close(inotify)
            return None
        weakref.finalize(self, _forget, inotify, self._wds)
        return inotify

    def _watch_all(self, inotify: _Inotify) -> None:
        """The per-database subdirectories and where symlinked entries point; the root is watched already."""
        if not self.directory.is_dir():
            self.close(inotify)  # gone: poll until it is back
            self._inotify = None
            self._generation += 1
            return
        targets: set[str] = set()
        for entry in self.directory.iterdir():
            if entry.is_symlink():
                targets.add(os.path.dirname(os.path.realpath(entry)))
            if entry.is_dir():
                targets.add(os.path.realpath(entry))
                for inner in entry.iterdir():
                    if inner.is_symlink():
                        targets.add(os.path.dirname(os.path.realpath(inner)))
        for target in targets:
            try:
                self._wds.add(inotify.add(target, self))
            except OSError:
                continue  # a dangling link or a vanished directory: the root's events still come

    def close(self, inotify: _Inotify | None = None) -> None:
        inotify = inotify or self._inotify
        if inotify is not None:
            for wd in self._wds:
                inotify.remove(wd, self)
        self._wds.clear()
        self._root_wd = None


def _forget(inotify: _Inotify, wds: set[int]) -> None:
    if inotify.alive:
        for wd in list(wds):
            inotify.remove(wd, None)
