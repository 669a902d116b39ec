"""The Korean and German catalogs are complete and current: every string of the app's source is in them, every
one is translated (no fuzzy or empty entries, the same placeholders), and the compiled ``.mo`` files say what the
``.po`` files say. So a string added without a translation, or a translation not compiled, fails here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import polib
import pytest
from django.utils import translation

from tests.i18n.catalog import LANGUAGES, LOCALE, PLACEHOLDER, catalog, po_path
from tests.services import unavailable

APP = LOCALE.parent


def entries(source: polib._BaseFile) -> dict[tuple[str | None, str], str | tuple[str, ...]]:
    """``(context, msgid) -> translation`` (plural forms as a tuple) of a .po or .mo file."""
    found: dict[tuple[str | None, str], str | tuple[str, ...]] = {}
    for entry in source:
        if entry.obsolete:
            continue
        if entry.msgid_plural:
            found[(entry.msgctxt, entry.msgid)] = tuple(entry.msgstr_plural[i] for i in sorted(entry.msgstr_plural))
        else:
            found[(entry.msgctxt, entry.msgid)] = entry.msgstr
    return found


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_string_is_translated_with_its_placeholders(language):
    po = catalog(language)
    assert not po.metadata_is_fuzzy
    assert po.metadata["Language"] == language
    forms = int(po.metadata["Plural-Forms"].split("nplurals=")[1].split(";")[0])
    problems = []
    for entry in po:
        name = repr(entry.msgid)
        if entry.obsolete or entry.fuzzy:
            problems.append(f"{name} is {'obsolete' if entry.obsolete else 'fuzzy'}")
        translations = list(entry.msgstr_plural.values()) if entry.msgid_plural else [entry.msgstr]
        if entry.msgid_plural and len(translations) != forms:
            problems.append(f"{name} has {len(translations)} plural forms, not {forms}")
        for text in translations:
            if not text.strip():
                problems.append(f"{name} is not translated")
            elif set(PLACEHOLDER.findall(text)) != set(PLACEHOLDER.findall(entry.msgid)):
                problems.append(f"{name} has other placeholders in its translation {text!r}")
    assert len(po) > 250  # the whole app's strings, not an empty catalog
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_compiled_catalogs_say_what_the_po_files_say(language):
    po = po_path(language)
    mo = polib.mofile(str(po.with_suffix(".mo")))
    assert entries(mo) == entries(polib.pofile(str(po))), "compile: cd toolcalling && django-admin compilemessages"


@pytest.mark.parametrize(("language", "english", "translated"), [("ko", "Send", "보내기"), ("de", "Send", "Senden")])
def test_django_finds_the_apps_catalogs(language, english, translated):
    with translation.override(language):
        assert translation.pgettext("toolcalling chat", english) == translated


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_short_string_has_the_apps_own_context(language):
    """A word or three ("Approve", "History", "created at") is what other apps translate too, and Django lets the
    app listed first win: only a context of the app's own keeps such a string ours."""
    short = [entry for entry in catalog(language) if len(entry.msgid.split()) <= 3]
    bare = [entry.msgid for entry in short if not (entry.msgctxt or "").startswith("toolcalling")]
    assert len(short) > 150  # the column headers, buttons and statuses are all there
    assert not bare, f"give these a context starting with 'toolcalling' (pgettext, translate ... context): {bare}"


def test_the_catalogs_hold_every_string_of_the_source(tmp_path: Path):
    """``makemessages`` over a copy of the app finds no string the committed catalogs lack, and none they hold
    that the source no longer has."""
    if shutil.which("xgettext") is None or shutil.which("msgmerge") is None:
        unavailable("GNU gettext is not installed (apt-get install -y gettext)")
    copy = tmp_path / "toolcalling"
    shutil.copytree(APP, copy, ignore=shutil.ignore_patterns("__pycache__", "*.mo"))
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    command = [sys.executable, "-m", "django", "makemessages", "--add-location", "file", "--no-obsolete"]
    command += [f"--locale={language}" for language in LANGUAGES]
    subprocess.run(command, cwd=copy, env=env, check=True, capture_output=True, timeout=120)
    for language in LANGUAGES:
        fresh = entries(polib.pofile(str(copy / "locale" / language / "LC_MESSAGES" / "django.po")))
        committed = entries(catalog(language))
        missing = sorted(map(repr, set(fresh) - set(committed)))
        gone = sorted(map(repr, set(committed) - set(fresh)))
        hint = "run makemessages and translate (docs/guides/languages.md)"
        assert not missing and not gone, f"{language}: {hint}; new: {missing}, no longer used: {gone}"
