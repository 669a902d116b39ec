"""Usage shown: ``GET usage/`` gives a user their own usage and the limits on their turns; the admin lists the
counters and this period's usage per user and per assistant, biggest spenders first."""

import pytest

from toolcalling.testutils import override_toolcalling

from .conftest import post

LIMITS = [
    {"tokens": 5000, "per": "user", "period": "day"},
    {"turns": 3, "per": "assistant", "period": "hour"},
]


@pytest.fixture
def spent(api, model, new_conversation, bob):
    """Alice used the helper (50 tokens, one tool call) and the budget assistant (30 tokens); bob 500 tokens."""
    model.call("add", {"a": 1, "b": 2}, usage=(20, 5))
    model.reply("3", usage=(20, 5))
    assert post(api, new_conversation("helper"), "1+2").status_code == 201
    model.reply("Cheap.", usage=(20, 10))
    assert post(api, new_conversation("budget"), "hello").status_code == 201
    api.force_authenticate(bob)
    model.reply("Bob's.", usage=(400, 100))
    assert post(api, new_conversation("helper"), "bob here").status_code == 201
    model.assert_done()


@pytest.mark.toolcalling(USAGE_LIMITS=LIMITS)
def test_a_user_gets_their_own_usage_and_the_limits_on_their_turns(api, alice, spent):
    api.force_authenticate(alice)
    body = api.get("/api/toolcalling/usage/").json()
    assert body["usage"]["day"] == {**body["usage"]["day"], "tokens": 80, "turns": 2, "tool_calls": 1}
    assert body["usage"]["month"]["tokens"] == 80
    assert body["usage"]["day"]["period_start"] < body["usage"]["day"]["resets_at"]

    def limit(**wanted):
        found = [item for item in body["limits"] if all(item[k] == v for k, v in wanted.items())]
        assert len(found) == 1, (wanted, body["limits"])
        return found[0]

    site_wide = limit(quantity="tokens", maximum=5000, per="user")
    assert site_wide["used"] == 80 and site_wide["remaining"] == 4920 and site_wide["exceeded"] is False
    assert {"helper", "budget", "slow"} <= set(site_wide["assistants"])
    own = limit(quantity="tokens", maximum=1000, per="user")  # the budget assistant's own limit
    assert own["assistants"] == ["budget"] and own["used"] == 80 and own["period"] == "day"
    helper_turns = limit(quantity="turns", per="assistant", assistants=["helper"])
    assert helper_turns["used"] == 2 and helper_turns["remaining"] == 1  # alice's turn and bob's: the assistant's
    assert helper_turns["resets_at"] > helper_turns["period_start"]


def test_without_limits_the_usage_is_still_reported(api, spent, alice):
    api.force_authenticate(alice)
    with override_toolcalling(USAGE_LIMITS=[]):
        body = api.get("/api/toolcalling/usage/").json()
    assert body["usage"]["day"]["tokens"] == 80
    assert [item["assistants"] for item in body["limits"]] == [["budget"]]


def test_the_usage_endpoint_needs_a_user(client, db):
    assert client.get("/api/toolcalling/usage/").status_code in (401, 403)


@pytest.mark.toolcalling(USAGE_LIMITS=LIMITS)
def test_the_admin_shows_this_periods_usage_per_user_and_assistant(admin_client, spent):
    page = admin_client.get("/admin/toolcalling/usagecounter/summary/")
    assert page.status_code == 200
    html = page.content.decode()
    today = html[html.index("Today") : html.index("This month")]
    # Top spenders first: bob (500 tokens) before alice (80); then the assistants.
    assert today.index(">bob<") < today.index(">alice<")
    users = page.context["periods"][0]["users"]
    assert [(name, row.tokens, row.turns, row.tool_calls) for name, row in users] == [
        ("bob", 500, 1, 0),
        ("alice", 80, 2, 1),
    ]
    assert page.context["periods"][0]["totals"] == {"tokens": 580, "turns": 3, "tool_calls": 1}
    assistants = [(name, row.tokens) for name, row in page.context["periods"][0]["assistants"]]
    assert assistants == [("Helper", 550), ("Budget", 30)]
    assert "5000 tokens per day, for each user" in html

    listing = admin_client.get("/admin/toolcalling/usagecounter/?current=yes&scope=user&period=day")
    assert listing.status_code == 200
    shown = [(row.user.username, row.tokens) for row in listing.context["cl"].result_list]
    assert shown == [("bob", 500), ("alice", 80)]
    assert "Usage this period" in listing.content.decode()
    assert admin_client.get("/admin/toolcalling/usagecounter/add/").status_code == 403


def test_staff_without_the_view_permission_do_not_see_usage(client, django_user_model, db):
    staff = django_user_model.objects.create_user("sam", password="pw", is_staff=True)
    client.force_login(staff)
    assert client.get("/admin/toolcalling/usagecounter/summary/").status_code == 403


@pytest.mark.chat_completions  # prices the test model by name
@pytest.mark.toolcalling(
    USAGE_LIMITS=[{"cost": "5.00", "per": "user", "period": "month"}, {"turns": 1, "per": "user", "period": "day"}],
    PRICES={"test-model": {"input": "1", "output": "1"}},
)
def test_a_cost_limit_nobody_spent_against_shows_zero_money_and_a_limit_just_reached_is_exceeded(api, model, alice):
    api.force_authenticate(alice)
    before = {item["quantity"]: item for item in api.get("/api/toolcalling/usage/").json()["limits"]}
    # Nothing counted yet: a cost is still a decimal string, as on messages, and nothing is exceeded.
    assert (before["cost"]["used"], before["cost"]["remaining"], before["cost"]["exceeded"]) == ("0", "5.00", False)
    assert (before["turns"]["used"], before["turns"]["remaining"], before["turns"]["exceeded"]) == (0, 1, False)

    model.reply("Hello.", usage=(10, 5))
    response = api.post("/api/toolcalling/conversations/", {"assistant": "helper"}, format="json")
    assert post(api, response.json()["id"], "hi").status_code == 201
    after = {item["quantity"]: item for item in api.get("/api/toolcalling/usage/").json()["limits"]}
    # One message of one a day: used up exactly, so the next is refused and the limit shows as exceeded.
    assert (after["turns"]["used"], after["turns"]["remaining"], after["turns"]["exceeded"]) == (1, 0, True)
    assert after["cost"]["exceeded"] is False
