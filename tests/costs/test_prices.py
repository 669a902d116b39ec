"""Where prices come from: ``PRICES`` first, else genai-prices at the provider the endpoint is; what is wrong with
``PRICES`` is a system check error; models with no price are listed by a warning."""

from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.core.exceptions import ImproperlyConfigured

from toolcalling.checks import check_prices
from toolcalling.model_apis import ChatCompletions, load_model_api
from toolcalling.testutils import override_toolcalling
from toolcalling.usage import Pricing, price_problems
from toolcalling.usage._prices import price_for

OPENAI = "https://api.openai.com/v1"


def test_settings_prices_win_over_the_database_and_leave_out_rates_at_the_input_rate():
    with override_toolcalling(PRICES={"gpt-4o-mini": {"input": "1", "output": "2"}}, BASE_URL=OPENAI):
        price = price_for(["gpt-4o-mini"], "openai")
    assert (price.source, price.input, price.cached_input, price.cache_write) == ("settings", 1, 1, 1)


@pytest.mark.parametrize("base_url", [OPENAI, None])
def test_openai_models_are_priced_from_genai_prices_at_openai(base_url):
    with override_toolcalling(BASE_URL=base_url, API_KEY="k"):
        price = price_for(["gpt-4o-mini-2024-07-18"], "openai")
    assert price.source == "genai-prices" and price.model == "openai/gpt-4o-mini" and price.currency == "USD"
    # the database's rates, as genai-prices 0.2.3 has them
    assert (price.input, price.cached_input, price.output) == (Decimal("0.15"), Decimal("0.075"), Decimal("0.6"))


@pytest.mark.parametrize(("api", "model"), [("chat_completions", "mistral-large-latest"), ("anthropic", "gpt-4o")])
def test_without_base_url_a_model_is_priced_only_at_the_apis_own_provider(api, model):
    # genai-prices knows both models, at Mistral and at OpenAI: neither is what the SDK of this API reaches.
    with override_toolcalling(BASE_URL=None, API_KEY="k"):
        assert price_for([model], load_model_api(api).price_provider) is None
        assert price_for(["gpt-4o"], ChatCompletions.price_provider).model == "openai/gpt-4o"


def test_a_price_of_the_time_of_day_is_taken_at_the_moment_in_utc_whatever_the_sites_zone(monkeypatch, settings):
    import datetime

    from toolcalling.usage import _prices

    class FiveInTheAfternoonUTC(datetime.datetime):  # 02:00 the next day in Tokyo
        @classmethod
        def now(cls, tz=None):
            moment = datetime.datetime(2026, 1, 1, 17, tzinfo=datetime.UTC)
            return moment.astimezone(tz) if tz else moment.astimezone().replace(tzinfo=None)

    settings.TIME_ZONE = "Asia/Tokyo"  # Django sets the process's zone too
    monkeypatch.setattr(_prices, "datetime", SimpleNamespace(datetime=FiveInTheAfternoonUTC, UTC=datetime.UTC))
    with override_toolcalling(BASE_URL="https://api.deepseek.com", API_KEY="k"):
        price = price_for(["deepseek-chat"], "openai")
    # DeepSeek's off-peak rates (16:30 to 00:30 UTC), as genai-prices 0.2.3 has them; 0.27 and 1.1 the rest of the day.
    assert (price.model, price.input, price.output) == ("deepseek/deepseek-chat", Decimal("0.135"), Decimal("0.55"))


def test_rates_genai_prices_leaves_out_are_the_input_rate_and_a_model_without_an_output_rate_is_unpriced():
    with override_toolcalling(BASE_URL=None, API_KEY="k"):
        gpt4 = price_for(["gpt-4"], "openai")  # no cached-input or cache-write rate at OpenAI
        embedding = price_for(["text-embedding-3-small"], "openai")  # an input rate only
    assert (gpt4.input, gpt4.output, gpt4.cached_input, gpt4.cache_write) == (30, 60, 30, 30)
    assert embedding is None


