# Two entry points: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
REFPEER := $(abspath ../shared/tools/refpeer)
ifneq ($(wildcard $(REFPEER)),)
FGRAPH_PEER ?= $(REFPEER)
export FGRAPH_PEER
endif

.PHONY: demo test venv bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	@bash docs/demo.sh $(BIN)/fgraph

test: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/transact.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
