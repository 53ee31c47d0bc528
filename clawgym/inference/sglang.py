"""SGLang policy: a launched or attached SGLang server through its native API (GPU).

Token in, token out: the chat template is applied here (:mod:`clawgym.inference.chat_template`, the
same code path as the ``hf`` backend), the prompt goes to ``POST /generate`` as ``input_ids`` with
``return_logprob: true``, and the response tokens and logprobs come back from
``meta_info.output_token_logprobs`` (a list of ``[logprob, token_id, text]``). Nothing is re-tokenised.
SGLang reports the logprob of the sampled token under its own setting (by default the model's
distribution before temperature scaling, like the ``hf`` backend; see SGLang's
``--enable-return-logprob-after-processing`` if you change that).

Weight updates: ``/update_weights_from_disk`` (an HF checkpoint directory the trainer saved), or tensors
through the attached :mod:`~clawgym.rl.trainer.transport` (colocated: ``/update_weights_from_tensor``
with CUDA IPC handles; disaggregated: an NCCL group and ``/update_weights_from_distributed``; LoRA
exported as adapters: ``/load_lora_adapter``, then ``/generate`` names the adapter in ``lora_path``). SGLang
keeps serving during an update; with ``abort_all_requests=False`` requests in flight finish.
The request and response shapes are those of SGLang 0.5.23 (the version the ``gpu`` extra pins).

Server options are passed through unchanged (``server_args``), as slime does, not re-invented.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import httpx

from clawgym.core.messages import Message, parse_action
from clawgym.core.policy import Generation, SamplingParams, VersionedPolicy
from clawgym.inference.chat_template import encode_prompt

logger = logging.getLogger(__name__)


class SGLangError(RuntimeError):
    """The SGLang server refused or failed a request."""


def sglang_unavailable_reason() -> str | None:
    """Why an SGLang server cannot be launched here (None when it can)."""
    if importlib.util.find_spec("sglang") is None:
        return "the sglang package is not installed (pip install 'sglang[all]' on a CUDA machine)"
    try:
        import torch

        if not torch.cuda.is_available():
            return "no CUDA device is available (SGLang serves on GPUs)"
    except ImportError:
        return "torch is not installed"
    return None


def sampling_to_sglang(sampling: SamplingParams) -> dict[str, Any]:
    """clawgym SamplingParams -> SGLang ``sampling_params`` (``max_new_tokens``, ``sampling_seed``...)."""
    params: dict[str, Any] = {
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_new_tokens": sampling.max_tokens,
    }
    if sampling.stop:
        params["stop"] = list(sampling.stop)
    if sampling.seed is not None:
        params["sampling_seed"] = sampling.seed
    return params


def generation_from_sglang(
    payload: dict[str, Any], prompt_ids: list[int], version: int, tokenizer: Any = None
) -> Generation:
    """Map a ``/generate`` response to a :class:`Generation` (raises SGLangError on an abort)."""
    meta = payload.get("meta_info") or {}
    finish = meta.get("finish_reason") or {}
    finish_type = finish.get("type") if isinstance(finish, dict) else str(finish)
    if finish_type == "abort":
        raise SGLangError(f"SGLang aborted the request: {finish.get('message', finish)}")
    pairs = meta.get("output_token_logprobs")
    if pairs is None:
        raise SGLangError("SGLang response has no meta_info.output_token_logprobs (was return_logprob sent?)")
    response_ids = [int(item[1]) for item in pairs]
    logprobs = [float(item[0]) for item in pairs]
    if "output_ids" in payload and list(payload["output_ids"]) != response_ids:
        raise SGLangError("SGLang output_ids and output_token_logprobs disagree")
    text = payload.get("text")
    if text is None and tokenizer is not None:
        text = tokenizer.decode(response_ids, skip_special_tokens=True)
    text = text or ""
    message, calls = parse_action(text)
    reason = "length" if finish_type == "length" else "stop"
    if calls and reason == "stop":
        reason = "tool_calls"
    return Generation(
        text=text,
        message=message,
        tool_calls=calls,
        prompt_ids=list(prompt_ids),
        response_ids=response_ids,
        response_logprobs=logprobs,
        policy_version=version,
        finish_reason=reason,
        metadata={"weight_version": meta.get("weight_version"), "sglang_finish": finish, "id": meta.get("id")},
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def visible_gpus(gpus: Sequence[tuple[int, int]]) -> Iterator[None]:
    """CUDA_VISIBLE_DEVICES for a child process started inside the block (local indices on node 0)."""
    old = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for _, i in gpus)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = old


def launch_command(model_path: str, port: int, server_args: Iterable[str] = ()) -> list[str]:
    """The ``sglang.launch_server`` command line :meth:`SGLangPolicy.launch` runs (127.0.0.1 only)."""
    return [sys.executable, "-m", "sglang.launch_server", "--model-path", model_path,
            "--host", "127.0.0.1", "--port", str(port), *server_args]


class SGLangPolicy(VersionedPolicy):
    """Talks to an SGLang server at ``base_url``; :meth:`launch` starts one first."""

    def __init__(
        self,
        model: str,
        base_url: str,
        tokenizer: Any = None,
        api_key: str | None = None,
        timeout: float = 600.0,
        process: subprocess.Popen | None = None,
    ) -> None:
        from clawgym.inference.models import load_tokenizer

        self.name = model
        self.base_url = base_url.rstrip("/")
        self.tokenizer = (tokenizer
                          if tokenizer is not None and not isinstance(tokenizer, str)
                          else load_tokenizer(tokenizer or model))
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(base_url=self.base_url, timeout=timeout, headers=headers)
        self._process = process
        self._version = 0
        self.transport: Any = None  # a WeightTransport (clawgym.rl.trainer.transport), set by the builder

    @classmethod
    def launch(
        cls,
        model_path: str,
        server_args: Iterable[str] = (),
        port: int | None = None,
        startup_timeout: float = 900.0,
        **kwargs: Any,
    ) -> "SGLangPolicy":
        """Start ``python -m sglang.launch_server`` on 127.0.0.1 and wait until it is healthy."""
        reason = sglang_unavailable_reason()
        if reason:
            raise RuntimeError(f"cannot launch SGLang: {reason}")
        port = port or free_port()
        command = launch_command(model_path, port, server_args)
        logger.info("launching SGLang: %s", " ".join(command))
        process = subprocess.Popen(command, env=dict(os.environ))
        base_url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + startup_timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"SGLang exited with code {process.returncode} during start-up")
            try:
                if httpx.get(f"{base_url}/health", timeout=5).status_code == 200:
                    return cls(model_path, base_url, tokenizer=kwargs.pop("tokenizer", model_path),
                               process=process, **kwargs)
            except httpx.HTTPError:
                pass
            time.sleep(2)
        process.terminate()
        raise RuntimeError(f"SGLang did not become healthy within {startup_timeout:.0f} s")


    @classmethod
    def on_gpus(cls, model: str, gpus: Sequence[tuple[int, int]], server_args: Iterable[str] = (),
                base_url: str | None = None) -> "SGLangPolicy":
        """The server at ``base_url`` (already running and holding ``model``: the name picks the tokenizer), else
        one launched here on ``gpus`` (``(node, local index)``, node 0) with ``--tp-size`` their count."""
        if base_url:
            return cls(model, base_url, tokenizer=model)
        with visible_gpus(gpus):
            return cls.launch(model, ["--tp-size", str(len(gpus)), *server_args])

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """One JSON request to SGLang's native API; HTTP errors raise :class:`SGLangError` with the body."""
        response = await self._client.post(path, json=body)
        if response.status_code != 200:
            raise SGLangError(f"SGLang {path} returned HTTP {response.status_code}: {response.text[:500]}")
        return response.json()

    _post = post

    async def generate(self, messages: list[Message], tools: list[dict[str, Any]] | None = None,
                       sampling: SamplingParams | None = None) -> Generation:
        return await self.generate_ids(encode_prompt(self.tokenizer, messages, tools), sampling)

    async def generate_ids(self, prompt_ids: list[int], sampling: SamplingParams | None = None) -> Generation:
        """Generate from raw prompt token ids through ``/generate``."""
        version = self._version
        body = {
            "input_ids": list(prompt_ids),
            "sampling_params": sampling_to_sglang(sampling or SamplingParams()),
            "return_logprob": True,
            "logprob_start_len": -1,  # logprobs for the output only, not the prompt
        }
        adapter = self.adapter
        if adapter is not None:
            body["lora_path"] = adapter  # the name it was loaded under (AdapterTransport)
        payload = await self._post("/generate", body)
        generation = generation_from_sglang(payload, prompt_ids, version, self.tokenizer)
        generation.metadata["lora"] = adapter
        return generation

    @property
    def adapter(self) -> str | None:
        """The LoRA adapter generation is routed to: the latest one the transport loaded (LoRA exported as
        adapters), None when the base weights serve (merged export, or nothing published yet)."""
        return getattr(self.transport, "adapter", None)

    async def update_weights_from_disk(self, model_path: str | Path, abort_all_requests: bool = False,
                                       version: int | None = None) -> int:
        """Load an HF checkpoint directory the trainer wrote; in-flight requests finish by default."""
        version = self._version + 1 if version is None else int(version)
        result = await self._post(
            "/update_weights_from_disk",
            {"model_path": str(model_path), "abort_all_requests": abort_all_requests, "weight_version": str(version)},
        )
        if not result.get("success", False):
            raise SGLangError(f"SGLang weight update from {model_path} failed: {result.get('message', result)}")
        self._version = version
        return version

    async def update_weights(self, weights: Any, version: int | None = None) -> int:
        """A checkpoint path goes through ``/update_weights_from_disk``; tensors through :attr:`transport`.

        ``transport`` is a :mod:`clawgym.rl.trainer.transport` object the builder attaches (colocated:
        tensors by handle; disaggregated: NCCL). Returns the new version once SGLang serves it: ``version``
        (the trainer's, so a restart counts on from a restored checkpoint), else one more.
        """
        if isinstance(weights, (str, Path)):
            return await self.update_weights_from_disk(weights, version=version)
        if self.transport is None:
            raise SGLangError("this SGLang policy has no weight transport: attach one "
                              "(clawgym.rl.trainer.transport.make_transport) or send a checkpoint directory")
        state = weights.state_dict() if hasattr(weights, "state_dict") else weights
        version = self._version + 1 if version is None else int(version)
        await self.transport.publish(state, version)
        self._version = version
        return version

    async def close(self) -> None:
        if hasattr(self.transport, "close"):
            await self.transport.close()
        await self._client.aclose()
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                await asyncio.to_thread(self._process.wait, 30)
            except subprocess.TimeoutExpired:
                self._process.kill()
        self._process = None
