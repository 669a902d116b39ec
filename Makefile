# Development tasks. `make demo` runs the demo shop; `make test` runs the test suite, `make test-matrix` all of it
# on every database (for a release).

VENV ?= .venv
PY = $(VENV)/bin/python
# The interpreter of the project's virtualenv (Python 3.11 or later; PYTHON=python3.12 picks another).
PYTHON ?= python3
# The interpreters of make test's passes: the full pass on Python 3.13 with the newest Django and DRF ($(VENV313),
# below), the database passes (PostgreSQL, MariaDB) on the project's virtualenv: Python 3.11 with Django 5.2 LTS.
# `make test PY_FULL=/path/to/other/venv/bin/python` runs the full pass elsewhere.
PY_FULL ?= $(PY313)
PY_DB ?= $(PY)

.PHONY: setup setup313 system-packages demo react-example eval test test-sqlite test-postgresql test-mariadb test-matrix lint docs mutation

# Reinstall only when the requirements or the package metadata change.
$(VENV)/.installed: requirements/dev.txt requirements/base.txt requirements/anthropic.txt requirements/docs.txt requirements/frontends.txt requirements/tasks.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements/dev.txt -r requirements/docs.txt -e .
	touch $@

setup: $(VENV)/.installed

# The second line the suite runs on: Python 3.13 with the newest Django and DRF (requirements/base.txt pins Django by
# interpreter: 5.2 LTS on 3.11, 6.1 on 3.12 and later). pyenv's 3.13 unless PYTHON313 names another interpreter.
PYTHON313 ?= $(shell pyenv root 2>/dev/null || echo $$HOME/.pyenv)/versions/3.13.0/bin/python
VENV313 ?= .venv313
PY313 = $(VENV313)/bin/python
$(VENV313)/.installed: requirements/dev.txt requirements/base.txt requirements/anthropic.txt requirements/docs.txt requirements/frontends.txt requirements/evals.txt requirements/tasks.txt requirements/mysql.txt pyproject.toml | system-packages
	$(PYTHON313) -m venv $(VENV313)
	$(PY313) -m pip install --quiet --upgrade pip
	$(PY313) -m pip install --quiet -r requirements/dev.txt -r requirements/docs.txt -r requirements/mysql.txt -e .
	touch $@

setup313: $(VENV313)/.installed

# Without REDIS_URL approved tool calls run in the web process (eager Celery); with it a worker runs them,
# and the trap stops that worker when the server exits. The demo's passwords are public, so it listens on
# 127.0.0.1 unless HOST says otherwise (e.g. HOST=0.0.0.0 inside a container).
demo: setup react-example
	$(PY) manage.py migrate --noinput
	$(PY) manage.py demo_setup
	@case "$${HOST:-127.0.0.1}" in 127.0.0.1|localhost|::1) ;; \
		*) echo "Warning: the demo listens on $$HOST with well-known passwords; anyone who reaches it can sign in." >&2 ;; esac
	@if [ -n "$$REDIS_URL" ]; then \
		$(VENV)/bin/celery -A demo_site worker -l info & worker=$$!; \
		trap 'kill $$worker 2>/dev/null; wait $$worker 2>/dev/null' EXIT; \
		trap 'exit 130' INT TERM; \
		$(PY) manage.py runserver $${HOST:-127.0.0.1}:$${PORT:-8000}; \
	else \
		exec $(PY) manage.py runserver $${HOST:-127.0.0.1}:$${PORT:-8000}; \
	fi

