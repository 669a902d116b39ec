"""What pyproject.toml declares agrees with the pinned requirement files the README's commands install."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.packaging.conftest import ROOT

PROJECT = "django-toolcalling"
# Pinned beside what they belong to, never imported by the app or the suite: the files pin them so that one
# resolution is tested (celery's kombu, anthropic's docstring-parser).
PINNED_FOR_OTHERS = {"kombu", "docstring-parser"}


def pinned(path: Path) -> set[str]:
    """The names a requirement file pins, the files it includes (``-r``) too."""
    names: set[str] = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if match := re.fullmatch(r"-r\s+(\S+)", line):
            names |= pinned(path.parent / match[1])
        else:
            names.add(canonicalize_name(Requirement(line).name))
    return names


def declared(extra: str, extras: dict[str, list[str]], seen: frozenset[str] = frozenset()) -> set[str]:
    """The names an extra declares, those of the project's own extras it names included."""
    names: set[str] = set()
    for text in extras[extra]:
        requirement = Requirement(text)
        if canonicalize_name(requirement.name) == PROJECT:
            for other in requirement.extras - seen:
                names |= declared(other, extras, seen | {extra})
        else:
            names.add(canonicalize_name(requirement.name))
    return names


def test_the_dev_extra_names_what_requirements_dev_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = {canonicalize_name(Requirement(text).name) for text in project["dependencies"]}
    dev = declared("dev", project["optional-dependencies"]) | runtime
    assert pinned(ROOT / "requirements/dev.txt") - PINNED_FOR_OTHERS == dev
