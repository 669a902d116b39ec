"""The admin's spend page: cost per day per assistant over the last 30 days (a chart drawn on the server), the
users who spent most, a CSV of the days; for staff who may view the usage counters."""

import csv
import datetime
import io
from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission

from toolcalling.models import UsageCounter
from toolcalling.usage import window

from .conftest import PRICED, post

pytestmark = pytest.mark.database  # costs added up by the database, per day

SPEND = "/admin/toolcalling/usagecounter/spend/"


def day_start(days_ago: int) -> datetime.datetime:
    return window("day", datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=days_ago))[0]


@pytest.fixture
def spent(api, model, new_conversation, alice, bob):
    """Today: alice 0.0015 with the helper, bob 0.0041 with the budget assistant (turns at PRICED). Earlier days
    as their turns left them: the helper 0.25 twelve days ago, and 0.5 forty days ago (outside the page)."""
    model.reply("Hers.", usage={"prompt_tokens": 700, "completion_tokens": 200, "cached_tokens": 0})
    assert post(api, new_conversation("helper"), "hi").status_code == 201
    api.force_authenticate(bob)
    model.reply("His.", usage={"prompt_tokens": 900, "completion_tokens": 800, "cached_tokens": 0})
    assert post(api, new_conversation("budget"), "hi").status_code == 201
    for days_ago, cost in ((12, "0.25"), (40, "0.5")):
        counted = {"period": "day", "period_start": day_start(days_ago), "cost": Decimal(cost), "tokens": 1000}
        UsageCounter.objects.create(scope="assistant", key="helper", **counted)
        UsageCounter.objects.create(scope="user", key=str(alice.pk), user=alice, **counted)
    model.assert_done()


@pytest.mark.chat_completions
@pytest.mark.toolcalling(PRICES=PRICED)
def test_the_page_charts_each_assistants_daily_cost_and_lists_the_top_users(admin_client, spent):
    page = admin_client.get(SPEND)
    assert page.status_code == 200
    chart = page.context["chart"]
    labels = sorted(bar["label"].split(" ", 1)[1] for bar in chart["bars"])
    assert labels == ["Budget: 0.0041 USD", "Helper: 0.0015 USD", "Helper: 0.25 USD"]
    assert [line["name"] for line in chart["series"]] == ["Budget", "Helper"]
    assert page.context["total"] == Decimal("0.2556")  # the day forty days ago is not on the page
    users = [(row["name"], row["cost"]) for row in page.context["users"]]
    assert users == [("alice", Decimal("0.2515")), ("bob", Decimal("0.0041"))]
    html = page.content.decode()
    assert "<svg" in html and "<script" not in html.split('id="content-main"')[1]
    # The tallest day fills the plot: the bar of twelve days ago.
    tallest = max(chart["bars"], key=lambda bar: float(bar["height"]))
    assert tallest["label"].endswith("Helper: 0.25 USD") and float(tallest["height"]) == 220


@pytest.mark.chat_completions
@pytest.mark.toolcalling(PRICES=PRICED)
def test_the_csv_has_a_row_per_day_and_assistant_in_the_currency(admin_client, spent):
    response = admin_client.get(SPEND + "?format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"].startswith('attachment; filename="spend-')
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    found = sorted((row["assistant"], row["cost"], row["currency"]) for row in rows)
    assert found == [("budget", "0.0041", "USD"), ("helper", "0.0015", "USD"), ("helper", "0.25", "USD")]
    today = f"{day_start(0):%Y-%m-%d}"  # a local midnight
    assert {row["day"] for row in rows if row["cost"] != "0.25"} == {today}


def test_answers_without_a_price_are_said_to_be_left_out(admin_client, api, model, new_conversation):
    model.reply("Unpriced.", usage=(100, 10))
    assert post(api, new_conversation("helper"), "hi").status_code == 201
    page = admin_client.get(SPEND)
    assert page.context["unpriced"] == 1
    assert "1 answer had no price and is not counted." in page.content.decode()


def test_the_page_is_for_staff_who_may_view_the_usage_counters(client, django_user_model, db):
    staff = django_user_model.objects.create_user("sam", password="pw", is_staff=True)
    client.force_login(staff)
    staff.user_permissions.add(Permission.objects.get(codename="view_conversation"))
    client.force_login(django_user_model.objects.get(pk=staff.pk))
    assert client.get(SPEND).status_code == 403
    assert f'href="{SPEND}"' not in client.get("/admin/toolcalling/conversation/").content.decode()
    staff.user_permissions.add(Permission.objects.get(codename="view_usagecounter"))
    client.force_login(django_user_model.objects.get(pk=staff.pk))
    assert client.get(SPEND).status_code == 200
    assert f'href="{SPEND}"' in client.get("/admin/toolcalling/conversation/").content.decode()
    customer = django_user_model.objects.create_user("cat", password="pw")
    client.force_login(customer)
    assert client.get(SPEND).status_code == 302  # to the admin's login
