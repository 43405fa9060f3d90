# The two quick-start commands:  `make run`  and  `make test`.
# Both create .venv in the repo and install lagnet into it; re-running is a no-op when pyproject.toml is unchanged.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run test test-profile lint docs format fuzz attack-table bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

# The main job: train + evaluate the default config (the PINODE paper's cart-pole) on the shipped data.
# A re-run replaces the previous run in RUN_DIR (--overwrite: lagnet train refuses an existing run without it).
DEFAULT_CONFIG ?= configs/cartpole_pinode.yaml
RUN_DIR ?= runs/cartpole_pinode
run: $(STAMP)
	$(BIN)/lagnet train $(DEFAULT_CONFIG) --out $(RUN_DIR) --overwrite
	$(BIN)/lagnet evaluate $(RUN_DIR)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The documentation site (mkdocs-material + mkdocstrings) into site/; --strict makes a broken link, a missing
# include or a docstring mkdocstrings cannot read an error. The reference pages are generated from the code.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The whole suite on TEST_WORKERS processes (pytest-xdist), each test file on one of them, so that a file's
# shared fixtures (trained runs, compiled programs) are built once, the longest files first
# (tests/file_order.json, written by `tools/test_profile.py --write-order`).  `make test TEST_WORKERS=0` runs it
# in this process alone.
TEST_WORKERS ?= 2
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
test: lint docs
	$(BIN)/python -m pytest $(PYTEST_PARALLEL)

# The suite's duration profile: the slowest tests and each file's total, with the time JAX spent compiling.
test-profile: $(STAMP)
	$(BIN)/python tools/test_profile.py $(PYTEST_PARALLEL)

# Opt-in, not part of `make test`: the bad-input property tests (configs, data files, user-system configs, robot
# files, export archives) with new random examples (ten times as many,
# not derandomised; tests/conftest.py's `explore` profile). A failure prints the example and a reproduce blob.
fuzz: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider -q --hypothesis-profile=explore --hypothesis-show-statistics \
		tests/test_bad_input.py tests/test_bad_input_data.py tests/test_file_bounds.py \
		tests/test_trust.py::test_user_system_configs_run_nothing_untrusted \
		tests/test_trust.py::test_damaged_robot_files_give_config_errors \
		tests/test_export.py::test_damaged_archives_raise_lagnet_errors

# The adversarial tests (`pytest -m attack`), counted per surface into benchmarks/results/attack_table.md: cases,
# tests, and the failed cases by what they guard (tracebacks, unclear errors, silent wrong results, losses,
# hangs), all 0 when green.
attack-table: $(STAMP)
	$(BIN)/python tools/attack_table.py

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) runs site .pytest_cache .ruff_cache
