"""``SamplingParams.prose_only`` on the HF engine: until a reply's first visible character, the tokens that would
open a tag, a JSON value or a code fence (:data:`clawgym.core.messages.CALL_OPENINGS`) are masked, so the reply
begins in words (the serve gateway's call guard asks for it: clawgym/serve/call_guard.py)."""

from __future__ import annotations

from typing import Any

import torch

from clawgym.core.messages import CALL_OPENINGS


class ProseOnlyMask:
    """Over one tokenizer's vocabulary (``size`` logits): which tokens open a call, which are blank. Built on
    first use (decoding every token once takes a second or two)."""

    def __init__(self, tokenizer: Any, size: int, device: torch.device) -> None:
        self.tokenizer, self.size, self.device = tokenizer, size, device
        self._openings: torch.Tensor | None = None
        self._blank: torch.Tensor | None = None

    def _build(self) -> None:
        known = min(self.size, len(self.tokenizer))
        texts = [self.tokenizer.decode([i], skip_special_tokens=False) for i in range(known)]
        texts += [""] * (self.size - len(texts))
        self._openings = torch.tensor([t.lstrip().startswith(CALL_OPENINGS) for t in texts], device=self.device)
        self._blank = torch.tensor([not t.strip() for t in texts], device=self.device)

    def mask(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``logits`` with the openings masked, and the log-softmax of what is left (the distribution drawn from)."""
        if self._openings is None:
            self._build()
        masked = logits.masked_fill(self._openings, float("-inf"))
        return masked, torch.log_softmax(masked, dim=-1)

    def visible(self, token: int) -> bool:
        """Whether ``token`` writes a visible character (after it, nothing is masked)."""
        if self._blank is None:
            self._build()
        return not bool(self._blank[token])
