# memlab — one command to set up and run each job. Everything lives in a local .venv.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PIP_FLAGS ?= --disable-pip-version-check -q
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install eval test test-fast dashboard docs bench clean

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install $(PIP_FLAGS) --upgrade pip
	$(PY) -m pip install $(PIP_FLAGS) -c constraints.txt -e '.[all,dev,pgserver,bench]'
	@touch $(STAMP)

install: $(STAMP)  ## create .venv and install memlab with every extra the jobs and tests need (PostgreSQL + pgvector, mem0 included)

eval: $(STAMP)  ## run the benchmark suite on the offline default and print the results table
	$(VENV)/bin/memlab eval suite --out runs/suite

test: $(STAMP)  ## run the whole test suite (unit, integration, notebooks)
	$(PY) -m pytest $(PYTEST_ARGS)

# PYTHONDONTWRITEBYTECODE is emptied so pytest keeps its assertion-rewritten test modules in __pycache__ (gitignored):
# with it set, every run rewrites ~200 test modules again, ~2.5 s of the loop's ~6 s collection.
# The tests' temporary folders go to the RAM-backed /dev/shm when there is one: the ~450 real SQLite databases the loop
# creates then cost ~0.3 ms each instead of ~6 ms of fsyncs on disk (make test keeps the default, on disk).
FAST_TMPDIR := $(shell test -d /dev/shm -a -w /dev/shm && echo /dev/shm)
# The tests run in FAST_WORKERS processes (pytest-xdist; --dist worksteal: a worker that runs out takes tests from the
# others). In one process about half the loop's time is tests waiting (on loopback servers, PostgreSQL) and half is CPU,
# so on 2 cores a third worker fills the waits: ~50 s with 3 workers, ~60 s with 2, ~100 s in one process (quiet
# 2-core machine). Each worker collects on its own (~4 s) and starts its own PostgreSQL server.
# FAST_WORKERS=0 runs them in this one process (needed for --pdb).
FAST_WORKERS ?= 3
test-fast: $(STAMP)  ## the one-minute inner loop: every test that loads no real model and starts no other Python process
	PYTHONDONTWRITEBYTECODE= $(if $(FAST_TMPDIR),TMPDIR=$(FAST_TMPDIR)) $(PY) -m pytest -q -m "not model and not subprocess" \
	  -n $(FAST_WORKERS) --dist worksteal $(PYTEST_ARGS)

dashboard: $(STAMP)  ## start the Streamlit demo (loopback only; see README "Dashboard")
	$(VENV)/bin/streamlit run dashboard/app.py --server.address 127.0.0.1

docs: $(STAMP)  ## serve the docs site on http://127.0.0.1:8000 (live reload; CI runs `mkdocs build --strict`)
	DISABLE_MKDOCS_2_WARNING=true NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve -a 127.0.0.1:8000

bench: $(STAMP)  ## store throughput benchmark (10k items)
	$(VENV)/bin/memlab bench store --memories 10000

clean:
	rm -rf $(VENV) runs .pytest_cache
