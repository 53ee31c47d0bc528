"""Wiping a warm browser page between GUI episodes, so it can be reused without a new context.

A new browser context costs a new renderer (~200 ms of a reset). Reusing the page is safe only if
nothing of the last episode survives, so :func:`wipe_page`:

1. navigates to about:blank: the old document unloads (its ``pagehide`` handlers run now, before the
   clear), and its timers, workers, sockets and pending dialogs die with it;
2. resets the navigation history to that about:blank (``go_back`` cannot reach the last episode);
3. clears every storage of the last episode's allowed origins through CDP (``Storage.clearDataForOrigin``
   "all": cookies, localStorage, IndexedDB, Cache Storage, service workers); no other origin could
   have stored anything, since every other request is aborted;
4. clears the HTTP cache and closes any other page of the context;
5. parks the mouse at (0, 0);
6. sessionStorage and ``window.name`` live in the tab, out of CDP's reach: a script that runs before any
   page script (``Page.addScriptToEvaluateOnNewDocument``) empties them at each origin's first page of
   the new episode; an episode token stored with them marks them as done, and the last episode's
   script is removed first.

Steps 2-6 do not depend on each other, so their CDP commands go out together and the wipe waits for
all answers at once (:func:`send_all`) instead of one round trip each; they run in the browser process
while the renderer is still setting up about:blank (the navigation returns at its commit).

``tests/test_gui_reset.py`` writes each of these in one episode and checks the next sees none of it.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from typing import Any

SESSION_WIPE_JS = r"""
try {
  if (sessionStorage.getItem('__clawgym_episode') !== 'TOKEN') {
    sessionStorage.clear();
    sessionStorage.setItem('__clawgym_episode', 'TOKEN');
    window.name = '';
  }
} catch (e) {}
"""


def send_all(cdp: Any, calls: list[tuple[str, dict[str, Any] | None]]) -> list[Any]:
    """Send CDP commands without waiting for each answer; their answers, in order.

    Playwright's sync ``CDPSession.send`` waits for each reply. Its async object (``_impl_obj``) runs on
    the sync API's own event loop, so the commands are gathered there; if a Playwright version lacks
    that shape, they are sent one by one.
    """
    impl, run = getattr(cdp, "_impl_obj", None), getattr(cdp, "_sync", None)
    send = getattr(impl, "send", None)
    if send is None or run is None or not inspect.iscoroutinefunction(send):
        return [cdp.send(method, params) for method, params in calls]
    wants_timeout = "timeout" in inspect.signature(send).parameters

    async def together() -> list[Any]:
        return list(await asyncio.gather(*(
            send(method, params, None) if wants_timeout else send(method, params) for method, params in calls
        )))

    return run(together())


def wipe_page(page: Any, cdp: Any, origins: set[str], session_script: str | None, timeout_ms: float = 5000) -> str:
    """Wipe ``page`` (``cdp``: a CDP session on it, with the Page domain enabled); returns the new script id.

    ``session_script`` is the id :func:`wipe_page` returned last time (None the first time).
    """
    page.goto("about:blank", wait_until="commit", timeout=timeout_ms)
    for other in page.context.pages:
        if other != page:
            other.close()
    calls: list[tuple[str, dict[str, Any] | None]] = [("Page.resetNavigationHistory", None)]
    calls += [("Storage.clearDataForOrigin", {"origin": o, "storageTypes": "all"}) for o in sorted(origins)]
    calls += [("Network.clearBrowserCache", None),
              ("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": 0, "y": 0})]
    if session_script is not None:
        calls.append(("Page.removeScriptToEvaluateOnNewDocument", {"identifier": session_script}))
    source = SESSION_WIPE_JS.replace("TOKEN", uuid.uuid4().hex)
    calls.append(("Page.addScriptToEvaluateOnNewDocument", {"source": source}))
    return send_all(cdp, calls)[-1]["identifier"]
