"""A watch-fed cache of one kind of object (pods, nodes, PodGroups): list once, then watch.

The loop reads the cache instead of listing every cycle. A watch continues from the
resourceVersion of the last event (bookmarks included); when the API server answers 410 Gone
(the version is too old, e.g. after etcd compaction or a long disconnection) the cache lists
again; when the stream breaks or the server is unreachable it retries after a pause. Each of
these is kept as a note the loop journals, so a watch that drops is one line, not a crash.
``changed`` is set on every event, which is what makes the loop event-driven.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from schedlab.serve.kubernetes.api import Gone, KubeError

Obj = dict[str, Any]
#: Seconds a watch lasts before the server ends it and the cache starts the next one.
WATCH_SECONDS = 60.0
#: Seconds to wait after a failed list or a broken watch before trying again.
RETRY_SECONDS = 1.0


class ListWatch(Protocol):
    def list(self, path: str, params: Mapping[str, Any] | None = None) -> tuple[list[Obj], str]: ...

    def watch(
        self,
        path: str,
        resource_version: str,
        timeout: float = 60.0,
        params: Mapping[str, Any] | None = None,
    ) -> Any: ...


def object_key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


class Cache:
    """Objects of one collection by ``namespace/name`` (``name`` for cluster objects)."""

    def __init__(
        self,
        api: ListWatch,
        path: str,
        name: str,
        params: Mapping[str, Any] | None = None,
        changed: threading.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.path = path
        self.name = name
        self.params = dict(params or {})
        self.changed = changed or threading.Event()
        self.clock = clock
        self.objects: dict[str, Obj] = {}
        self.version = ""  # "" until listed (and again after a 410)
        self.synced = False
        self.relists = 0
        self.notes: list[str] = []  # what went wrong since the loop last looked
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def items(self) -> list[Obj]:
        with self._lock:
            return list(self.objects.values())

    def take_notes(self) -> list[str]:
        with self._lock:
            notes, self.notes = self.notes, []
        return notes

    def _note(self, text: str) -> None:
        with self._lock:
            self.notes.append(text)

    def relist(self) -> None:
        items, version = self.api.list(self.path, self.params)
        with self._lock:
            self.objects = {object_key(o): o for o in items}
            self.version = version
            self.synced = True
        self.changed.set()

    def run_once(self, timeout: float = WATCH_SECONDS) -> None:
        """List if needed, then follow one watch until the server ends it. Errors are noted."""
        try:
            if not self.version:
                self.relist()
            for kind, obj in self.api.watch(self.path, self.version, timeout, self.params):
                version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
                with self._lock:
                    if kind in ("ADDED", "MODIFIED"):
                        self.objects[object_key(obj)] = obj
                    elif kind == "DELETED":
                        self.objects.pop(object_key(obj), None)
                    if version:
                        self.version = version
                if kind != "BOOKMARK":
                    self.changed.set()
                if self._stop.is_set():
                    return
        except Gone:
            self.relists += 1
            self._note(f"watch of {self.name} expired (410 Gone): listed again")
            with self._lock:
                self.version = ""
        except KubeError as exc:
            self._note(f"watch of {self.name} failed: {exc}; retrying in {RETRY_SECONDS:g} s")
            self._stop.wait(RETRY_SECONDS)

    def start(self) -> None:
        """Follow the collection in a daemon thread until :meth:`stop`."""

        def loop() -> None:
            while not self._stop.is_set():
                began = self.clock()
                self.run_once()
                if self.clock() - began < 0.05:  # a watch that ends at once: do not spin
                    self._stop.wait(0.05)

        self._thread = threading.Thread(target=loop, daemon=True, name=f"watch-{self.name}")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
