"""The browser tests' data; Playwright with Debian's Chromium (the ``browser`` fixture) is in ``tests/chromium.py``,
registered once for the whole suite by ``tests/conftest.py``."""

from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command


@pytest.fixture
def shop(transactional_db: None) -> Any:
    """The demo shop's data (customers, orders, staff), committed where the live server sees it; its customer."""
    call_command("demo_setup", verbosity=0, stdout=StringIO())
    return get_user_model().objects.get(username="alice")
