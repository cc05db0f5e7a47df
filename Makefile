# Two commands do everything on a fresh machine (see README):
#   make audit   audit the installed vLLM 0.33.0 for the skipped-__init__ bug class
#   make test    every test: ruff + mypy --strict on the package, pytest (real vLLM on CPU, typing tests)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export VLLM_TARGET_DEVICE := cpu
VLLM_VERSION := 0.33.0

.PHONY: audit explain upstream test test-cuda bench releases clean

$(STAMP): pyproject.toml plugin/pyproject.toml setup.py $(wildcard vllm_sp_base/_audit/lexer/*) requirements/torch-cpu.txt requirements/vllm-cpu.txt requirements/vllm-tests.txt requirements/dev.txt
	@echo "make: setting up $(VENV) (once: torch CPU, vLLM $(VLLM_VERSION) without CUDA, the tools)" >&2
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) >&2
	@$(BIN)/pip install -q --disable-pip-version-check -r requirements/torch-cpu.txt >&2
# vLLM without its CUDA dependency tree; its pure-Python imports are pinned.
	@$(BIN)/pip install -q --disable-pip-version-check --no-deps vllm==$(VLLM_VERSION) >&2
	@$(BIN)/pip install -q --disable-pip-version-check --no-deps -r requirements/vllm-cpu.txt >&2
	@$(BIN)/pip install -q --disable-pip-version-check --no-deps -r requirements/vllm-tests.txt >&2
	@$(BIN)/pip install -q --disable-pip-version-check --no-deps -r requirements/dev.txt >&2
	@$(BIN)/pip install -q --disable-pip-version-check --no-deps -e . >&2
# The runtime plugin is its own distribution (plugin/): the tests load it in real vLLM processes.
	@$(BIN)/pip install -q --disable-pip-version-check --no-deps -e plugin >&2
# Bytecode for the package, which an editable install does not write: where
# PYTHONDONTWRITEBYTECODE is set, every run would compile it again (~0.09 s).
	@$(BIN)/python -m compileall -q vllm_sp_base >&2
	@touch $(STAMP) >&2

# The report and its summary; exit 0 when the audit ran, whatever it found
# (`vllm-sp-base audit` itself exits 1 on findings: that is for CI and
# pre-commit). Nothing else on stdout: `make audit ARGS="--format json"` is JSON.
audit: $(STAMP)
	@$(BIN)/vllm-sp-base audit $(ARGS); code=$$?; if [ $$code -gt 1 ]; then exit $$code; fi

explain: $(STAMP)
	$(BIN)/vllm-sp-base explain -tp 8 -dp 1 --enable-expert-parallel
	$(BIN)/vllm-sp-base explain -tp 8 -dp 4 --enable-expert-parallel

# The upstream vLLM patch, written from vLLM $(VLLM_VERSION)'s source distribution
# (tests/ and .buildkite/ included; downloaded once and cached), in out/upstream
# (git-ignored). The installed vLLM ships no tests/: the series needs them.
upstream: $(STAMP)
	$(BIN)/vllm-sp-base upstream --vllm-src "$$($(BIN)/python bench/upstream_releases.py --source $(VLLM_VERSION))" --out out/upstream $(ARGS)

test: $(STAMP)
	$(BIN)/ruff check vllm_sp_base
	$(BIN)/mypy vllm_sp_base
	$(BIN)/python -m pytest $(ARGS)

# Only the cuda-marked tests, with nothing but torch and pytest (a stock PyTorch
# image on a GPU machine): no venv, no vLLM. They skip, said, where no GPU is seen.
test-cuda:
	PYTHONPATH=. $(PYTHON) -m pytest -m cuda -p no:cacheprovider tests/cuda $(ARGS)

bench: $(STAMP)
	$(BIN)/python bench/plugin_cost.py
	$(BIN)/python bench/compile_recompiles.py
	$(BIN)/python bench/audit_speed.py
	$(BIN)/python bench/deep_chain.py

# The upstream series on vLLM 0.30.0-0.33.0 (source distributions, downloaded once and cached).
releases: $(STAMP)
	$(BIN)/python bench/upstream_releases.py $(ARGS)

clean:
	rm -rf $(VENV)
