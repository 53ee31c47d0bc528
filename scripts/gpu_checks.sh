#!/usr/bin/env bash
# The checks that need a CUDA GPU, which CI does not have: the gpu-marked tests (the one-GPU torch path,
# tests/test_gpu_torch.py, and the megatron trainer under torchrun) and the torch trainer's GPU rows of
# benchmarks/trainer_throughput.py. Run it on a GPU machine where clawgym[train,gpu] is installed:
#
#     bash scripts/gpu_checks.sh [OUT_DIR]          # MODELS="tiny-random" to skip SmolLM2's throughput rows
#
# Logs go to OUT_DIR (default runs/gpu_checks); the exit status is pytest's.
set -uo pipefail
out=${1:-runs/gpu_checks}
python=${PYTHON:-python3}
mkdir -p "$out"
{ nvidia-smi -L; $python -c "import torch, transformers; print('torch', torch.__version__, '| transformers', transformers.__version__, '|', torch.cuda.get_device_name(0))"; } | tee "$out/device.txt"
PYTHONUNBUFFERED=1 $python -m pytest -m gpu -v -p no:cacheprovider tests/test_gpu_torch.py tests/test_trainer_megatron.py 2>&1 | tee "$out/pytest.log"
status=$?
# the small CPU batch of the H200 table in docs/benchmarks.md;
# scripts/gpu_throughput.sh runs a realistic batch and the megatron trainer
# shellcheck disable=SC2086  # MODELS is a list
PYTHONUNBUFFERED=1 $python benchmarks/trainer_throughput.py --devices cuda --batch 4 --micro-batch 2 --prompt-len 128 --response-len 64 --models ${MODELS:-tiny-random smollm2-135m} --json "$out/throughput.json" 2>&1 | tee "$out/throughput.md"
exit $status
