#!/usr/bin/env bash
# The megatron trainer against the torch trainer on one GPU (issue 34): tokens/s, TFLOP/s, MFU and peak
# memory of benchmarks/trainer_throughput.py on the qwen2.5-coder-0.5b and -1.5b shapes with random weights
# (no checkpoint or network needed), bf16, full and LoRA, batch 16 x (1024 prompt + 512 response) tokens,
# micro-batch 4. Run it from the repository root on a GPU machine that has torch and transformers;
# megatron-core and clawgym's other missing dependencies come from the wheels in .whl/ (installed to
# /tmp/site; SKIP_INSTALL=1 skips that):
#
#     bash scripts/gpu_throughput.sh [OUT_DIR]        # OUT_DIR default: $OUT, else runs/gpu_throughput
#
# One process a row, most important first (0.5B full torch, 0.5B full megatron, 1.5B full, then LoRA), each
# under `timeout`, all within BUDGET_S seconds (default 240); rows the budget cannot reach say so. Each row
# prints its table line when done and leaves OUT_DIR/rows/NN.json (its log in NN.log); at the end
# OUT_DIR/throughput.json holds every row and OUT_DIR/throughput.md the table.
# Knobs: MODELS, MODES, TRAINERS, DEVICES (cuda), STEPS (3), ROW_TIMEOUT_S (120), PYTHON (python3),
# BENCH_ARGS (extra flags, e.g. "--batch 2 --prompt-len 16" for a dry run on a CPU with DEVICES=cpu).
set -uo pipefail
out=${1:-${OUT:-runs/gpu_throughput}}
python=${PYTHON:-python3}
models=${MODELS:-qwen2.5-coder-0.5b qwen2.5-coder-1.5b}
modes=${MODES:-full lora}
trainers=${TRAINERS:-torch megatron}
devices=${DEVICES:-cuda}
steps=${STEPS:-3}
budget=${BUDGET_S:-240}
row_timeout=${ROW_TIMEOUT_S:-120}
mkdir -p "$out/rows"
rm -f "$out"/rows/*.json
if [ -z "${SKIP_INSTALL:-}" ]; then
    if ! $python -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl; then
        echo "warning: pip could not install .whl/*.whl; unpacking them into /tmp/site instead (a wheel is a zip)"
        for wheel in .whl/*.whl; do $python -m zipfile -e "$wheel" /tmp/site || echo "warning: could not unpack $wheel"; done
    fi
    export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
{
    nvidia-smi -L 2>/dev/null || echo "nvidia-smi: not found"
    $python - <<'EOF'
import importlib.metadata as md, platform, torch
versions = []
for name in ("torch", "transformers", "peft", "megatron-core", "pydantic", "gymnasium"):
    try:
        versions.append(f"{name} {md.version(name)}")
    except md.PackageNotFoundError:
        versions.append(f"{name} missing")
gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA GPU"
print(f"python {platform.python_version()} | " + " | ".join(versions) + f" | {gpu}")
EOF
} 2>&1 | tee "$out/device.txt"

n=0
for mode in $modes; do
    for model in $models; do
        for trainer in $trainers; do
            n=$((n + 1))
            tag=$(printf '%02d' "$n")
            left=$((budget - SECONDS))
            limit=$((left < row_timeout ? left : row_timeout))
            row=(--models "shape:$model" --modes "$mode" --trainers "$trainer" --devices $devices)
            if [ "$left" -lt 20 ]; then
                status="not run: the ${budget} s budget was spent"
            else
                # shellcheck disable=SC2086  # BENCH_ARGS and devices are word lists
                timeout -k 10 "$limit" $python benchmarks/trainer_throughput.py "${row[@]}" --steps "$steps" \
                    --json "$out/rows/$tag.json" ${BENCH_ARGS:-} >"$out/rows/$tag.md" 2>"$out/rows/$tag.log"
                rc=$?
                status=""
                if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
                    status="timed out after ${limit} s (log rows/$tag.log)"
                elif [ ! -s "$out/rows/$tag.json" ]; then
                    status="exit $rc before a row was written (log rows/$tag.log)"
                fi
            fi
            if [ -n "$status" ] && [ ! -s "$out/rows/$tag.json" ]; then  # the row's own JSON exists only once it ran
                printf '[{"model": "shape:%s", "trainer": "%s", "mode": "%s", "device": "%s", "status": "%s"}]\n' \
                    "$model" "$trainer" "$mode" "$devices" "$status" >"$out/rows/$tag.json"
            fi
            grep -h '^| shape:' "$out/rows/$tag.log" 2>/dev/null | tail -n 1 || true
            [ -n "$status" ] && echo "| shape:$model | $trainer | $mode | $devices | $status |"
            if ! grep -Eq '"status": "(ok|skipped)' "$out/rows/$tag.json"; then  # why it failed, from its log
                tail -n 6 "$out/rows/$tag.log" 2>/dev/null | cut -c 1-300 | sed 's/^/    /'
            fi
            echo "[$tag done at ${SECONDS} s]"
        done
    done
done

$python -c 'import json, sys; json.dump([r for p in sys.argv[2:] for r in json.load(open(p))], open(sys.argv[1], "w"), indent=2)' \
    "$out/throughput.json" "$out"/rows/*.json
$python benchmarks/trainer_throughput.py --render "$out"/rows/*.json --steps "$steps" | tee "$out/throughput.md"
echo "total ${SECONDS} s"
