"""Fixtures of the eval tests: the demo shop's data and a dataset file written from YAML text.

pydantic-evals runs each case on a worker thread, which sees only committed data: these tests use
``transactional_db``."""

import textwrap

import pytest
from django.core.management import call_command

# The fixture a site gets from the pytest11 entry point, named here too so the suite does not depend on how the
# package was installed.
from toolcalling.testing.pytest_plugin import toolcalling_replay  # noqa: F401


@pytest.fixture
def shop(transactional_db):
    call_command("demo_setup", verbosity=0, stdout=open("/dev/null", "w"))


@pytest.fixture
def dataset_file(tmp_path):
    def write(text: str, name: str = "cases.yaml"):
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return str(path)

    return write
