"""In-process transformers policy with continuous batching (CPU by default, or one GPU).

One background thread owns the model and runs the decoding loop; ``generate``/``stream`` only enqueue
a request and await its result, so any number of coroutines (rollout workers, server requests) share
the model. Each loop iteration:

1. admits waiting requests (up to ``max_batch_size`` rows): prompts of equal length are prefilled
   together (no padding inside a prefill, so no fully-masked attention rows; a GRPO group of G copies
   of one prompt is one forward pass) and their KV caches are merged into the running batch,
   left-padded with zero keys/values that the attention mask hides;
2. runs ONE forward pass for all running rows (one new token each, KV cache, per-row position ids);
3. samples each row with its own temperature / top-p / seeded ``torch.Generator``, checks its stop
   conditions, and finishes rows whose answer is complete (their cache rows are dropped).

So requests join and leave between decoding steps; nobody waits for a whole batch to finish.

Logprobs: ``response_logprobs[i]`` is ``log_softmax(logits / T)[token]`` at the request's temperature T
(1 for greedy), no top-p filtering, with ``prose_only``'s mask if asked: the sampled token's log-probability
under the distribution it was drawn from, as SGLang returns it (the trainer's ratio uses the same T). It
matches a separate forward pass over prompt + response to float32 round-off.

Tokens: ``response_ids`` are the sampled tokens, with the end-of-turn token that stopped the answer (the
trainer must learn to stop) and any of a matched stop string; ``text`` is their decoding without that final
end-of-turn token, cut before the first stop string.

Seeds: a request's ``SamplingParams.seed`` seeds its own ``torch.Generator`` (else the policy's RNG draws one):
the same seed and batch give the same tokens; other batches agree up to float round-off in the logits.

Prefix reuse: prompts of at least ``PrefixCache.min_prefix`` tokens keep their keys and values
(:mod:`clawgym.inference.prefix_cache`); a later request sharing a long prefix with one (a chat's next turn,
the same system prompt) prefills only the tokens after it.

Weight updates: :meth:`HFPolicy.load_weights` copies new weights in between two decoding steps (the
worker holds ``_weights_lock`` during each forward pass) and bumps ``version``; requests in flight go on
with the new weights on top of the KV cache the old ones built, each token's logprob under the weights that
produced it (exact behaviour-policy logprobs). ``Generation.policy_version`` is the version that started the
request (the oldest weights involved: conservative for staleness), ``metadata["policy_version_last"]`` the last.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import random
import threading
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Mapping

import torch
from transformers import DynamicCache

from clawgym.core.messages import Message, parse_action
from clawgym.core.policy import Generation, SamplingParams, VersionedPolicy
from clawgym.inference.attention import use_gqa_decode
from clawgym.inference.chat_template import encode_prompt, stop_token_ids
from clawgym.inference.kv_buffer import CACHE_KWARG, KVBuffer
from clawgym.inference.models import load_model
from clawgym.inference.prefix_cache import PrefixCache
from clawgym.inference.prose_only import ProseOnlyMask
from clawgym.inference.streaming import StreamItem, TextDelta, streamable_prefix

logger = logging.getLogger(__name__)

GREEDY_BELOW = 1e-5  # temperatures below this decode greedily


class PolicyClosed(RuntimeError):
    """The policy was closed while the request was waiting or running."""


@dataclass
class _Request:
    prompt_ids: list[int]
    sampling: SamplingParams
    max_new_tokens: int
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    generator: torch.Generator | None
    events: asyncio.Queue | None = None  # set for streaming requests
    response_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    length: int = 0  # real (unpadded) tokens in this row's KV cache
    emitted: int = 0  # characters of text already streamed
    finish_reason: str | None = None
    cancelled: bool = False
    reused_prefix: int = 0  # prompt tokens whose keys/values came from the prefix cache
    opened: bool = False  # a visible (non-blank) character was sampled: prose_only masks no more


class HFPolicy(VersionedPolicy):
    """A transformers causal LM served in-process; see the module docstring for the batching loop."""

    supports_prose_only = True  # SamplingParams.prose_only is honoured

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        name: str = "hf",
        max_batch_size: int = 32,
        seed: int = 0,
        prefix_cache: PrefixCache | None = None,
    ) -> None:
        self.model = model.eval()
        use_gqa_decode(model)
        self.prefix_cache = prefix_cache if prefix_cache is not None else PrefixCache()
        self.tokenizer = tokenizer
        self.name = name
        self.max_batch_size = max_batch_size
        self.device = next(model.parameters()).device
        self.max_positions = int(getattr(model.config, "max_position_embeddings", 0) or 1 << 30)
        self.stop_ids = stop_token_ids(tokenizer, model.config)
        self.stats: collections.Counter[str] = collections.Counter()
        self._version = 0
        self._rng = random.Random(seed)  # draws seeds for requests that bring none
        self._weights_lock = threading.Lock()
        self._cond = threading.Condition()
        self._waiting: collections.deque[_Request] = collections.deque()
        self._closed = False
        self._thread: threading.Thread | None = None
        # running batch (touched only by the worker thread)
        self._rows: list[_Request] = []
        self._kv: KVBuffer | None = None  # the running rows' keys and values
        vocab = int(getattr(model.config, "vocab_size", 0) or len(tokenizer))
        self._prose = ProseOnlyMask(tokenizer, vocab, self.device)  # SamplingParams.prose_only

    @classmethod
    def from_pretrained(cls, name_or_path: str, device: str = "cpu", dtype: torch.dtype | None = None,
                        **kwargs: Any) -> "HFPolicy":
        """Load a model by name (``clawgym models``) or HF checkpoint directory; ``dtype`` None: the model's own."""
        model, tokenizer = load_model(name_or_path, device=device, dtype=dtype)
        return cls(model, tokenizer, name=kwargs.pop("name", name_or_path), **kwargs)

    # ------------------------------------------------------------------ public API
    async def generate(self, messages: list[Message], tools: list[dict[str, Any]] | None = None,
                       sampling: SamplingParams | None = None) -> Generation:
        request = self._submit(encode_prompt(self.tokenizer, messages, tools), sampling, streaming=False)
        return await self._wait(request)

    async def generate_ids(self, prompt_ids: list[int], sampling: SamplingParams | None = None) -> Generation:
        """Generate from raw prompt token ids (token in, token out), skipping the chat template."""
        return await self._wait(self._submit(list(prompt_ids), sampling, streaming=False))

    async def stream(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        sampling: SamplingParams | None = None,
    ) -> AsyncIterator[StreamItem]:
        """Yield :class:`TextDelta` as tokens are sampled, then the final :class:`Generation`."""
        request = self._submit(encode_prompt(self.tokenizer, messages, tools), sampling, streaming=True)
        assert request.events is not None
        try:
            while True:
                item = await request.events.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
                if isinstance(item, Generation):
                    return
        finally:
            if not request.future.done():
                request.cancelled = True  # the consumer went away: free the row at the next step

    def load_weights(self, weights: Mapping[str, torch.Tensor] | torch.nn.Module, strict: bool = True,
                     version: int | None = None) -> int:
        """Copy new weights in between two decoding steps; thread-safe. The version becomes ``version`` (the
        trainer's, so a restart counts on from a restored checkpoint), else one more. Blocks for at most one
        forward pass; requests in flight keep running. Returns the new version (from a coroutine: update_weights).
        """
        state = weights.state_dict() if isinstance(weights, torch.nn.Module) else weights
        with self._weights_lock:
            with torch.no_grad():
                self.model.load_state_dict(state, strict=strict)
            self._version = version = self._version + 1 if version is None else int(version)
        self.prefix_cache.discard()  # keys and values of the old weights are of no use any more
        logger.info("policy %s: loaded weights, version %d", self.name, version)
        return version

    async def update_weights(self, weights: Mapping[str, torch.Tensor] | torch.nn.Module, strict: bool = True,
                             version: int | None = None) -> int:
        return await asyncio.to_thread(self.load_weights, weights, strict, version)

    async def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
            self._thread = None

    # ------------------------------------------------------------------ request plumbing

    def _submit(self, prompt_ids: list[int], sampling: SamplingParams | None, streaming: bool) -> _Request:
        sampling = sampling or SamplingParams()
        if not prompt_ids:
            raise ValueError("the prompt is empty")
        room = self.max_positions - len(prompt_ids)
        if room <= 0:
            raise ValueError(f"the prompt has {len(prompt_ids)} tokens; the model's context is {self.max_positions}")
        if sampling.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {sampling.max_tokens}")
        if not 0.0 < sampling.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {sampling.top_p}")
        if sampling.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {sampling.temperature}")
        loop = asyncio.get_running_loop()
        generator = None
        if sampling.temperature >= GREEDY_BELOW:
            seed = sampling.seed if sampling.seed is not None else self._rng.getrandbits(63)
            generator = torch.Generator(device=self.device).manual_seed(seed)
        request = _Request(
            prompt_ids=prompt_ids,
            sampling=sampling,
            max_new_tokens=min(sampling.max_tokens, room),
            loop=loop,
            future=loop.create_future(),
            generator=generator,
            events=asyncio.Queue() if streaming else None,
        )
        with self._cond:
            if self._closed:
                raise PolicyClosed(f"policy {self.name} is closed")
            self._waiting.append(request)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"hf-policy-{self.name}", daemon=True)
                self._thread.start()
            self._cond.notify()
        return request

    async def _wait(self, request: _Request) -> Generation:
        try:
            return await asyncio.shield(request.future)
        except asyncio.CancelledError:
            request.cancelled = True
            raise

    def _deliver(self, request: _Request, result: Generation | BaseException) -> None:
        """Hand a result (or error) from the worker thread to the request's event loop."""

        def resolve() -> None:
            if not request.future.done():
                if isinstance(result, BaseException):
                    request.future.set_exception(result)
                else:
                    request.future.set_result(result)
            if request.events is not None:
                request.events.put_nowait(result)

        try:
            request.loop.call_soon_threadsafe(resolve)
        except RuntimeError:  # the caller's loop is gone; nobody is waiting any more
            pass

    def _emit(self, request: _Request, delta: TextDelta) -> None:
        try:
            request.loop.call_soon_threadsafe(request.events.put_nowait, delta)  # type: ignore[union-attr]
        except RuntimeError:
            request.cancelled = True

    # ------------------------------------------------------------------ worker thread

    def _run(self) -> None:
        with torch.inference_mode():
            while True:
                with self._cond:
                    while not self._closed and not self._waiting and not self._rows:
                        self._cond.wait()
                    if self._closed:
                        break
                    admitted = []
                    while self._waiting and len(self._rows) + len(admitted) < self.max_batch_size:
                        admitted.append(self._waiting.popleft())
                groups: dict[int, list[_Request]] = {}
                for request in admitted:
                    if request.cancelled:
                        continue
                    entry, shared = self.prefix_cache.lookup(request.prompt_ids, self._weights_tag(request))
                    if entry is not None:
                        self._admit_cached(request, entry, shared)
                    else:
                        groups.setdefault(len(request.prompt_ids), []).append(request)
                for group in groups.values():
                    self._admit(group)
                self._drop_finished()
                if self._rows:
                    self._decode_step()
                    self._drop_finished()
        closed = PolicyClosed(f"policy {self.name} was closed")
        with self._cond:
            leftover = list(self._waiting) + self._rows
            self._waiting.clear()
        for request in leftover:
            self._deliver(request, closed)
        self._rows, self._kv = [], None

    def _forward(self, input_ids: torch.Tensor, cache: Any, **kwargs: Any) -> tuple[torch.Tensor, Any, int]:
        with self._weights_lock:
            out = self.model(input_ids=input_ids, use_cache=True, logits_to_keep=1, **{CACHE_KWARG: cache}, **kwargs)
            version = self._version
        self.stats["forward_passes"] += 1
        return out.logits[:, -1, :].float(), getattr(out, CACHE_KWARG), version

    def _admit(self, requests: list[_Request]) -> None:
        """Prefill prompts of one length together, sample their first tokens, merge their caches.

        Equal lengths need no padding inside the prefill (so no fully-masked attention rows); a GRPO
        group (G copies of one prompt) is prefilled in one forward pass.
        """
        ids = torch.tensor([r.prompt_ids for r in requests], dtype=torch.long, device=self.device)
        try:
            logits, cache, version = self._forward(ids, DynamicCache())
        except Exception as exc:  # e.g. out of memory: fail these requests, keep serving the others
            logger.exception("prefill failed")
            for request in requests:
                self._deliver(request, exc)
            return
        self.stats["prefill_passes"] += 1
        self.stats["prefill_tokens"] += ids.numel()
        for index, request in enumerate(requests):
            self.prefix_cache.store(request.prompt_ids, [layer.keys[index:index + 1] for layer in cache.layers],
                                    [layer.values[index:index + 1] for layer in cache.layers],
                                    self._weights_tag(request, version))
        self._start(requests, logits, cache, version)

    def _admit_cached(self, request: _Request, entry: Any, shared: int) -> None:
        """Prefill only the tokens after a cached prefix of ``shared`` tokens, then join the batch."""
        past = DynamicCache(
            ddp_cache_data=[(k[:, :, :shared], v[:, :, :shared]) for k, v in zip(entry.keys, entry.values)])
        ids = torch.tensor([request.prompt_ids[shared:]], dtype=torch.long, device=self.device)
        try:
            logits, cache, version = self._forward(ids, past)
        except Exception as exc:
            logger.exception("prefill after a cached prefix failed")
            self._deliver(request, exc)
            return
        self.stats["prefill_passes"] += 1
        self.stats["prefill_tokens"] += ids.numel()
        self.stats["prefix_reused_tokens"] += shared
        request.reused_prefix = shared
        self.prefix_cache.store(request.prompt_ids, [layer.keys for layer in cache.layers],
                                [layer.values for layer in cache.layers], self._weights_tag(request, version))
        self._start([request], logits, cache, version)

    def _weights_tag(self, request: _Request, version: int | None = None) -> Any:
        """What the keys and values of ``request``'s prompt depend on: the weights' version."""
        return self._version if version is None else version

    def _start(self, requests: list[_Request], logits: torch.Tensor, cache: Any, version: int) -> None:
        """Sample the first token of freshly prefilled prompts (equal length) and merge their caches."""
        logprobs = torch.log_softmax(logits, dim=-1)
        length = len(requests[0].prompt_ids)
        for index, request in enumerate(requests):
            request.length = len(request.prompt_ids)
            self._sample(request, logits[index], logprobs[index], version)
        running = [i for i, r in enumerate(requests) if r.finish_reason is None]
        if not running:
            return
        index = torch.tensor(running, dtype=torch.long, device=self.device)
        keys = [layer.keys.index_select(0, index) for layer in cache.layers]
        values = [layer.values.index_select(0, index) for layer in cache.layers]
        mask = torch.ones(len(running), length, dtype=torch.long, device=self.device)
        self._kv = KVBuffer(keys, values, mask) if self._kv is None else self._kv.merge(keys, values, mask)
        self._rows.extend(requests[i] for i in running)

    def _decode_step(self) -> None:
        """One forward pass for every running row: feed each row's last sampled token."""
        rows = self._rows
        input_ids = torch.tensor([[r.response_ids[-1]] for r in rows], dtype=torch.long, device=self.device)
        positions = torch.tensor([[r.length] for r in rows], dtype=torch.long, device=self.device)
        mask = torch.cat([self._kv.mask, torch.ones(len(rows), 1, dtype=torch.long, device=self.device)], dim=1)
        try:
            logits, _, version = self._forward(
                input_ids, self._kv.cache(1), attention_mask=mask, position_ids=positions
            )
        except Exception as exc:
            logger.exception("decode step failed; failing %d running requests", len(rows))
            for request in rows:
                request.finish_reason = "error"
                self._deliver(request, exc)
            self._rows, self._kv = [], None
            return
        self.stats["decode_passes"] += 1
        self.stats["max_batch_rows"] = max(self.stats["max_batch_rows"], len(rows))
        self._kv.advance(1, mask)
        logprobs = torch.log_softmax(logits, dim=-1)
        for index, request in enumerate(rows):
            request.length += 1
            if not request.cancelled:
                self._sample(request, logits[index], logprobs[index], version)

    def _drop_finished(self) -> None:
        keep = [i for i, r in enumerate(self._rows) if r.finish_reason is None and not r.cancelled]
        if len(keep) == len(self._rows):
            return
        self._rows = [self._rows[i] for i in keep]
        if not self._rows:
            self._kv = None
            return
        self._kv = self._kv.select(torch.tensor(keep, dtype=torch.long, device=self.device))

    # ------------------------------------------------------------------ sampling and stopping
    def _sample(self, request: _Request, logits: torch.Tensor, logprobs: torch.Tensor, version: int) -> None:
        sampling = request.sampling
        if sampling.prose_only and not request.opened:  # the kept logprob is of the masked distribution drawn from
            logits, logprobs = self._prose.mask(logits)
        if request.generator is None:
            token = int(torch.argmax(logits))
        else:
            if sampling.temperature != 1.0:  # the distribution it is drawn from, and whose logprob is kept
                logprobs = torch.log_softmax(logits / sampling.temperature, dim=-1)
            probs = logprobs.exp()
            if sampling.top_p < 1.0:
                probs = _top_p_filter(probs, sampling.top_p)
            token = _draw(probs, request.generator)
        request.response_ids.append(token)
        request.logprobs.append(float(logprobs[token]))
        if sampling.prose_only and not request.opened:
            request.opened = self._prose.visible(token)
        request.versions.append(version)
        self.stats["generated_tokens"] += 1

        text = None
        if token in self.stop_ids:
            request.finish_reason = "stop"
        elif sampling.stop or request.events is not None:
            text = self._text(request)
            if any(s in text for s in sampling.stop if s):
                request.finish_reason = "stop"
        if request.finish_reason is None and len(request.response_ids) >= request.max_new_tokens:
            request.finish_reason = "length"
        if request.finish_reason is None and request.length + 1 >= self.max_positions:
            request.finish_reason = "length"

        if request.events is not None and request.finish_reason is None:
            safe = streamable_prefix(text if text is not None else self._text(request), sampling.stop)
            if len(safe) > request.emitted:
                self._emit(request, TextDelta(safe[request.emitted :], [token], [request.logprobs[-1]]))
                request.emitted = len(safe)
            elif len(safe) == request.emitted:
                self._emit(request, TextDelta("", [token], [request.logprobs[-1]]))
        if request.finish_reason is not None:
            self._finish(request)

    def _text(self, request: _Request) -> str:
        """The response text so far: without a final stop token, cut before the first stop string."""
        ids = request.response_ids
        if ids and ids[-1] in self.stop_ids:
            ids = ids[:-1]
        text = self.tokenizer.decode(ids, skip_special_tokens=False)
        for stop in request.sampling.stop:
            if stop and stop in text:
                text = text[: text.index(stop)]
        return text

    def _finish(self, request: _Request) -> None:
        text = self._text(request)
        message, calls = parse_action(text)
        finish = request.finish_reason or "stop"
        if calls and finish == "stop":
            finish = "tool_calls"
        generation = Generation(
            text=text,
            message=message,
            tool_calls=calls,
            prompt_ids=list(request.prompt_ids),
            response_ids=list(request.response_ids),
            response_logprobs=list(request.logprobs),
            policy_version=request.versions[0],
            finish_reason=finish,
            metadata={"policy_version_last": request.versions[-1], "model": self.name,
                      "reused_prefix_tokens": request.reused_prefix},
        )
        if request.events is not None:  # the rest of the text, with the last token (never streamed yet)
            self._emit(request, TextDelta(text[request.emitted :], request.response_ids[-1:], request.logprobs[-1:]))
            request.emitted = len(text)
        self._deliver(request, generation)


def _draw(probs: torch.Tensor, generator: torch.Generator) -> int:
    """One token from ``probs`` by inverting its cumulative distribution at one uniform draw.

    The same distribution as ``torch.multinomial`` (zero-probability tokens are never drawn) from a
    float64 cumulative sum and a binary search, a fraction of ``torch.multinomial``'s cost over a 150k
    vocabulary on a CPU (docs/benchmarks.md, "Async vs synchronous loop").
    """
    cdf = torch.cumsum(probs, 0, dtype=torch.float64)
    point = torch.rand(1, generator=generator, dtype=torch.float64, device=probs.device) * cdf[-1]
    return min(int(torch.searchsorted(cdf, point, right=True)), probs.numel() - 1)


def _top_p_filter(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Keep the smallest set of tokens whose probability mass reaches ``top_p`` (nucleus sampling)."""
    sorted_probs, order = torch.sort(probs, descending=True)
    mass_before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
    sorted_probs[mass_before >= top_p] = 0.0
    filtered = torch.zeros_like(probs).scatter_(0, order, sorted_probs)
    return filtered / filtered.sum()
