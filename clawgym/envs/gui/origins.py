"""Origins and the allow-list: what a GUI episode may reach, as the route that aborts everything else."""

from __future__ import annotations

import re
from urllib.parse import urlsplit


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def blocked_pattern(allowed: set[str]) -> re.Pattern[str]:
    """URLs to abort: any whose origin is not in ``allowed`` (data:, blob: and about: pass).

    Chromium hands requests over normalised (lower-case scheme and host, a path after the host), so an
    allowed origin is the URL's start up to the first ``/`` of the path; ``http://a:1@b/`` is not
    ``http://a:1``. The expression must mean the same in JavaScript, where Playwright's driver runs it.
    """
    origins = "|".join(re.sub(r"[.*+?^${}()|\[\]\\/]", r"\\\g<0>", o) for o in sorted(allowed))
    return re.compile(f"^(?!(?:data|blob|about):{'|(?:' + origins + ')/' if origins else ''})")
