"""The documentation site builds strictly (no broken link or anchor, no page left out of the nav), and its
reference pages name every error code, system check and setting the code has."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from toolcalling import exceptions
from toolcalling.conf import DEFAULTS
from toolcalling.web import HTTP_STATUS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_mkdocs_builds_the_site_strictly(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    settings_page = (tmp_path / "site/reference/settings/index.html").read_text()
    assert all(f"<code>{key}</code>" in settings_page for key in DEFAULTS), "the hook's table has every setting"
    api_page = (tmp_path / "site/reference/api/index.html").read_text()
    assert 'id="toolcalling.ToolContext"' in api_page and 'id="toolcalling.Assistant"' in api_page
    assert all(f'id="toolcalling.testing.{name}"' in api_page for name in ("Responder", "Reply", "ToolCall"))


def api_error_codes() -> dict[str, int]:
    """Every code an error body can carry, from the classes in toolcalling/exceptions.py, with its HTTP status from
    the one table of them; every class's code has its row there."""
    classes = [c for c in vars(exceptions).values() if isinstance(c, type) and issubclass(c, exceptions.APIError)]
    assert [c.default_code for c in classes if c.default_code not in HTTP_STATUS] == []
    # APIError's and TurnError's own codes are bases' defaults: every error raised is a subclass with its own.
    return {
        c.default_code: HTTP_STATUS[c.default_code]
        for c in classes
        if c not in (exceptions.APIError, exceptions.TurnError)
    }


def test_the_errors_page_lists_every_code_with_its_status():
    rows = dict(re.findall(r"^\| `(\w+)` \| (\d{3}) \|", (DOCS / "reference/errors.md").read_text(), re.M))
    codes = api_error_codes()
    assert len(codes) > 15
    assert {code: str(status) for code, status in codes.items()} == {code: rows.get(code) for code in codes}


def test_the_checks_page_lists_every_check_id():
    source = "".join(p.read_text() for p in (ROOT / "toolcalling").glob("*checks.py"))
    ids = set(re.findall(r'id="(toolcalling\.[EW]\d{3})"', source))
    assert len(ids) > 10
    documented = set(re.findall(r"^\| `(toolcalling\.[EW]\d{3})` \|", (DOCS / "reference/checks.md").read_text(), re.M))
    assert ids == documented


def test_the_readme_is_short_and_its_links_lead_to_pages_that_exist():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 180
    links = re.findall(r"\]\(((?!https?:)[^)#]+)(?:#[^)]*)?\)", readme)
    assert "docs/tutorial.md" in links and "docs/existing-project.md" in links
    missing = [link for link in links if not (ROOT / link).is_file()]
    assert not missing
