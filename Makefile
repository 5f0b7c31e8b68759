# siltwatch — the two commands of the README's quick start, and their helpers.
#   make demo   run siltwatch on its embedded defaults, then serve the web console until Ctrl-C
#               (on 127.0.0.1:$(PORT), 8080 unless PORT= says otherwise)
#   make test   ruff, mypy, pytest
# Both create .venv at the repo root and install siltwatch with all its extras first
# (edge: the Pi's hardware drivers, server: the service's heavy parts, dev: the tools).

PYTHON ?= python3
# make demo's console port: PORT=8081 make demo when 8080 is taken (checked before the run)
PORT ?= 8080
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest bench clean

# The checkout itself goes on the venv's sys.path (a .pth file), as `import app` and
# `python -m app.cli` expect: the install maps the folders under _siltwatch/ (setup.py).
$(STAMP): pyproject.toml setup.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[edge,server,dev]'
	$(BIN)/python -c 'import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "siltwatch-checkout.pth").write_text(str(pathlib.Path.cwd()) + "\n")'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/siltwatch demo --web 127.0.0.1:$(PORT)

test: lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python -m benchmarks.replay
	$(BIN)/python -m benchmarks.edge
	$(BIN)/python -m benchmarks.ingest
	$(BIN)/python -m benchmarks.plots
	$(BIN)/python -m benchmarks.wire_payloads

clean:
	rm -rf $(VENV) out .mypy_cache .ruff_cache .pytest_cache .hypothesis
