"""The megatron trainer's command line: ``torchrun --nproc-per-node N -m clawgym.rl.trainer.megatron_cli ...``."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

import torch

logger = logging.getLogger("clawgym.rl.trainer.megatron")


def main(argv: Sequence[str] | None = None) -> int:
    """Train on a JSONL of Samples; exports HF weights (rank 0) and a dist checkpoint at the end."""
    from clawgym.rl.trainer.megatron import MegatronConfig, MegatronTrainer
    from clawgym.rl.trainer.torch_trainer import LoraSettings, TrainerConfig
    from clawgym.rl.types import Sample, read_jsonl

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--hf-model", required=True, help="HF checkpoint directory (Llama / Qwen2 family)")
    parser.add_argument("--samples", required=True, help="JSONL of clawgym Sample records")
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--pp", type=int, default=1)
    parser.add_argument("--method", default="grpo", choices=["grpo", "binary", "opd", "hybrid"])
    parser.add_argument("--advantage", default="grpo", choices=["grpo", "raw"])
    parser.add_argument("--lr", type=float, default=1e-6)
    parser.add_argument("--kl-coef", type=float, default=0.0)
    parser.add_argument("--micro-batch-size", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16, help="samples per optimiser step (all DP ranks)")
    parser.add_argument("--te", action="store_true", help="use the Transformer Engine layer spec")
    parser.add_argument("--lora-r", type=int, default=0, help="train LoRA adapters of this rank (0: full weights)")
    parser.add_argument("--lora-alpha", type=int, default=32)
    parser.add_argument("--adapters", default=None,
                        help="with --lora-r: write the trained adapters (peft format) here, rank 0")
    parser.add_argument("--save", default=None, help="dist checkpoint directory")
    parser.add_argument("--export", default=None, help="write the trained HF weights (safetensors) here, rank 0")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.hf_model)
    trainer_cfg = TrainerConfig(method=args.method, advantage=args.advantage, lr=args.lr, kl_coef=args.kl_coef,
                                micro_batch_size=args.micro_batch_size,
                                lora=LoraSettings(r=args.lora_r, alpha=args.lora_alpha) if args.lora_r else None)
    trainer = MegatronTrainer(args.hf_model, tokenizer, MegatronConfig(tensor_parallel=args.tp,
                                                                       pipeline_parallel=args.pp,
                                                                       transformer_engine=args.te, trainer=trainer_cfg))
    samples = [s for s in read_jsonl(args.samples, Sample)]
    for start in range(0, len(samples), args.batch_size):
        metrics = trainer.train_step(samples[start : start + args.batch_size])
        if torch.distributed.get_rank() == 0:
            logger.info("step %d: %s", trainer.step, metrics)
    if args.save:
        trainer.save_checkpoint(args.save)
    if args.adapters and trainer.lora is not None:
        trainer.save_adapters(args.adapters, base_model=args.hf_model)
    weights = trainer.export_weights()  # LoRA: merged into the base weights
    if weights is not None and args.export:
        from safetensors.torch import save_file

        Path(args.export).mkdir(parents=True, exist_ok=True)
        save_file({k: v.contiguous() for k, v in weights.items()
                   if k != "lm_head.weight" or not trainer.shape.tie_embeddings},
                  str(Path(args.export) / "model.safetensors"))
        trainer.hf_config.save_pretrained(args.export)  # a loadable HF checkpoint directory
        tokenizer.save_pretrained(args.export)
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
