"""Whether anything in the rules directory may have changed: inotify on Linux, a once-a-second poll elsewhere.

The rules registry used to stat every rule file of a database on every request (several syscalls and path
objects each time: a visible share of a ``POST /v1/sql``). Now it asks a :class:`Watch` for its
:meth:`~Watch.generation`, and stats the files only when that moved.

With inotify (through ctypes: no dependency) the kernel queues an event in the same system call that
changes a file, so a change is seen by the next request, as before. One inotify instance serves the whole
process (its number per user is limited); each watch covers the rules directory, its per-database
subdirectories, and every directory holding a link on the way to the rules directory or to a rule file
(a Kubernetes ConfigMap's ``..data`` link, a release directory switched by a ``current`` link, an editor's
link). An event on the rules directory itself, or on a link on the way to it, starts the watch over on
what the path names now (the directory was moved, deleted or swapped); any other event watches anew
what the folders hold.

inotify is the fast path, not the only one: the generation also moves once a second whatever the events
say, so a change that no event reports (a network file system, a watch the kernel refused, a link chain
changed somewhere unforeseen) is still seen within a second. Hidden columns hang on these files, so a
missed event may cost a second of staleness, never a restart. Where inotify is not available at all
(another OS, the instance limit reached, the directory missing) that once-a-second tick is all there
is, and each tick asks for an instance again.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import struct
import time
import weakref
from pathlib import Path

from gateway.observability.logging import get_logger

log = get_logger(__name__)

POLL_S = 1.0  # how stale the rules may be without inotify

_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF, _IN_Q_OVERFLOW, _IN_IGNORED = 0x400, 0x800, 0x4000, 0x8000
_IN_ONLYDIR, _IN_MASK_ADD = 0x01000000, 0x20000000
# A folder that holds a link on the way only matters when its names change; a folder with rule files in it
# also when a file's content does. IN_MASK_ADD: one folder can be both, and a later add must not narrow it.
_NAMES = _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR
_CONTENT = _NAMES | _IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE
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
        # Asked before each read: a read of an empty queue fails with EAGAIN, an exception each time (three
        # lookups of the rules per /v1/sql request), where a poll says "nothing" for a third of the cost.
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)
        self.alive = True  # False in a forked child (the descriptor's queue is the parent's) or after an error
        self._watches: dict[int, weakref.WeakSet[Watch]] = {}

    def add(self, path: str, watch: Watch, mask: int) -> int:
        wd = int(self._add(self.fd, os.fsencode(path), mask | _IN_MASK_ADD))
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
        """Hand every queued event to its watches (one poll; nothing queued is the usual case)."""
        if not self._poll.poll(0):
            return
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
                if mask & _IN_Q_OVERFLOW:  # events were lost: every watch may have changed anywhere
                    for watchers in list(self._watches.values()):
                        for watch in list(watchers):
                            watch.changed(wd, mask)
                    continue
                for watch in list(self._watches.get(wd, ())):
                    watch.changed(wd, mask)
                if mask & _IN_IGNORED:  # the kernel dropped this descriptor (its directory went)
                    self._watches.pop(wd, None)


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
        self._wds: set[int] = set()
        self._stale = False  # an event came: what the paths name may have changed, so watch them afresh
        self._refused: set[str] = set()  # folders the kernel would not watch (logged once each)
        self._polled_at = time.monotonic()
        self.watching = False  # whether inotify watches the directory itself (else only the tick sees edits)
        self._inotify = _inotify()
        self._refresh()
        weakref.finalize(self, _forget, self._wds)

    def generation(self) -> int:
        """A number that differs from any earlier answer when something may have changed since then."""
        inotify = self._inotify
        if inotify is not None and inotify.alive:
            inotify.drain()
        elif inotify is not None:  # forked, or the descriptor failed: a new instance
            self._wds.clear()
            self._inotify = _inotify()
            self._generation += 1
            self._stale = True
        now = time.monotonic()
        if now - self._polled_at >= POLL_S:  # the safety net: whatever inotify said, look again
            self._polled_at = now
            self._generation += 1
            self._stale = True
            if self._inotify is None:  # none to be had last time (the instance limit, say): try again
                self._inotify = _inotify()
        if self._stale:
            self._refresh()
        return self._generation

    def changed(self, wd: int, mask: int) -> None:
        """Called by the instance for an event on one of this watch's descriptors."""
        self._generation += 1
        self._stale = True
        if mask & _IN_IGNORED:
            self._wds.discard(wd)

    def _refresh(self) -> None:
        """Watch every folder the paths lead through now, and drop the watches on folders they left.

        Adding a folder watched already hands back its descriptor, so this is cheap and leaves no gap: the
        old watches stay until the new ones are in place.
        """
        self._stale = self.watching = False
        inotify = self._inotify
        if inotify is None or not inotify.alive:
            return
        wanted: set[int] = set()
        root = str(self.directory)
        for folder, mask in sorted(self._folders().items()):
            try:
                wanted.add(inotify.add(folder, self, mask))
                self.watching = self.watching or folder == root
            except OSError as exc:  # a dangling link, a vanished folder, or the watch limit (ENOSPC)
                if folder not in self._refused and os.path.isdir(folder):
                    self._refused.add(folder)
                    log.warning("rules_watch_refused", folder=folder, error=str(exc),
                                effect="changes there are seen within a second instead of at once")
        for wd in self._wds - wanted:
            inotify.remove(wd, self)
        self._wds.clear()
        self._wds.update(wanted)

    def _folders(self) -> dict[str, int]:
        """The rules directory, its per-database folders, the folder of every link on the way to them and
        of every linked rule file: each with the events that matter there."""
        root = str(self.directory)
        folders: dict[str, int] = {}
        _link_folders(root, folders, last=_NAMES)  # a swap or removal of the directory itself
        if not os.path.isdir(root):
            return folders  # watched from where it would appear; the tick looks as well
        folders[root] = _CONTENT
        try:
            for entry in self.directory.iterdir():
                if entry.is_dir():
                    _link_folders(str(entry), folders, last=_NAMES)
                    folders[str(entry)] = _CONTENT
                    for inner in entry.iterdir():
                        if inner.is_symlink():
                            _link_folders(str(inner), folders, last=_CONTENT)
                elif entry.is_symlink():
                    _link_folders(str(entry), folders, last=_CONTENT)
        except OSError:
            self._stale = True  # a folder went while listed: look again on the next call
        return folders

    def close(self) -> None:
        inotify = self._inotify
        if inotify is not None and inotify.alive:
            for wd in self._wds:
                inotify.remove(wd, self)
        self._wds.clear()