# The React example the demo serves at /react/ (examples/ai-sdk-react), built with npm when the machine has it
# (make system-packages installs Debian's); without npm, or when the build fails, the demo serves everything else
# and /react/ says how to build it. --prefer-offline: the lock pins every package by its hash, so npm's cache serves
# what it has without asking the registry (offline, npm ci retried the registry for 3 minutes before using it).
REACT = examples/ai-sdk-react
$(REACT)/dist/index.html: $(REACT)/package-lock.json $(REACT)/index.html $(REACT)/vite.config.ts $(wildcard $(REACT)/*.tsx)
	npm ci --prefix $(REACT) --prefer-offline --no-audit --no-fund
	npm run build --prefix $(REACT)

react-example:
	@if command -v npm >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory $(REACT)/dist/index.html || echo "The React example did not build; /react/ says how." >&2; \
	else echo "npm not found: the demo runs without the React example at /react/ (make system-packages installs npm)." >&2; fi

# The demo shop's eval dataset with the offline model (no key, no network), whatever the environment says;
# each case is rolled back, so the demo data stays as it is. Reports go to var/ (HTML and JUnit XML).
eval: setup
	$(PY) manage.py migrate --noinput
	$(PY) manage.py demo_setup
	env -u OPENAI_API_KEY -u OPENAI_BASE_URL $(PY) manage.py toolcalling_eval demo_site/shop/evals/shop.yaml \
		--assistant shop --report var/eval-report.html --report var/eval-report.xml

system-packages:
	bash scripts/system-packages.sh

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy

# The documentation site, built strictly: a broken link, a missing page or a setting without its sentence fails.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir var/site

# mysqlclient compiles against the C client library that system-packages installs: only the test target needs
# it, so make setup and make demo work on a machine without those headers.
$(VENV)/.mysqlclient: requirements/mysql.txt $(VENV)/.installed | system-packages
	$(PY) -m pip install --quiet -r requirements/mysql.txt
	touch $@

# The AI SDK package the frontend tests run in node, exactly as package-lock.json pins it.
FRONTEND_JS = tests/frontends/js
$(FRONTEND_JS)/node_modules/.package-lock.json: $(FRONTEND_JS)/package-lock.json | system-packages
	npm ci --prefix $(FRONTEND_JS) --no-audit --no-fund

# What the passes need first: the set-up, the lint and the docs build, the services' packages, mysqlclient, the
# AI SDK package the frontend tests run in node, and the React example built (a build that fails stops make test
# here; tests/demo/test_react_in_chromium.py builds it again through make demo, from npm's cache).
TEST_NEEDS = setup setup313 system-packages lint docs $(VENV)/.mysqlclient $(FRONTEND_JS)/node_modules/.package-lock.json \
	$(REACT)/dist/index.html
# The passes: a database, a model API and, for the streaming and approval groups, a server. Tests marked each_api run
# on all three APIs in every pass, tests marked chat_completions (written for its bodies) on that API. The PostgreSQL
# pass runs the streaming and approval groups under ASGI (uvicorn, Django's ASGI handler), the others under WSGI.
SQLITE_PASS = TOOLCALLING_TEST_API=chat_completions
POSTGRESQL_PASS = TOOLCALLING_TEST_DATABASE=postgresql TOOLCALLING_TEST_API=responses TOOLCALLING_TEST_SERVER=asgi
MARIADB_PASS = TOOLCALLING_TEST_DATABASE=mariadb TOOLCALLING_TEST_API=anthropic

# Each test where it can fail: the whole suite once, on Python 3.13 with the newest Django and on SQLite with Chat
# Completions under WSGI; then, on Python 3.11 with Django 5.2 LTS, the tests that can depend on the database (marked database by the rules in tests/passes.py: the storage, approval, streaming,
# races, limits and integrity groups, real transactions, live servers, workers, SQL semantics, and the histories
# replayed on each API) on PostgreSQL with the Responses API under ASGI, and on MariaDB with Anthropic's. What cannot
# depend on the database (packaging, the docs build, schemathesis: marked once) runs in the full pass only. The
# passes start and stop the services they need themselves (redis-server, Celery workers, Chromium, and a private
# PostgreSQL cluster or MariaDB server), each with its own ports and files, so the three run at once: much of a
# pass waits (for a browser, a worker, a server's latency). On two cores `make test` took 27 minutes with the three
# at once (the full pass 26 of them), against 42.5 on CI one after the other. Each pass's output is printed whole
# when it ends (GNU make's --output-sync);
# `make test-sqlite`, `test-postgresql` or `test-mariadb` runs one pass alone.
test: $(TEST_NEEDS)
	$(MAKE) --no-print-directory -j3 --output-sync=target test-sqlite test-postgresql test-mariadb

test-sqlite:
	$(SQLITE_PASS) $(PY_FULL) -m pytest

test-postgresql:
	$(POSTGRESQL_PASS) $(PY_DB) -m pytest -m database

test-mariadb:
	$(MARIADB_PASS) $(PY_DB) -m pytest -m database

# For a release: the whole suite three times, once on each database and once on each model API.
test-matrix: $(TEST_NEEDS)
	$(SQLITE_PASS) $(PY_FULL) -m pytest
	$(POSTGRESQL_PASS) $(PY_DB) -m pytest
	$(MARIADB_PASS) $(PY_DB) -m pytest

# The mutation run over approval/, usage/ and engine/_calls.py (docs/mutation.md); AREAS="approval usage" picks areas.
mutation: setup
	VENV=$(VENV) bash scripts/mutation.sh $(AREAS)
