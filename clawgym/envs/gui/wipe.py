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

``tests/test_gui_reset.py`` writes each of these in one episode and checks the next sees none of it.
"""

from __future__ import annotations

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


def wipe_page(page: Any, cdp: Any, origins: set[str], session_script: str | None, timeout_ms: float = 5000) -> str:
    """Wipe ``page`` (``cdp``: a CDP session on it, with the Page domain enabled); returns the new script id.

    ``session_script`` is the id :func:`wipe_page` returned last time (None the first time).
    """
    page.goto("about:blank", wait_until="commit", timeout=timeout_ms)
    cdp.send("Page.resetNavigationHistory")
    for origin in sorted(origins):
        cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
    cdp.send("Network.clearBrowserCache")
    for other in page.context.pages:
        if other != page:
            other.close()
    page.mouse.move(0, 0)
    if session_script is not None:
        cdp.send("Page.removeScriptToEvaluateOnNewDocument", {"identifier": session_script})
    source = SESSION_WIPE_JS.replace("TOKEN", uuid.uuid4().hex)
    return cdp.send("Page.addScriptToEvaluateOnNewDocument", {"source": source})["identifier"]
