# The two commands of the README: `make quickstart` (set up, index a repository offline, ask it)
# and `make test` (set up, lint, type-check, run the tests). Both install what they need.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
REPO ?= .
QUESTION ?= who calls build_index?

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $@

.PHONY: install quickstart test lint typecheck
install: $(BIN)/.installed

quickstart: $(BIN)/.installed
	$(BIN)/arela index $(REPO) --offline
	$(BIN)/arela ask "$(QUESTION)" --repo $(REPO) --offline

lint: $(BIN)/.installed
	$(BIN)/ruff check .

# mypy cannot follow the package-dir mapping of retrievers/ and selectors/, so it checks the
# package as a wheel would install it.
typecheck: $(BIN)/.installed
	rm -rf .typecheck && $(BIN)/python -m pip install -q --no-deps --no-build-isolation --target .typecheck . && rm -rf build
	cd .typecheck && ../$(BIN)/mypy --config-file ../pyproject.toml -p arela_index

test: lint typecheck
	$(BIN)/python -m pytest -q --durations=15
