"""One Chromium per env, driven by Playwright's sync API; one warm page reused across episodes.

Threading: Playwright's sync objects belong to the thread that created them, and Playwright allows one
sync driver per thread. So the browser starts lazily on the first ``new_episode`` in the calling thread,
the driver is shared (reference-counted) by every Browser in that thread, and every later call must come
from the same thread: **use an env from one thread only** (a rollout worker per env is the intended
shape). A call from another thread raises ``WrongThread`` instead of corrupting the driver.

Reset: a new context costs a new renderer (~200 ms), so (``reuse_pages=True``) a healthy page is kept and
wiped between episodes (``wipe.py``); a crashed, hung or broken page gets a new context, as does every
``fresh_context_every``-th episode (renderer memory). Downloads are refused. Safety: requests off the
episode's allow-list (``origins.blocked_pattern``) go to a handler that aborts them; allowed ones pass
inside Playwright's driver (no round trip to Python). Service workers are blocked, pop-ups closed.

Hangs and crashes: a watchdog timer guards every browser operation. If one runs past
``hang_timeout_s`` (an endless JS loop, a page stuck in an alert storm), the watchdog kills this
browser's renderer processes, Playwright fails the pending call, and the env ends the episode with
an error; the next episode gets a new context and renderer. Dialogs are accepted as they come and
reported in the next observation; more than ``max_dialogs`` in one step counts as an alert storm.
"""

from __future__ import annotations

import io
import logging
import os
import re
import signal
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urljoin

import numpy as np

from clawgym.envs.gui.driver import acquire_playwright, release_playwright
from clawgym.envs.gui.observe import LISTEN_JS, SNAPSHOT_JS, PageView
from clawgym.envs.gui.origins import blocked_pattern, origin_of
from clawgym.envs.gui.pending import PENDING_JS, ROUND_TRIP_JS
from clawgym.envs.gui.task import STATE_JS
from clawgym.envs.gui.wipe import wipe_page
from clawgym.sandbox import procs

log = logging.getLogger(__name__)

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic", "--disable-dev-shm-usage",
]
DEFAULT_CHROMIUM = "/usr/bin/chromium"


class PageBroken(RuntimeError):
    """The page crashed, hung or left the allowed origins: the episode cannot go on."""


class WrongThread(RuntimeError):
    """A Playwright object was used from a thread other than the one that created it."""


