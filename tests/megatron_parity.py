"""Subprocess script for tests/test_megatron_lora.py: MegatronTrainer vs TorchTrainer on the same samples.

Run by every rank of a gloo world (RANK/WORLD_SIZE/MASTER_* in the environment, TP and PP given). For
full weights and then for LoRA (the torch trainer's peft adapters, randomised so B != 0, loaded into
megatron), two train steps run on both trainers; rank 0 prints one RESULT line with the largest
gaps in loss/KL/grad-norm, in every gradient tensor (HF/peft names), and in the exported weights.
Both trainers compute in float64 (the same fp32 checkpoint, cast), so the gaps measure the parallel code,
not fp32 summation order.
"""

import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")
import torch  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

from clawgym.inference.models import load_tokenizer  # noqa: E402
from clawgym.rl.trainer import LoraSettings, TorchTrainer, TrainerConfig  # noqa: E402
from tests.megatron_cpu import allow_float64, finish, init_gloo, parity_batch, redirect_cuda_to_cpu  # noqa: E402

hf_dir, tp, pp = sys.argv[1], int(os.environ["TP"]), int(os.environ["PP"])
modes = os.environ.get("MODES", "full,lora").split(",")
tok = load_tokenizer("tiny-random")
base_cfg = dict(method="hybrid", lr=1e-3, micro_batch_size=1, grad_accum=3, kl_coef=0.05, max_grad_norm=1.0)
lora = LoraSettings(r=4, alpha=8,
                    target_modules=("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"))
context = [{"role": "user", "content": "Say hello."}]


def torch_trainer(mode: str) -> TorchTrainer:
    cfg = TrainerConfig(**base_cfg, lora=lora if mode == "lora" else None)
    trainer = TorchTrainer(AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float64), tok, cfg)
    if mode == "lora":  # peft starts B at 0, which hides A's grads and the adapters' sharding: randomise both
        generator = torch.Generator().manual_seed(7)
        with torch.no_grad():
            for name, param in trainer.model.named_parameters():
                if "lora_" in name:
                    param.copy_(torch.randn(param.shape, generator=generator) * 0.2)
    return trainer


def make_batch(ref: TorchTrainer) -> list:
    return parity_batch(ref, tok, context)


refs = {mode: torch_trainer(mode) for mode in modes}  # HF models load before the CUDA stand-ins go in
batches = {mode: [make_batch(refs[mode]) for _ in range(2)] for mode in modes}
redirect_cuda_to_cpu()
allow_float64()
init_gloo(tp, pp)
from clawgym.rl.trainer import megatron as M  # noqa: E402

result = {"tp": tp, "pp": pp}
for mode in modes:
    ref = refs[mode]
    cfg = M.MegatronConfig(tensor_parallel=tp, pipeline_parallel=pp, bf16=False, float64=True, device="cpu",
                           use_distributed_optimizer=False,
                           trainer=TrainerConfig(**base_cfg, lora=lora if mode == "lora" else None))
    mg = M.MegatronTrainer(hf_dir, tok, cfg)
    mg.export_dtype = torch.float64  # the weight gap in full precision too
    if mode == "lora":
        mg.load_adapters({n: p.detach() for n, p in ref.model.named_parameters() if "lora_" in n})
    gaps = {"loss": 0.0, "kl": 0.0, "clip_frac": 0.0, "grad_norm": 0.0, "grad": 0.0}
    worst, n_grads, kl = "", 0, 0.0
    for samples in batches[mode]:
        ours, theirs = mg.train_step(samples), ref.train_step(samples)
        grads = mg.export_grads()
        if torch.distributed.get_rank() == 0:
            for key in ("loss", "kl", "clip_frac", "grad_norm"):
                gaps[key] = max(gaps[key], abs(ours[key] - theirs[key]))
            kl = theirs["kl"]
            want = {n.replace(".default", ""): p.grad for n, p in ref.model.named_parameters() if p.requires_grad}
            assert set(want) <= set(grads), sorted(set(want) - set(grads))[:5]
            assert all(grads[n].shape == g.shape for n, g in want.items())
            n_grads = len(want)
            for name, grad in want.items():
                gap = (grads[name] - grad).abs().max().item()
                if gap > gaps["grad"]:
                    gaps["grad"], worst = gap, name
    exported = mg.export_weights()
    adapters = mg.export_adapters() if mode == "lora" else None
    if mode == "lora":  # collective: every rank takes part, rank 0 writes the peft directory
        mg.save_adapters(os.path.join(sys.argv[2], "adapters"), base_model=hf_dir)
    if torch.distributed.get_rank() == 0:
        reference = ref.export_weights()
        row = {"gaps": gaps, "worst_grad": worst, "n_grads": n_grads, "kl": kl,
               "same_keys": set(reference) <= set(exported),
               "dtypes": sorted(
                   {str(p.dtype) for p in [*ref.model.parameters(), *mg.model.module.parameters(), *grads.values()]}),
               "weight_gap": max((exported[k] - reference[k]).abs().max().item() for k in reference),
               "grad_scale": max(p.grad.abs().max().item() for p in ref.model.parameters() if p.requires_grad)}
        if adapters is not None:
            theirs = {n.replace(".default", ""): p.detach() for n, p in ref.model.named_parameters() if "lora_" in n}
            row["adapters_same_keys"] = set(adapters) == set(theirs)
            row["adapter_gap"] = max((adapters[k] - theirs[k]).abs().max().item() for k in theirs)
            frozen = {k for k, v in exported.items() if k in reference and "proj" not in k}
            row["frozen_untouched"] = all(torch.equal(exported[k], reference[k]) for k in frozen)
            from peft import PeftModel  # the saved directory loads in peft and merges to megatron's merged export

            base = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32)
            original = {k: v.clone() for k, v in base.state_dict().items()}
            merged = PeftModel.from_pretrained(base,
                                               os.path.join(sys.argv[2], "adapters")).merge_and_unload().state_dict()
            row["peft_reload_gap"] = max((merged[k] - exported[k]).abs().max().item() for k in merged if k in exported)
            row["adapter_delta"] = max((merged[k] - original[k]).abs().max().item() for k in merged if k in original)
        result[mode] = row
if torch.distributed.get_rank() == 0:
    print("RESULT " + json.dumps(result))
finish()
