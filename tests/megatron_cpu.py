"""Test-only stand-ins that let megatron-core's trainer code run on CPU over gloo (imported by the
subprocess scripts of tests/test_megatron_*.py; never by clawgym itself).

megatron-core 0.16.1 hard-codes CUDA in a few spots the CPU tests reach: ``torch.cuda.current_device()``
as a device (RoPE, p2p receive buffers, loss reductions), ``.cuda()`` and ``device="cuda"`` factories in
the DDP/optimizer code, ``Tensor.type()`` checks for ``torch.cuda.*Tensor``, and the CUDA RNG tracker
around (p=0) attention dropout. Install these only after any HF model has been loaded.

:func:`allow_float64` (the parity runs) lets megatron-core and the HF model compute in fp64 throughout,
which neither offers, so that fp32 summation order cannot hide a gap. megatron-core admits only
fp32/fp16/bf16 parameters, by their CUDA type strings (the fp32 branch of the distributed optimizer,
clip-grad's assert); the code behind those gates works on the tensors as they are (views, ``copy_``,
AdamW in the param's dtype), so a DoubleTensor reports itself as ``torch.cuda.FloatTensor``. Three
upcasts meant for bf16 are downcasts for fp64 and keep fp64 instead (same algorithm; other dtypes go
the original way): megatron's vocab-parallel cross entropy (``.float()`` on the logits), its grad norm
without apex (``local_multi_tensor_l2_norm`` returns an fp32 norm, hence the clip coefficient), and
transformers' Qwen2RMSNorm (computes in fp32).
"""

import contextlib
import os
import sys

import torch


def redirect_cuda_to_cpu() -> None:
    torch.cuda.current_device = lambda: "cpu"

    def cpu_factory(factory):
        def make_tensor(*args, **kwargs):
            if str(kwargs.get("device", "")).startswith("cuda"):
                kwargs["device"] = "cpu"
            return factory(*args, **kwargs)
        return make_tensor

    for name in ("tensor", "zeros", "ones", "empty", "full"):
        setattr(torch, name, cpu_factory(getattr(torch, name)))
    torch.Tensor.cuda = lambda self, *a, **k: self
    real_type = torch.Tensor.type

    def cuda_type(self, *args, **kwargs):
        if args or kwargs:
            return real_type(self, *args, **kwargs)
        return real_type(self).replace("torch.", "torch.cuda.", 1)

    torch.Tensor.type = cuda_type


def allow_float64() -> None:
    """fp64 through megatron-core's fp32 paths (see the module docstring); after :func:`redirect_cuda_to_cpu`."""
    from megatron.core.tensor_parallel.cross_entropy import VocabParallelCrossEntropy

    cuda_type = torch.Tensor.type

    def fp64_as_fp32(self, *args, **kwargs):
        name = cuda_type(self, *args, **kwargs)
        return name.replace("cuda.DoubleTensor", "cuda.FloatTensor") if isinstance(name, str) else name

    torch.Tensor.type = fp64_as_fp32

    def logits_max(logits: torch.Tensor):
        logits = logits if logits.dtype == torch.float64 else logits.float()
        return logits, torch.max(logits, dim=-1)[0]

    VocabParallelCrossEntropy.calculate_logits_max = staticmethod(logits_max)

    from megatron.core.optimizer import clip_grads

    fp32_norm = clip_grads.l2_norm_impl

    def l2_norm(chunk_size, flag, tensor_lists, *args):
        if any(t.dtype != torch.float64 for t in tensor_lists[0]):
            return fp32_norm(chunk_size, flag, tensor_lists, *args)
        return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(t) for t in tensor_lists[0]]))[None], None

    clip_grads.l2_norm_impl = l2_norm

    from transformers.models.qwen2.modeling_qwen2 import Qwen2RMSNorm

    Qwen2RMSNorm.forward = float64_rms_norm(Qwen2RMSNorm.forward)


def float64_rms_norm(upcasting_norm):
    """Qwen2RMSNorm's forward that keeps fp64 in fp64 (transformers computes the norm in fp32, a downcast
    for fp64); other dtypes go the original way. Also used by tests/test_gpu_torch.py's CPU-vs-GPU parity."""

    def rms_norm(self, hidden: torch.Tensor) -> torch.Tensor:
        if hidden.dtype != torch.float64:
            return upcasting_norm(self, hidden)
        return self.weight * (hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))

    return rms_norm


def init_gloo(tp: int, pp: int) -> None:
    from megatron.core import parallel_state, tensor_parallel

    torch.distributed.init_process_group("gloo")
    parallel_state.initialize_model_parallel(tp, pp)
    tensor_parallel.get_cuda_rng_tracker().fork = lambda *a, **k: contextlib.nullcontext()


def finish() -> None:
    """Leave the process group and exit at once, the result already printed.

    Interpreter teardown after gloo and megatron-core's threads sometimes aborts with "terminate called
    without an active exception" after a correct run; exiting here makes the return code the script's own.
    """
    torch.distributed.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def parity_batch(ref, tokenizer, context) -> list:
    """The three hybrid samples both parity scripts train on: old logprobs are the torch policy's,
    nudged so the PPO ratio is not exactly 1; two of them carry a hint for the OPD term."""
    from clawgym.rl.trainer.torch_trainer import _collate, gather_logprobs, render_prompt_ids, response_logits
    from clawgym.rl.types import Sample

    prompt = render_prompt_ids(tokenizer, context)

    def make(text, reward, hint):
        response = tokenizer(text, add_special_tokens=False)["input_ids"]
        batch = _collate([prompt], [response], ref.pad_id, ref.device)
        with torch.no_grad():
            old = [x - 0.05 for x in gather_logprobs(response_logits(ref.model, batch), batch.targets)[0].tolist()]
        return Sample(prompt_ids=prompt, response_ids=response, old_logprobs=old, reward=reward, group_id="g",
                      hint=hint, hint_messages=context if hint else None)

    return [make("Hello there!", 1.0, "Be warm."), make("No.", -1.0, None),
            make("Hi, how can I help you today?", 0.5, "Offer help.")]
