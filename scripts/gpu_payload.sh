#!/usr/bin/env bash
# What a GPU machine that cannot reach PyPI needs to run scripts/gpu_learning_cells.sh, made on a machine
# that can (run from the repository root after `make setup`):
#
#   .whl/              Python 3.12 x86-64 wheels of the clawgym dependencies that a CUDA image holding torch,
#                      transformers, peft, numpy, pyyaml, httpx and tqdm lacks (the chat gateway, Gymnasium,
#                      BFCL-v0's bfcl-eval data and the GGUF reader; MiniWoB and the terminal need a browser and
#                      bubblewrap as well), at the versions of this .venv; gpu_learning_cells.sh installs them
#                      (WHEELS=.whl) into /tmp/site.
#   .xfer/pNN/partNN   MODEL's joined, pinned GGUF (`clawgym models gguf`), split into parts of PART_MB
#                      MiB, one folder per part, so that each part can travel on its own where one
#                      transfer is capped. Joined again there by `PARTS=dir bash scripts/gpu_learning_cells.sh`
#                      once every partNN is in dir (`cat dir/part*`, in order).
#
#     MODEL=qwen2.5-coder-0.5b PART_MB=55 bash scripts/gpu_payload.sh
#
# Both folders are git-ignored. PYTHON_VERSION (default 3.12) is the GPU machine's Python.
set -euo pipefail
model=${MODEL:-qwen2.5-coder-0.5b}
part_mb=${PART_MB:-55}
python=${PYTHON:-.venv/bin/python}
py_version=${PYTHON_VERSION:-3.12}
deps=(fastapi starlette annotated-doc opentelemetry-api pydantic pydantic-core annotated-types typing-inspection
      typing-extensions anyio sniffio uvicorn openai httpx2 httpcore2 truststore jiter gymnasium farama-notifications
      gguf bfcl-eval)

mapfile -t pins < <("$python" -c 'import importlib.metadata as m, sys
for dist in sys.argv[1:]: print(f"{dist}=={m.version(dist)}")' "${deps[@]}")
[ "${#pins[@]}" -eq "${#deps[@]}" ] || { echo "not every dependency is installed in $python" >&2; exit 1; }
rm -rf .whl
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version "$py_version" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "${pins[@]}"
echo "wheels: $(find .whl -type f -name '*.whl' | wc -l) in .whl ($(du -sh .whl | cut -f1))"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
gguf=$scratch/$model.gguf
"$python" -m clawgym.cli models gguf "$model" "$gguf"
rm -rf .xfer
mkdir -p .xfer/split
split -b "${part_mb}M" -d -a 2 "$gguf" .xfer/split/part
rm -f "$gguf"
for part in .xfer/split/part*; do
    name=$(basename "$part")
    mkdir -p ".xfer/p${name#part}"
    mv "$part" ".xfer/p${name#part}/$name"
done
rmdir .xfer/split
echo "parts: $(ls .xfer | wc -l) of at most ${part_mb} MiB in .xfer/pNN/partNN"
