"""Test-only stand-ins that let megatron-core's trainer code run on CPU over gloo (imported by the
subprocess scripts of tests/test_megatron_*.py; never by clawgym itself).

megatron-core 0.16.1 hard-codes CUDA in a few spots the CPU tests reach: ``torch.cuda.current_device()``
as a device (RoPE, p2p receive buffers, loss reductions), ``.cuda()`` and ``device="cuda"`` factories in
the DDP/optimizer code, ``Tensor.type()`` checks for ``torch.cuda.*Tensor``, and the CUDA RNG tracker
around (p=0) attention dropout. Install these only after any HF model has been loaded.
"""

import contextlib

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
    torch.Tensor.type = lambda self, *a, **k: real_type(self, *a, **k) if a or k else real_type(self).replace("torch.", "torch.cuda.", 1)


def init_gloo(tp: int, pp: int) -> None:
    from megatron.core import parallel_state, tensor_parallel

    torch.distributed.init_process_group("gloo")
    parallel_state.initialize_model_parallel(tp, pp)
    tensor_parallel.get_cuda_rng_tracker().fork = lambda *a, **k: contextlib.nullcontext()
