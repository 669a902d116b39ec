"""The details of a refused limit: unknown keys of any type listed in one order beside the known ones, and
amounts that are not positive whole numbers (a fraction, a bool) refused."""

import pytest

from toolcalling.exceptions import ImproperlyDefined
from toolcalling.usage import parse_limits


def problems_of(item):
    with pytest.raises(ImproperlyDefined) as caught:
        parse_limits([item], "test")
    return str(caught.value)


def test_unknown_keys_of_any_type_are_listed_with_the_known_ones():
    message = problems_of({"tokens": 5, "per": "user", "period": "day", "colour": "red", 3: "x", "alpha": 1})
    assert "unknown key(s) 3, 'alpha', 'colour'; known: cost, name, per, period, tokens, tool_calls, turns" in message


@pytest.mark.parametrize("amount", [2.5, True, 0, -3, "5"])
def test_an_amount_must_be_a_positive_whole_number(amount):
    message = problems_of({"turns": amount, "per": "user", "period": "day"})
    assert f"'turns' must be a positive whole number, not {amount!r}" in message


def by_tenant(ctx):
    return "acme"


@pytest.mark.parametrize("name", ["user", "site", "", 5])
def test_a_callable_scopes_name_is_a_new_non_empty_string(name):
    message = problems_of({"tokens": 5, "per": by_tenant, "period": "day", "name": name})
    assert (
        "'name' names a callable scope: a non-empty string other than user, assistant and site, "
        "given only with a callable 'per'"
    ) in message
