"""The app's catalogs, read with polib, and the search of a rendered page for the app's English sentences.

The English strings are the catalog's own msgids, so a sentence added to the app (and to the catalog) is
searched for without anyone listing it here. Strings a language writes the same way ("Status", "%(tool)s:
%(status)s") are left out: finding them proves nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from html.parser import HTMLParser
from pathlib import Path

import django.contrib.admin
import polib

import toolcalling

LOCALE = Path(toolcalling.__file__).parent / "locale"
LANGUAGES = ("ko", "de")
# %(name)s, %(count)d, %(app)r and {max_length}: filled in when shown.
PLACEHOLDER = re.compile(r"%\(\w+\)[sdr]|\{\w*\}")
# Attributes whose text people read or hear (chat.js shows the data-* ones on the Send button).
SHOWN_ATTRIBUTES = {"aria-label", "title", "placeholder", "alt", "data-stop-label", "data-stopping", "data-stopped"}


def po_path(language: str) -> Path:
    return LOCALE / language / "LC_MESSAGES" / "django.po"


def catalog(language: str) -> polib.POFile:
    return polib.pofile(str(po_path(language)))


@dataclass(frozen=True)
class English:
    """One English string of the catalog, and how to find it in a page's text."""

    text: str
    pattern: re.Pattern[str]
    whole: bool
    """A single word ("Tool", "Send") counts only as the whole of a text (a header, a button), not inside one."""

    def found_in(self, unit: str) -> bool:
        if self.whole:  # a label may end in a colon: "User:" before what the user said
            return bool(self.pattern.fullmatch(unit) or self.pattern.fullmatch(unit.rstrip(":").rstrip()))
        return bool(self.pattern.search(unit))


@cache
def django_admin_untranslated(language: str) -> set[str]:
    """The English strings of Django's own admin that its catalog leaves untranslated in ``language``: the admin
    shows them in English (Django 6.1's "Run" button has no German yet), so a page that shows one may be showing
    Django's, not the app's."""
    admin_locale = Path(django.contrib.admin.__file__).parent / "locale"
    english = {entry.msgid for entry in polib.pofile(str(admin_locale / "en" / "LC_MESSAGES" / "django.po"))}
    po = admin_locale / language / "LC_MESSAGES" / "django.po"
    translated = {entry.msgid for entry in polib.pofile(str(po)) if entry.translated()} if po.exists() else set()
    return english - translated


def english_strings(language: str) -> list[English]:
    """Every msgid (and plural) of the app whose translation into ``language`` differs from it, less the ones
    Django's admin itself shows untranslated."""
    found = []
    django_shows = django_admin_untranslated(language)
    for entry in catalog(language):
        if entry.msgid in django_shows:
            continue
        translations = list(entry.msgstr_plural.values()) if entry.msgid_plural else [entry.msgstr]
        for text in filter(None, (entry.msgid, entry.msgid_plural)):
            if any(_same(text, t) for t in translations):
                continue
            found.append(_english(text))
    return found


def _same(english: str, translated: str) -> bool:
    return PLACEHOLDER.sub("", english).strip().lower() == PLACEHOLDER.sub("", translated).strip().lower()


def _english(text: str) -> English:
    # Placeholders match anything; a string may also be shown with a capital first letter (the admin's capfirst).
    parts = [re.escape(part) for part in PLACEHOLDER.split(text.strip())]
    body = ".+?".join(parts)
    first = text.strip()[:1]
    if first.isalpha() and body.startswith(re.escape(first)):
        body = f"[{first.lower()}{first.upper()}]" + body[len(re.escape(first)) :]
    literal = PLACEHOLDER.sub("", text).strip()
    whole = " " not in literal and bool(re.fullmatch(r"\w+", literal))
    pattern = re.compile(body if whole else rf"(?<!\w){body}(?!\w)", re.S)
    return English(text=text, pattern=pattern, whole=whole)


class _Texts(HTMLParser):
    """The texts of a page a person reads: text nodes outside scripts and styles, the shown attributes, and the
    strings of JSON scripts (the chat's catalogue, read by chat.js)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.units: list[str] = []
        self._skip: str | None = None
        self._json = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name, value in attrs:
            if value and name in SHOWN_ATTRIBUTES:
                self.units.append(value)
        if tag == "input" and values.get("type") in ("submit", "button") and values.get("value"):
            self.units.append(values["value"] or "")
        if tag in ("script", "style"):
            self._skip = tag
            self._json = tag == "script" and values.get("type") == "application/json"

    def handle_endtag(self, tag: str) -> None:
        if tag == self._skip:
            self._skip, self._json = None, False

    def handle_data(self, data: str) -> None:
        if self._skip is None:
            self.units.append(data)
        elif self._json and data.strip():
            self.units.extend(_strings(json.loads(data)))


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def shown_texts(html: str, data: Iterable[str] = ()) -> list[str]:
    """The page's texts, each stripped, with the site's own data taken out: what the test itself put there
    (a user's words, a tool's description, argument names) is the site's, not the app's."""
    parser = _Texts()
    parser.feed(html)
    parser.close()
    known = sorted({d.strip() for d in data if d and d.strip()}, key=len, reverse=True)
    units = []
    for unit in parser.units:
        unit = " ".join(unit.split())
        if unit in known:
            continue
        for item in known:
            if len(item) > 5:  # a short one ("name", "by") would cut the page's own words apart
                unit = unit.replace(" ".join(item.split()), " ")
        unit = unit.strip(" —")
        if unit:
            units.append(unit)
    return units


def english_left(html: str, language: str, data: Iterable[str] = ()) -> list[tuple[str, str]]:
    """``(English string, the text it was found in)`` for every English string of the app left in the page."""
    texts = shown_texts(html, data)
    return [(english.text, unit) for english in english_strings(language) for unit in texts if english.found_in(unit)]