def test_anthropic_tiered_prices_take_the_tier_of_the_prompt():
    with override_toolcalling(BASE_URL=None, API_KEY="k"):
        short = price_for(["claude-sonnet-4-5"], "anthropic", prompt_tokens=1000)
        long = price_for(["claude-sonnet-4-5"], "anthropic", prompt_tokens=250_000)
    assert (short.input, short.cache_write, short.output) == (3, Decimal("3.75"), 15)
    assert (long.input, long.output) == (6, Decimal("22.5"))


def test_one_pricing_prices_each_answer_at_its_own_tier_and_reported_model():
    # One Pricing serves a whole turn and remembers what it found: by the answer's prompt and model, not once.
    with override_toolcalling(BASE_URL=None, API_KEY="k", PRICES={"snapshot": {"input": "9", "output": "9"}}):
        pricing = Pricing("claude-sonnet-4-5", "anthropic")
        assert pricing.price("", 1000).input == 3
        assert pricing.price("", 250_000).input == 6
        unknown = Pricing("unknown", "anthropic")
        assert unknown.price("", 1000) is None
        assert unknown.price("snapshot", 1000).input == 9


def test_a_prompt_of_exactly_a_tiers_start_is_priced_below_it():
    # A tier applies to prompts above its start (200,000 tokens here), as genai-prices and Anthropic bill them.
    with override_toolcalling(BASE_URL=None, API_KEY="k"):
        at_start = price_for(["claude-sonnet-4-5"], "anthropic", prompt_tokens=200_000)
        one_more = price_for(["claude-sonnet-4-5"], "anthropic", prompt_tokens=200_001)
    assert (at_start.input, at_start.cached_input, at_start.output) == (3, Decimal("0.3"), 15)
    assert (one_more.input, one_more.cached_input, one_more.output) == (6, Decimal("0.6"), Decimal("22.5"))


@pytest.mark.parametrize(
    "settings",
    [
        {"BASE_URL": "http://127.0.0.1:8000/v1"},  # a local server or proxy: its prices are the site's to set
        {"BASE_URL": OPENAI, "CURRENCY": "EUR"},  # genai-prices is in dollars
        {"BASE_URL": OPENAI, "OFFLINE_MODEL": True},
    ],
)
def test_an_endpoint_genai_prices_cannot_price_leaves_known_models_unpriced(settings):
    with override_toolcalling(**settings):
        assert price_for(["gpt-4o-mini"], "openai") is None


def test_a_model_nobody_knows_is_unpriced_even_at_openai():
    with override_toolcalling(BASE_URL=OPENAI):
        assert Pricing("no-such-model-1", "openai").price() is None


def test_an_answer_reporting_another_model_is_priced_by_the_assistant_model_first():
    prices = {"mine": {"input": "1", "output": "1"}, "snapshot-2025": {"input": "5", "output": "5"}}
    with override_toolcalling(PRICES=prices):
        assert Pricing("mine", "openai").price("snapshot-2025").model == "mine"
        assert Pricing("unknown", "openai").price("snapshot-2025").model == "snapshot-2025"


def test_every_problem_with_prices_is_named_at_once():
    problems = price_problems({
        "a": {"input": 1.25, "output": "1"},  # a float cannot hold every price exactly
        "b": {"input": "-1", "output": "x", "cheap": "0"},
        "c": {"output": "1"},
        "d": "1.00",
    })  # fmt: skip
    text = "; ".join(problems)
    assert "'a': 'input' must be a non-negative number" in text and "not 1.25" in text
    assert "'b': unknown key(s) 'cheap'" in text and "'b': 'input'" in text and "'b': 'output'" in text
    assert "'c': 'input' must be given" in text
    assert "'d': the rates are a dict" in text
    assert len(problems) == 6


