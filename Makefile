# The two commands of the README: `make quickstart` (set up, index a repository offline, ask it)
# and `make test` (set up, lint, type-check, run the tests). Both install what they need.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
REPO ?= .
QUESTION ?= who calls build_index?

# A strict editable install (setuptools' link tree, PEP 660): type checkers read it as they read a
# wheel (retrievers/ and selectors/ inside arela_index), which the default install, an import hook,
# hides from them. A module added or removed changes its folder, which installs again.
PACKAGE_DIRS := $(shell find arela_index retrievers selectors -type d -not -name __pycache__)

$(BIN)/.installed: pyproject.toml setup.py $(PACKAGE_DIRS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]" --config-settings editable_mode=strict
	touch $@

.PHONY: install quickstart test lint typecheck
install: $(BIN)/.installed

quickstart: $(BIN)/.installed
	$(BIN)/arela index $(REPO) --offline
	$(BIN)/arela ask "$(QUESTION)" --repo $(REPO) --offline

lint: $(BIN)/.installed
	$(BIN)/ruff check .

# mypy checks the package as a wheel installs it (retrievers/ and selectors/ inside arela_index);
# the build leaves build/lib behind, beside the editable install's link tree in build/.
typecheck: $(BIN)/.installed
	rm -rf .typecheck && $(BIN)/python -m pip install -q --no-deps --no-build-isolation --target .typecheck . && rm -rf build/lib build/bdist.*
	cd .typecheck && ../$(BIN)/mypy --config-file ../pyproject.toml -p arela_index

test: lint typecheck
	$(BIN)/python -m pytest -q --durations=15