def _link_folders(path: str, folders: dict[str, int], last: int) -> None:
    """Add every folder whose entries decide where ``path`` leads: one per link on the way, and the last one.

    ``rules/demo.yaml -> /srv/current/demo.yaml`` with ``/srv/current -> releases/2`` gives ``rules``,
    ``/srv`` and ``/srv/releases/2``: a change to any of them may change what ``path`` reads. The folders
    of links get :data:`_NAMES`, the last one ``last``.
    """
    pending, hops = os.path.abspath(path), 0
    while hops < 40:  # the kernel's own limit on links followed
        parts = pending.split(os.sep)
        for i in range(2, len(parts) + 1):
            prefix = os.sep.join(parts[:i]) or os.sep
            if os.path.islink(prefix):
                folder = os.path.dirname(prefix)
                folders[folder] = folders.get(folder, 0) | _NAMES
                try:
                    target = os.readlink(prefix)
                except OSError:
                    return
                pending = os.path.join(folder, target, *parts[i:])
                hops += 1
                break
        else:
            folder = os.path.dirname(pending)
            folders[folder] = folders.get(folder, 0) | last
            return


def _forget(wds: set[int]) -> None:
    inotify = _instance
    if inotify is not None and inotify.alive:
        for wd in list(wds):
            inotify.remove(wd, None)