class Browser:
    """A Chromium instance for one env: a new context and page per episode, guarded actions."""

    def __init__(
        self,
        executable: str | None = None,
        viewport: tuple[int, int] = (800, 600),
        hang_timeout_s: float = 10.0,
        action_timeout_ms: int = 3000,
        load_timeout_ms: int = 5000,
        idle_timeout_ms: int = 2000,
        max_dialogs: int = 20,
        max_items: int = 400,
        reuse_pages: bool = True,
        fresh_context_every: int = 200,
    ) -> None:
        self.executable = executable or os.environ.get("CLAWGYM_CHROMIUM") or DEFAULT_CHROMIUM
        self.viewport = {"width": int(viewport[0]), "height": int(viewport[1])}
        self.hang_timeout_s = hang_timeout_s
        self.action_timeout_ms = action_timeout_ms
        self.load_timeout_ms = load_timeout_ms
        self.idle_timeout_ms = idle_timeout_ms
        self.max_dialogs = max_dialogs
        self.max_items = max_items
        self.reuse_pages = reuse_pages
        self.fresh_context_every = fresh_context_every
        self.marker = uuid.uuid4().hex  # finds this browser's processes under /proc
        self._thread: int | None = None
        self._driver: Any = None
        self._browser: Any = None
        self.context: Any = None
        self.page: Any = None
        self.allowed: set[str] = set()
        self.blocked: list[str] = []
        self.broken: str | None = None
        self._inflight = 0
        self._requests = 0  # requests started since the last settle
        self._dialogs: list[str] = []
        self._popups = 0
        self._hung = False
        self._downloads = 0
        self._cdp: Any = None  # the warm page's CDP session
        self._blocking: re.Pattern[str] | None = None  # the route that aborts what is not allowed
        self._navigating = False  # goto() is loading the page: its own document request is not settled
        self._goto_requests: set[Any] = set()
        self._session_script: str | None = None
        self._episodes_on_context = 0
        self.reused = False  # whether the current episode runs on a wiped warm page
        self.not_reused_because: str | None = None  # why the last new_episode opened a new context instead

    # ---------------------------------------------------------------- lifecycle
    def _check_thread(self) -> None:
        if self._thread is not None and self._thread != threading.get_ident():
            raise WrongThread(
                "this GUI env's browser was started in another thread; Playwright's sync API requires "
                "using an env from the thread that first reset it"
            )

    def _launch(self) -> None:
        if not Path(self.executable).exists():
            raise FileNotFoundError(
                f"Chromium not found at {self.executable}; "
                "install it (apt-get install chromium) or set CLAWGYM_CHROMIUM"
            )
        self._thread = threading.get_ident()
        self._driver = acquire_playwright()
        try:
            self._browser = self._driver.chromium.launch(
                executable_path=self.executable, headless=True,
                args=CHROMIUM_ARGS + [f"--clawgym-browser={self.marker}"],
            )
        except BaseException:
            self._driver = None
            release_playwright()
            raise

    def new_episode(self, allowed_origins: set[str]) -> None:
        """Start an episode with nothing of the last one left: a wiped warm page, or a fresh context."""
        self._check_thread()
        if self._browser is not None and not self._browser.is_connected():
            self.close()
            self._thread = None
        if self._browser is None:
            self._launch()
        previous = set(self.allowed)
        self.not_reused_because = self._why_not_reusable()
        self.reused = self.not_reused_because is None and self._wipe(previous)
        if not self.reused:
            self._close_context()
        self.allowed = {origin_of(o) for o in allowed_origins}
        self.blocked, self.broken, self._hung = [], None, False
        self._inflight, self._requests, self._dialogs, self._popups, self._downloads = 0, 0, [], 0, 0
        self._goto_requests.clear()
        self._episodes_on_context += 1
        if self.reused:
            with self.guard():
                self._block_all_but(self.allowed)
            return
        with self.guard():
            self.context = self._browser.new_context(viewport=self.viewport,
                                                     service_workers="block", accept_downloads=False)
            self._block_all_but(self.allowed)
            self.context.add_init_script(LISTEN_JS)
            self.context.add_init_script(PENDING_JS)
            if hasattr(self.context, "route_web_socket"):
                self.context.route_web_socket("**/*", self._route_ws)
            self.context.on("page", self._on_page)
            self.page = self.context.new_page()
            self.page.on("request", self._on_request)
            self.page.on("requestfinished", self._on_request_done)
            self.page.on("requestfailed", self._on_request_done)
            self.page.on("dialog", self._on_dialog)
            self.page.on("crash", self._on_crash)
            self.page.on("download", self._on_download)
            self._cdp = self.context.new_cdp_session(self.page) if self.reuse_pages else None
            if self._cdp is not None:
                self._cdp.send("Page.enable")  # scripts for new documents run only with the Page domain on
        self._episodes_on_context = 1

    def _block_all_but(self, allowed: set[str]) -> None:
        """Route the requests outside ``allowed`` to the aborting handler (only when the set changed)."""
        pattern = blocked_pattern(allowed)
        if self._blocking is None or self._blocking.pattern != pattern.pattern:
            if self._blocking is not None:
                self.context.unroute(self._blocking, self._route)
            self.context.route(pattern, self._route)
            self._blocking = pattern

    def _can_reuse(self) -> bool:
        return self._why_not_reusable() is None

    def _why_not_reusable(self) -> str | None:
        if not self.reuse_pages:
            return "page reuse is off"
        if self.page is None or self._cdp is None or self.page.is_closed():
            return "no warm page"
        if self.broken:
            return f"the last page broke: {self.broken}"
        if self._episodes_on_context >= self.fresh_context_every:
            return f"a fresh context every {self.fresh_context_every} episodes"
        return None

    def _wipe(self, origins: set[str]) -> bool:
        """Clear everything the last episode could leave in this page; False (new context) if that fails."""
        attempts = 5  # a loaded machine can take a while to finish a process swap: back off 0.1, 0.2, 0.4, 0.8 s
        for attempt in range(attempts):
            try:
                with self.guard():
                    self._session_script = wipe_page(self.page, self._cdp, origins,
                                                     self._session_script, self.load_timeout_ms)
                return True
            except Exception as exc:  # a cross-process navigation detaches the CDP session: attach anew
                detached = "Not attached" in str(exc) or "Script not found" in str(exc)
                if attempt < attempts - 1 and not self.broken and (detached or "Timeout" in type(exc).__name__):
                    if detached:  # (the old session's new-document script went with it)
                        with self.guard():
                            self.page.wait_for_timeout(100 * 2 ** attempt)  # let the process swap finish
                            self._cdp, self._session_script = self.context.new_cdp_session(self.page), None
                    continue  # a timeout (a loaded machine) is tried again as it is
                self.not_reused_because = f"wiping the warm page failed: {exc}"
                log.info("wiping the warm page failed (%s): opening a new context", exc)
                break
        return False

    def end_episode(self) -> None:
        """Leave the page warm for the next episode when it can be reused; otherwise close the context."""
        if self._thread is not None and self._thread != threading.get_ident():
            return  # a foreign thread cannot touch Playwright objects; close() kills the processes instead
        if not self._can_reuse():
            self._close_context()

    def _close_context(self) -> None:
        if self._thread is not None and self._thread != threading.get_ident():
            return
        if self.context is not None:
            context, self.context, self.page, self._cdp, self._session_script = self.context, None, None, None, None
            self._blocking = None
            try:
                context.close()
            except Exception as exc:  # a crashed renderer or a dead browser
                log.debug("context close failed: %s", exc)

    def close(self) -> None:
        """Release the browser; safe to call twice. From a foreign thread it kills the processes instead."""
        if self._browser is None:
            return
        if self._thread != threading.get_ident():
            log.warning("GUI env closed from a thread that did not start it: killing its Chromium processes")
            self._kill(renderers_only=False)
            self._browser = None
            return
        self._close_context()
        browser, self._browser = self._browser, None
        try:
            browser.close()
        except Exception as exc:
            log.debug("browser close failed: %s", exc)
        finally:
            self._driver = None
            release_playwright()

    # ---------------------------------------------------------------- event handlers
    def _allowed(self, url: str) -> bool:
        if url.startswith(("data:", "blob:", "about:")):
            return True
        return origin_of(url) in self.allowed

    def _route(self, route: Any) -> None:
        url = route.request.url
        if self._allowed(url):
            route.continue_()
        else:
            self.blocked.append(url)
            log.debug("blocked request to %s", url)
            route.abort("blockedbyclient")

    def _route_ws(self, ws: Any) -> None:
        if self._allowed(ws.url.replace("ws://", "http://").replace("wss://", "https://")):
            ws.connect_to_server()
        else:
            self.blocked.append(ws.url)
            ws.close()

    def _on_page(self, page: Any) -> None:
        if self.page is not None and page != self.page:
            self._popups += 1
            page.close()

    def _on_request(self, request: Any) -> None:
        if self._navigating and request.is_navigation_request() and request.frame == self.page.main_frame:
            self._goto_requests.add(request)  # goto() waits for this one itself (domcontentloaded)
            return
        self._inflight += 1
        self._requests += 1

    def _on_request_done(self, request: Any) -> None:
        if request not in self._goto_requests:
            self._inflight = max(0, self._inflight - 1)
        self._goto_requests.discard(request)

    def _on_dialog(self, dialog: Any) -> None:
        self._dialogs.append(f"{dialog.type} {dialog.message[:200]!r}")
        if len(self._dialogs) > self.max_dialogs:
            self.broken = f"alert storm: more than {self.max_dialogs} dialogs in one step"
            self._kill(renderers_only=True)
            return
        try:
            dialog.accept()
        except Exception as exc:  # the dialog's document went away meanwhile (a navigation, a wipe): nothing to answer
            log.debug("dialog gone before it was accepted: %s", exc)

    def _on_download(self, download: Any) -> None:
        self._downloads += 1  # refused (accept_downloads=False): nothing reaches the disk

    def _on_crash(self, page: Any) -> None:
        self.broken = self.broken or "the page crashed"

    # ---------------------------------------------------------------- watchdog
    @contextmanager
    def guard(self) -> Iterator[None]:
        """Run browser calls under the hang watchdog; any failure after a hang/crash becomes PageBroken."""
        self._check_thread()
        timer = threading.Timer(self.hang_timeout_s, self._on_hang)
        timer.daemon = True
        timer.start()
        try:
            yield
        except Exception as exc:
            if self._hung or self.broken or _is_crash(exc):
                reason = self.broken or (
                    f"the page hung for more than {self.hang_timeout_s:g} s (endless script?)"
                    if self._hung else "the page crashed"
                )
                self.broken = reason
                raise PageBroken(reason) from exc
            raise
        finally:
            timer.cancel()

    def _on_hang(self) -> None:
        self._hung = True
        self.broken = self.broken or f"the page hung for more than {self.hang_timeout_s:g} s (endless script?)"
        log.warning("browser operation exceeded %.1f s: killing the renderer", self.hang_timeout_s)
        self._kill(renderers_only=True)

    def _browser_pid(self) -> int | None:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and f"--clawgym-browser={self.marker}" in procs.cmdline(int(entry.name)):
                if "--type=" not in procs.cmdline(int(entry.name)):
                    return int(entry.name)
        return None

    def _kill(self, renderers_only: bool) -> None:
        root = self._browser_pid()
        if root is None:
            return
        for pid in procs.process_tree(root):
            if not renderers_only or "--type=renderer" in procs.cmdline(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    # ---------------------------------------------------------------- page operations
    def _raise_if_broken(self) -> None:
        if self.broken:
            raise PageBroken(self.broken)
        if self.page is None:
            raise PageBroken("no page is open")

    def settle(self, after_action: bool = False) -> None:
        """Wait, as needed, for a started navigation and for requests in flight: those Playwright saw and
        those the page itself still waits on (``PENDING_JS``); ``after_action``: a round trip first, as a
        request an action started (a click's ``fetch``) reaches the counters a moment later."""
        page = self.page
        try:
            page.wait_for_load_state("domcontentloaded", timeout=self.load_timeout_ms)
        except Exception as exc:
            if _is_crash(exc) or self.broken:
                raise
            log.debug("load state wait: %s", exc)
        pending = self._page_round_trip() if after_action and self._requests == 0 else 0
        deadline = time.monotonic() + self.idle_timeout_ms / 1000
        while (self._requests > 0 or pending > 0) and time.monotonic() < deadline:
            while self._inflight > 0 and time.monotonic() < deadline:
                page.wait_for_timeout(5)
            if pending > 0 and self._requests == 0:
                page.wait_for_timeout(5)  # the page waits on work the network has not reported yet
            # responses reach the page's callbacks a moment after the network says done: let them run
            self._requests = 0
            pending = self._page_round_trip()

    def _page_round_trip(self) -> int:
        """Let the page run its pending callbacks (a ``setTimeout(0)``) and deliver its events to us;
        returns how many fetch/XHR calls the page still waits on."""
        try:
            return int(self.page.evaluate(ROUND_TRIP_JS))
        except Exception as exc:  # a navigation replaced the document meanwhile: wait for it instead
            if _is_crash(exc) or self.broken:
                raise
            self.page.wait_for_load_state("domcontentloaded", timeout=self.load_timeout_ms)
            return 0

    def goto(self, url: str) -> None:
        with self.guard():
            self._raise_if_broken()
            self._navigating = True
            try:
                self.page.goto(url, wait_until="domcontentloaded", timeout=self.load_timeout_ms)
            finally:
                self._navigating = False
            self.settle()

    def act(self, fn: Any) -> None:
        """Run one action on the page (a callable taking the page), then let the page settle."""
        self._dialogs, self._requests = [], 0
        with self.guard():
            self._raise_if_broken()
            try:
                fn(self.page)
            finally:
                if not self.broken:
                    self.settle(after_action=True)
        self._raise_if_broken()

    def locator(self, ref: int) -> Any:
        return self.page.locator(f'[data-cg-ref="{int(ref)}"]')

    def snapshot(self) -> PageView:
        with self.guard():
            self._raise_if_broken()
            raw = None
            for attempt in range(3):
                try:
                    raw = self.page.evaluate(SNAPSHOT_JS, {"maxItems": self.max_items, "maxText": 300})
                    break
                except Exception as exc:  # a navigation destroyed the context mid-walk: settle and retry
                    if _is_crash(exc) or self.broken or attempt == 2:
                        raise
                    self.settle()
            self._raise_if_broken()
        view = PageView.from_snapshot(raw)
        view.notes = self.notes()
        url = self.page.url
        if not self._allowed(url) and not url.startswith("chrome-error:"):
            self.broken = f"the page navigated away from the allowed origins to {url}"
        if url.startswith("chrome-error:") and self.blocked:
            self.broken = f"the page navigated away from the allowed origins to {self.blocked[-1]}"
        return view

    def notes(self) -> list[str]:
        out = []
        if self._dialogs:
            out.append("Dialogs (accepted): " + "; ".join(self._dialogs[-5:]))
        if self._popups:
            out.append(f"Pop-up windows closed: {self._popups}")
        if self._downloads:
            out.append(f"Downloads refused: {self._downloads}")
        return out

    def read_state(self) -> dict[str, Any]:
        """What checkers see: the page's reported state (sessionStorage), URL, body text and form fields."""
        with self.guard():
            self._raise_if_broken()
            return self.page.evaluate(STATE_JS)

    def screenshot(self) -> np.ndarray:
        """The viewport as an HxWx3 uint8 array."""
        from PIL import Image

        with self.guard():
            self._raise_if_broken()
            png = self.page.screenshot(type="png", animations="disabled", caret="hide", timeout=self.load_timeout_ms)
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.uint8)

    def resolve(self, url: str) -> str:
        base = self.page.url if self.page is not None else ""
        return urljoin(base, url)


def _is_crash(exc: BaseException) -> bool:
    text = str(exc)
    return any(s in text
               for s in ("Target crashed", "Page crashed", "Target closed", "has been closed",
                         "Browser closed", "Connection closed"))
