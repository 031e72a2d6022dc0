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

.PHONY: demo test torture venv bench clean

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

# The torture suite at full size (issue 15): kill -9, faults below SQLite, full disks, concurrency,
# hostile input and paths; `make test` runs the same families at a bounded size. Figures:
# docs/reliability.md. FGRAPH_QUERIES sizes the cross-runtime restore mutations (5000 -> 1000 inputs).
torture: $(STAMP)
	FGRAPH_TORTURE=full FGRAPH_QUERIES=5000 $(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/torture tests/test_hostile.py tests/test_interop_restore_mutations.py

bench: $(STAMP)
	$(BIN)/python benchmarks/transact.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
