"""The task server: bundled and user pages on 127.0.0.1 (ephemeral port), a thread inside the process.

``GET /ep/<seed>/<task_id>/<page>`` renders a page of a :class:`PageTask` with the params that
``generate`` makes for that seed (cached), so the server holds no episode state and many episodes can
share it. ``mount(prefix, directory)`` serves a directory of static files (a benchmark's own HTML, JS
and CSS, e.g. MiniWoB++) under ``/<prefix>/``. Anything else is a 404 page. Each env owns one server;
it stops with the env.
"""

from __future__ import annotations

import logging
import mimetypes
import threading
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from clawgym.envs.gui.task import PageTask, render_page

log = logging.getLogger(__name__)

NOT_FOUND = ("<!doctype html><html><head><title>Not found</title></head><body><h1>Not "
             "found</h1><p>{path}</p></body></html>")


class TaskServer:
    def __init__(self, tasks: dict[str, PageTask] | None = None, host: str = "127.0.0.1") -> None:
        self.tasks: dict[str, PageTask] = dict(tasks or {})
        self._cache: OrderedDict[tuple[str, int], dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.static: dict[str, Path] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                found = server.static_file(self.path)
                if found is not None:
                    status, data, kind = 200, found[0], found[1]
                else:
                    status, body = server.respond(self.path)
                    data, kind = body.encode("utf-8"), "text/html; charset=utf-8"
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("task server: " + format, *args)

        self._httpd = ThreadingHTTPServer((host, 0), Handler)
        self._httpd.daemon_threads = True
        self.host, self.port = self._httpd.server_address[:2]
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        name=f"gui-task-server:{self.port}", daemon=True)
        self._thread.start()

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, task: PageTask, seed: int, page: str | None = None) -> str:
        return f"{self.origin}/ep/{int(seed)}/{task.id}/{page or task.start}"

    def params(self, task: PageTask, seed: int) -> dict[str, Any]:
        key = (task.id, int(seed))
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        params = task.params(int(seed))
        with self._lock:
            self._cache[key] = params
            while len(self._cache) > 256:
                self._cache.popitem(last=False)
        return params

    def mount(self, prefix: str, directory: str | Path) -> str:
        """Serve the files under ``directory`` at ``/<prefix>/``; returns that URL."""
        root = Path(directory).resolve()
        if not root.is_dir():
            raise FileNotFoundError(f"cannot serve {root}: not a directory")
        self.static[prefix.strip("/")] = root
        return f"{self.origin}/{prefix.strip('/')}/"

    def static_file(self, raw_path: str) -> tuple[bytes, str] | None:
        """The bytes and content type of a mounted file, or None (never a path outside the mount)."""
        path = unquote(urlsplit(raw_path).path).lstrip("/")
        prefix, _, rest = path.partition("/")
        root = self.static.get(prefix)
        if root is None or not rest:
            return None
        target = (root / rest).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            return None
        kind = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if kind.startswith("text/") or kind.endswith(("javascript", "json")):
            kind += "; charset=utf-8"
        return target.read_bytes(), kind

    def respond(self, raw_path: str) -> tuple[int, str]:
        path = unquote(urlsplit(raw_path).path)
        parts = path.strip("/").split("/")
        if len(parts) == 4 and parts[0] == "ep" and parts[1].isdigit() and parts[2] in self.tasks:
            task = self.tasks[parts[2]]
            html = task.pages.get(parts[3])
            if html is not None:
                try:
                    return 200, render_page(html, self.params(task, int(parts[1])), int(parts[1]))
                except Exception as exc:  # a broken user task: say so on the page and in the log
                    log.exception("task %s failed to render", task.id)
                    return 500, f"<html><body><h1>Task error</h1><pre>{type(exc).__name__}</pre></body></html>"
        return 404, NOT_FOUND.format(path=path.replace("<", "&lt;"))

    def close(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None  # type: ignore[assignment]