def test_bad_model_names_and_rates_are_named_and_every_model_after_them_is_checked_too():
    problems = price_problems({
        "": {"input": "1", "output": "1"},
        5: {"input": "1", "output": "1"},
        "e": ["1", "2"],
        "f": {"input": "1", "output": "1", 3: "x", "colour": "red"},  # keys of any type, sorted as text
        "g": {"output": "1"},
        "h": {},
    })  # fmt: skip
    known = "input, cached_input, output, cache_write"
    assert problems == [
        "'': a model name is a non-empty string",
        "5: a model name is a non-empty string",
        """'e': the rates are a dict such as {"input": "2.50", "output": "10.00"}""",
        f"'f': unknown key(s) 3, 'colour'; known: {known}",
        "'g': 'input' must be given",
        "'h': 'input' and 'output' must be given",
    ]


def test_bad_prices_and_currency_are_a_system_check_error():
    with override_toolcalling(PRICES={"m": {"input": 1.5, "output": "2"}}, CURRENCY="usd"):
        [error] = check_prices()
    assert error.id == "toolcalling.E007"
    assert "'m': 'input'" in error.msg and "CURRENCY must be a three-letter ISO 4217 code" in error.msg


def test_prices_that_cannot_be_used_stop_pricing_with_every_problem_named():
    with override_toolcalling(PRICES={"m": {"input": 1.5, "output": "2"}}, CURRENCY="usd"):
        with pytest.raises(ImproperlyConfigured) as caught:
            price_for(["m"], "openai")
    message = str(caught.value)
    assert message.startswith('TOOLCALLING["PRICES"] cannot be used: ') and message.endswith(".")
    assert "'m': 'input'" in message and "; CURRENCY must be a three-letter ISO 4217 code" in message


def test_configured_models_without_a_price_are_listed_by_a_warning():
    with override_toolcalling(MODEL="test-model", PRICES={}):
        found = check_prices()
    [warning] = [m for m in found if m.id == "toolcalling.W007" and "'test-model'" in m.msg]
    assert "helper" in warning.msg and "shows as null" in warning.msg
    with override_toolcalling(MODEL="test-model", PRICES={"test-model": {"input": "1", "output": "1"}}):
        assert not [m for m in check_prices() if "'test-model'" in m.msg]


def test_a_cost_is_kept_to_ten_places_rounded_half_up_and_counts_left_out_are_none():
    rates = {"input": "0.00005", "output": "0.00025", "cached_input": "0", "cache_write": "7"}
    with override_toolcalling(PRICES={"tiny": rates}):
        price = price_for(["tiny"], "openai")
    # Half of the smallest amount kept rounds up, never to the even neighbour: a token is never free.
    assert price.cost(prompt_tokens=1, completion_tokens=0) == Decimal("0.0000000001")
    assert price.cost(prompt_tokens=0, completion_tokens=1) == Decimal("0.0000000003")
    # Without cache counts every prompt token is priced as input, none as read from or written to a cache.
    assert price.cost(prompt_tokens=1_000_000, completion_tokens=0) == Decimal("0.00005")


def test_an_answer_is_priced_at_its_prompts_tier_and_by_the_model_it_reports_when_the_assistants_has_no_price():
    counts = SimpleNamespace(prompt_tokens=250_000, completion_tokens=0, cached_tokens=0)  # no cache writes reported
    with override_toolcalling(BASE_URL=None, API_KEY="k"):
        cost = Pricing("claude-sonnet-4-5", "anthropic").cost("", counts)
    assert cost.amount == Decimal("1.5") and cost.price.input == 6  # 250,000 at the long prompts' 6 per million
    prices = {"snapshot-2025": {"input": "2", "output": "2"}}
    with override_toolcalling(PRICES=prices):
        reported = Pricing("unknown", "openai").cost("snapshot-2025", counts)
    assert reported.price.model == "snapshot-2025" and reported.amount == Decimal("0.5")
