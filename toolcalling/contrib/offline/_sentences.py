"""Tool results told in sentences a demo visitor reads: from any dict or list, in the request's language.

A real model turns ``{"state": "shipped", "unit_price": "14.90"}`` into prose; the offline model cannot write
prose, but it can do better than echo the keys: the thing a result is about comes first ("Order number
20250719-0032: the state is shipped, …"), nested rows become one line each, and the few words of its own
(lists, "yes", "not set", how many were found) are the app's translated strings. The keys and values stay the
site's own, as they are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext, pgettext

from . import _text as tx

# Keys that name what a result is about, best first; a key ending in one of ID_WORDS does too ("order_no").
SUBJECT_KEYS = ("name", "title", "label", "subject", "order", "sku", "id", "key", "code")
NAME_KEYS = frozenset({"name", "title", "label", "subject"})
ID_WORDS = frozenset({"no", "number", "nr", "num", "id", "code", "sku", "ref", "reference"})
# A label ending in one of these reads as a phrase of its own ("placed on 2025-07-19"), not "the … is …".
PREPOSITIONS = frozenset({"on", "at", "by", "in", "for", "from", "to", "until", "since", "with", "of"})
# A label that starts with one of these is a question already ("can be cancelled"): it takes "label: value".
AUXILIARIES = frozenset({"can", "could", "is", "are", "was", "has", "have", "will", "may", "must", "should"})


def tool_label(name: str) -> str:
    """``get_order_status`` as a visitor reads it: "Get order status"."""
    return tx.split_identifier(name).strip().capitalize() or pgettext("toolcalling offline", "The tool")


def describe(name: str, content: str, *, named: bool) -> list[str]:
    """The lines that tell one tool's result (``named``: under a heading with the tool's name already)."""
    label = tool_label(name)
    if content.startswith("Error:"):
        # The details are for the model and for staff (they are stored on the call); the visitor reading this
        # answer gets a neutral sentence.
        if named:
            return [_("It did not work this time. Please check the details and try again.")]
        return [_("%(tool)s did not work this time. Please check the details and try again.") % {"tool": label}]
    try:
        data = json.loads(content)
    except (json.JSONDecodeError, ValueError):
        return [
            clip(content.strip()) or pgettext("toolcalling offline", "%(tool)s returned nothing.") % {"tool": label}
        ]
    if isinstance(data, Mapping):
        return _describe_mapping(label, data, named=named)
    if isinstance(data, list):
        if not data:
            return [pgettext("toolcalling offline", "%(tool)s found nothing.") % {"tool": label}]
        lead = ngettext("I found %(count)d item:", "I found %(count)d items:", len(data)) % {"count": len(data)}
        return [lead, *(f"- {row(item)}" for item in data)]
    return [sentence(value_text(data))]


def _describe_mapping(label: str, data: Mapping[str, Any], *, named: bool) -> list[str]:
    if not data:
        return [_("%(tool)s returned no details.") % {"tool": label}]
    error = data.get("error")
    if error:
        text = clip(value_text(error))
        if named:
            return [sentence(_("It did not work: %(error)s") % {"error": text})]
        return [sentence(_("%(tool)s did not work: %(error)s") % {"tool": label, "error": text})]
    tables = {k: v for k, v in data.items() if _is_table(v)}
    fields = {k: v for k, v in data.items() if k not in tables}
    lines = []
    if fields:
        subject = _subject(fields)
        phrases = [_phrase(key, value) for key, value in fields.items() if key != subject]
        if subject is None:
            lines.append(sentence(join(phrases)))
        elif phrases:
            lead = headline(subject, fields[subject])
            lines.append(
                sentence(
                    pgettext("toolcalling offline", "%(subject)s: %(facts)s")
                    % {"subject": lead, "facts": join(phrases)}
                )
            )
        else:
            lines.append(sentence(headline(subject, fields[subject])))
    for key, rows in tables.items():
        lines.append(
            pgettext("toolcalling offline", "%(label)s (%(count)d):")
            % {"label": label_of(key).capitalize(), "count": len(rows)}
        )
        lines.extend(f"- {row(item)}" for item in rows)
    return lines


def row(item: Any) -> str:
    """One row of a list on a line of its own: "Mug: SKU MUG-001, quantity 2, unit price 14.90"."""
    if not isinstance(item, Mapping):
        return clip(value_text(item))
    subject = _subject(item)
    pairs = [f"{label_of(key)} {value_text(value)}" for key, value in item.items() if key != subject]
    if subject is None:
        return clip(", ".join(pairs))
    head = headline(subject, item[subject])
    return clip(f"{head}: {', '.join(pairs)}" if pairs else head)


def headline(key: str, value: Any) -> str:
    """What a result is about: a name as it is ("Mug"), an identifier with its label ("Order number 20250719-0032")."""
    if key in NAME_KEYS:
        return value_text(value)
    text = f"{label_of(key)} {value_text(value)}"
    return text[:1].upper() + text[1:]


def _phrase(key: str, value: Any) -> str:
    label, text = label_of(key), clip(value_text(value))
    words = label.split()
    if words and words[-1] in PREPOSITIONS:
        return f"{label} {text}"
    if words and words[0] in AUXILIARIES:
        return f"{label}: {text}"
    return _("the %(label)s is %(value)s") % {"label": label, "value": text}


def _subject(data: Mapping[str, Any]) -> str | None:
    scalars = [k for k, v in data.items() if isinstance(v, str | int) and not isinstance(v, bool)]
    for wanted in SUBJECT_KEYS:
        if wanted in scalars:
            return wanted
    for key in scalars:
        words = tx.split_identifier(str(key)).lower().split()
        if words and words[-1] in ID_WORDS:
            return key
    return None


def _is_table(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, Mapping) for item in value)


def label_of(key: Any) -> str:
    """A key as words: ``unit_price`` is "unit price", ``order_no`` "order number", ``eta`` "ETA"."""
    words = tx.split_identifier(str(key)).split()
    return " ".join(tx.ABBREVIATIONS.get(word.lower(), word if word.isupper() else word.lower()) for word in words)


def value_text(value: Any) -> str:
    if value is None:
        return pgettext("toolcalling offline", "not set")
    if isinstance(value, bool):
        return pgettext("toolcalling offline", "yes") if value else pgettext("toolcalling offline", "no")
    if isinstance(value, Mapping):
        return "(" + ", ".join(f"{label_of(k)} {value_text(v)}" for k, v in value.items()) + ")"
    if isinstance(value, list):
        return join([value_text(item) for item in value])
    if isinstance(value, str):
        return value
    return json.dumps(value)


def join(parts: Sequence[str]) -> str:
    """``a, b and c``, with the request's word for "and"."""
    parts = [p for p in parts if p]
    if len(parts) < 2:
        return "".join(parts)
    return pgettext("toolcalling offline", "%(items)s and %(last)s") % {
        "items": ", ".join(parts[:-1]),
        "last": parts[-1],
    }


def sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    text = text[:1].upper() + text[1:]
    return text if text[-1] in ".!?…:" else text + "."


def clip(text: str) -> str:
    return text if len(text) <= tx.MAX_VALUE_CHARS else text[: tx.MAX_VALUE_CHARS - 1] + "\u2026"
