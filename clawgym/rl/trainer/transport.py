"""Weight transport: the trainer's new weights -> the serving policy. One interface, four ways.

- :class:`InProcessTransport` (``inproc``): the hf policy in this process copies the tensors in
  between two decoding steps.
- :class:`TensorTransport` (``tensor``, colocated): SGLang shares the trainer's GPUs; each tensor is
  cast to the serving dtype *on the serving device* and sent by handle through SGLang's
  ``POST /update_weights_from_tensor`` (CUDA IPC: no copy through the host).
- :class:`NcclTransport` (``nccl``, disaggregated): SGLang has its own GPUs; trainer rank 0 and the
  SGLang ranks form one process group (``POST /init_weights_update_group``), and each bucket is
  announced with ``POST /update_weights_from_distributed`` (names, dtypes, shapes) and broadcast from
  rank 0. The tests run this very code over gloo.
- :class:`AdapterTransport` (``adapter``, LoRA exported as adapters): only the trained adapters travel,
  as a peft directory SGLang loads with ``POST /load_lora_adapter`` under a versioned name; generation
  is routed to it (``lora_path`` in ``/generate``) and the previous version is unloaded.

Weights are consumed as an iterator of ``(name, tensor)`` and sent bucket by bucket, so a transport
never holds more than one bucket beyond what the trainer already has; none of them pickles the model.
Request shapes follow SGLang 0.5.23 (``sglang/srt/managers/io_struct.py``). :func:`served_weights` says
which export of the trainer a policy's transport takes (merged weights, or the adapters alone).
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import shutil
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Awaitable, Callable, Iterable, Iterator, Mapping, Protocol, Sequence, TypeVar

import torch

from clawgym.rl.trainer.base import Trainer
from clawgym.rl.types import JSONObject

if TYPE_CHECKING:
    from clawgym.core.policy import Policy
    from clawgym.inference.hf import HFPolicy
    from clawgym.inference.sglang import SGLangPolicy
    from clawgym.rl.trainer.config import LoraSettings

logger = logging.getLogger(__name__)

Named = Sequence[tuple[str, torch.Tensor]]
Weights = Iterable[tuple[str, torch.Tensor]] | Mapping[str, torch.Tensor]  # (name, tensor) pairs or a state dict
Post = Callable[[str, JSONObject], Awaitable[JSONObject]]  # an SGLang server's JSON API: (path, body) -> reply
T = TypeVar("T")
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


class TransportError(RuntimeError):
    """The serving side refused or failed a weight update."""


class WeightTransport(Protocol):
    """Sends one full set of weights and returns once the server serves them (version ``version``)."""

    async def publish(self, weights: Weights, version: int) -> None: ...


def named(weights: Weights) -> Iterator[tuple[str, torch.Tensor]]:
    return iter(weights.items()) if isinstance(weights, Mapping) else iter(weights)


def buckets(weights: Iterable[tuple[str, torch.Tensor]], bucket_bytes: int) -> Iterator[list[tuple[str, torch.Tensor]]]:
    """Group ``(name, tensor)`` pairs into lists of at most ``bucket_bytes`` (a bigger tensor goes alone)."""
    bucket: list[tuple[str, torch.Tensor]] = []
    size = 0
    for name, tensor in weights:
        nbytes = tensor.numel() * tensor.element_size()
        if bucket and size + nbytes > bucket_bytes:
            yield bucket
            bucket, size = [], 0
        bucket.append((name, tensor))
        size += nbytes
    if bucket:
        yield bucket


def _with_last(items: Iterator[T]) -> Iterator[tuple[T, bool]]:
    """Each item with whether it is the last one (SGLang flushes its cache after the last bucket only)."""
    previous = next(items, None)
    if previous is None:
        return
    for item in items:
        yield previous, False
        previous = item
    yield previous, True


def _check(result: JSONObject, what: str) -> None:
    if not result.get("success", False):  # weight updates say why in "message", LoRA updates in "error_message"
        raise TransportError(f"SGLang {what} failed: {result.get('message') or result.get('error_message') or result}")


def served_weights(trainer: Trainer, policy: Policy) -> Callable[[], Mapping[str, torch.Tensor] | None]:
    """The trainer export the policy's transport takes: ``export_adapters`` for :class:`AdapterTransport`,
    else ``export_weights`` (the full state dict, LoRA merged). Call it off the event loop."""
    if getattr(getattr(policy, "transport", None), "takes", "weights") == "adapters":
        return trainer.export_adapters
    return trainer.export_weights


class InProcessTransport:
    """The hf policy in this process: ``load_state_dict`` between two decoding steps."""

    def __init__(self, policy: HFPolicy) -> None:
        self.policy = policy

    async def publish(self, weights: Weights, version: int) -> None:
        await self.policy.update_weights(dict(named(weights)))


def serialize_named_tensors(bucket: Named) -> str:
    """What SGLang's HTTP API takes per TP rank: base64 of a ForkingPickler dump.

    torch's multiprocessing reductions pickle a CUDA tensor as an IPC handle (no copy) and a CPU
    tensor as a shared-memory handle, so the receiving process maps the sender's memory. This is the
    format of ``sglang.srt.utils.MultiprocessingSerializer.serialize(..., output_str=True)``.
    """
    from multiprocessing.reduction import ForkingPickler

    import torch.multiprocessing  # noqa: F401  (registers the tensor reductions)

    buffer = io.BytesIO()
    ForkingPickler(buffer).dump(list(bucket))
    return base64.b64encode(buffer.getvalue()).decode("ascii")


class TensorTransport:
    """Colocated SGLang: tensors on the serving device, in the serving dtype, sent by handle in buckets."""

    def __init__(self, post: Post, device: str | torch.device, dtype: torch.dtype = torch.bfloat16, tp_ranks: int = 1,
                 bucket_bytes: int = 512 << 20, serialize: Callable[[Named], str] = serialize_named_tensors) -> None:
        self.post, self.device, self.dtype = post, torch.device(device), dtype
        self.tp_ranks, self.bucket_bytes, self.serialize = tp_ranks, bucket_bytes, serialize

    async def publish(self, weights: Weights, version: int) -> None:
        cast = ((n, t.detach().to(device=self.device, dtype=self.dtype).contiguous()) for n, t in named(weights))
        for bucket, last in _with_last(buckets(cast, self.bucket_bytes)):
            payload = self.serialize(bucket)
            result = await self.post("/update_weights_from_tensor", {
                "serialized_named_tensors": [payload] * self.tp_ranks,  # one per SGLang TP rank
                "flush_cache": last,
                "weight_version": str(version),
            })
            _check(result, "/update_weights_from_tensor")


def join_update_group(master_address: str, master_port: int, rank: int, world_size: int, group_name: str,
                      backend: str = "nccl", timeout_s: float = 600.0) -> torch.distributed.ProcessGroup:
    """Join the weight-update group the way SGLang's ranks do (TCP rendezvous, a store prefixed by the
    group name, a group outside the default one), so trainer rank 0 and SGLang meet in one group."""
    from torch.distributed import distributed_c10d as c10d

    timeout = timedelta(seconds=timeout_s)
    store, rank, world_size = next(c10d.rendezvous(f"tcp://{master_address}:{master_port}", rank, world_size,
                                                   timeout=timeout))
    store.set_timeout(timeout)
    group, _ = c10d._new_process_group_helper(world_size, rank, [], c10d.Backend(backend),
                                              c10d.PrefixStore(group_name, store), group_name=group_name,
                                              backend_options=None, timeout=timeout)
    c10d._world.pg_group_ranks[group] = {i: i for i in range(world_size)}
    return group


class NcclTransport:
    """Disaggregated SGLang: rank 0 of one process group with the SGLang ranks; bf16 buckets by broadcast.

    :meth:`connect` once (it asks SGLang to join, and joins as rank 0), then :meth:`publish` per update.
    ``backend="gloo"`` and ``device="cpu"`` run the same code without a GPU (the tests do).
    """

    def __init__(self, post: Post, master_address: str, master_port: int, server_ranks: int,
                 group_name: str = "weight_update_group", backend: str = "nccl", device: str | torch.device = "cuda",
                 dtype: torch.dtype = torch.bfloat16, bucket_bytes: int = 512 << 20, timeout_s: float = 600.0) -> None:
        self.timeout_s = timeout_s
        self.post, self.address, self.port, self.server_ranks = post, master_address, master_port, server_ranks
        self.group_name, self.backend, self.device, self.dtype = group_name, backend, torch.device(device), dtype
        self.bucket_bytes = bucket_bytes
        self.group: torch.distributed.ProcessGroup | None = None

    async def connect(self) -> None:
        world = 1 + self.server_ranks
        request = asyncio.create_task(self.post("/init_weights_update_group", {
            "master_address": self.address, "master_port": self.port, "rank_offset": 1, "world_size": world,
            "group_name": self.group_name, "backend": self.backend,
        }))
        joining = asyncio.ensure_future(asyncio.to_thread(join_update_group, self.address, self.port, 0, world,
                                                          self.group_name, self.backend, self.timeout_s))
        done, _ = await asyncio.wait({request, joining}, return_when=asyncio.FIRST_COMPLETED)
        if request in done and not joining.done():
            # the server's answer can overtake this rank's own join by a moment: only a refusal is an error
            result = request.result() if request.exception() is None else {"message": repr(request.exception())}
            if not (isinstance(result, dict) and result.get("success")):
                raise TransportError(f"SGLang did not join the weight-update group: {result.get('message', result)} "
                                     f"(this rank gives up after {self.timeout_s:.0f} s)")
        try:
            self.group = await joining
        except BaseException:
            request.cancel()
            raise
        _check(await request, "/init_weights_update_group")

    def _broadcast(self, bucket: Named) -> None:
        handles = [torch.distributed.broadcast(tensor, src=0, group=self.group, async_op=True) for _, tensor in bucket]
        for handle in handles:
            handle.wait()

    async def publish(self, weights: Weights, version: int) -> None:
        if self.group is None:
            await self.connect()
        cast = ((n, t.detach().to(device=self.device, dtype=self.dtype).contiguous()) for n, t in named(weights))
        for bucket, last in _with_last(buckets(cast, self.bucket_bytes)):
            request = asyncio.create_task(self.post("/update_weights_from_distributed", {
                "names": [n for n, _ in bucket],
                "dtypes": [str(t.dtype).removeprefix("torch.") for _, t in bucket],
                "shapes": [list(t.shape) for _, t in bucket],
                "group_name": self.group_name,
                "flush_cache": last,
                "weight_version": str(version),
            }))
            await asyncio.sleep(0)  # the announcement goes out first; SGLang then posts its receives
            try:
                await asyncio.to_thread(self._broadcast, bucket)
            except BaseException:
                request.cancel()
                raise
            _check(await request, "/update_weights_from_distributed")

    async def close(self) -> None:
        if self.group is not None:
            try:
                await self.post("/destroy_weights_update_group", {"group_name": self.group_name})
            finally:
                torch.distributed.destroy_process_group(self.group)
                self.group = None


class AdapterTransport:
    """LoRA exported as adapters: each version is a peft directory under ``directory`` that SGLang loads
    (``POST /load_lora_adapter`` {lora_name, lora_path}) as ``clawgym-v{version}``; :attr:`adapter` is
    the name generation is routed to (``lora_path`` in ``/generate``) from then on, and the previous
    version is unloaded (``POST /unload_lora_adapter`` {lora_name}; SGLang lets requests still using it
    finish first) and its directory removed. The server needs ``--enable-lora`` with a max rank and the
    target modules (the builder passes them); SGLang reads the directory, so it must be on its host.
    """

    takes = "adapters"  # see served_weights

    def __init__(self, post: Post, directory: str | Path, settings: LoraSettings, base_model: str = "") -> None:
        self.post, self.directory, self.settings, self.base_model = post, Path(directory), settings, base_model
        self.adapter: str | None = None

    async def publish(self, weights: Weights, version: int) -> None:
        from clawgym.rl.trainer.lora import write_peft_adapters

        adapters = dict(named(weights))
        if not adapters or not all(".lora_A." in k or ".lora_B." in k for k in adapters):
            raise TransportError("the adapter transport sends LoRA adapters only (peft names, "
                                 "trainer.export_adapters); "
                                 f"got {len(adapters)} tensors such as {next(iter(adapters), None)!r}")
        name = f"clawgym-v{version}"
        path = self.directory / name
        await asyncio.to_thread(write_peft_adapters, path, adapters, self.settings, self.base_model)
        try:
            _check(await self.post("/load_lora_adapter",
                                   {"lora_name": name, "lora_path": str(path)}), "/load_lora_adapter")
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise
        previous, self.adapter = self.adapter, name
        if previous is not None and previous != name:
            _check(await self.post("/unload_lora_adapter", {"lora_name": previous}), "/unload_lora_adapter")
            shutil.rmtree(self.directory / previous, ignore_errors=True)


def make_transport(kind: str, policy: HFPolicy | SGLangPolicy, bucket_bytes: int = 512 << 20, sglang_ranks: int = 1,
                   master_address: str = "127.0.0.1", master_port: int | None = None,
                   device: str = "cuda", adapter_dir: str | Path | None = None, lora: LoraSettings | None = None,
                   base_model: str = "") -> WeightTransport:
    """The transport a placement plan names (``inproc`` | ``tensor`` | ``nccl`` | ``adapter``) for ``policy``
    (``device="cpu"``: the same code without a GPU, the NCCL path over gloo; ``adapter`` writes peft
    directories for the LoRA settings ``lora`` under ``adapter_dir``)."""
    if kind == "adapter":
        if adapter_dir is None or lora is None:
            raise ValueError("the adapter transport needs adapter_dir and the LoRA settings")
        return AdapterTransport(policy.post, adapter_dir, lora, base_model)
    if kind == "inproc":
        return InProcessTransport(policy)
    if kind == "tensor":
        return TensorTransport(policy.post, device=device, tp_ranks=sglang_ranks, bucket_bytes=bucket_bytes)
    if kind == "nccl":
        from clawgym.inference.sglang import free_port

        return NcclTransport(policy.post, master_address, master_port or free_port(), sglang_ranks,
                             backend="nccl" if device == "cuda" else "gloo", device=device, bucket_bytes=bucket_bytes)
    raise ValueError(f"unknown weight transport {kind!r} (inproc, tensor, nccl or adapter; "
                     "disk is the policy's own path)")
