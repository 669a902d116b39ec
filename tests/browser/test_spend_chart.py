"""The admin's spend page in Chromium: staff go from the conversations to the chart of the last 30 days, whose
bars stand as tall as each day's cost, read a bar's cost, and download the CSV."""

import datetime
from decimal import Decimal

from playwright.sync_api import expect

from tests.browser.helpers import log_in
from toolcalling.models import UsageCounter
from toolcalling.usage import window

DAYS_AGO = {0: ("0.30", "0.10"), 3: ("0.60", "0"), 29: ("0.15", "0.15")}  # shop, helper


def test_staff_open_the_spend_chart_from_the_conversations_and_download_its_csv(live_server, browser, shop):
    now = datetime.datetime.now(datetime.UTC)
    for days_ago, costs in DAYS_AGO.items():
        start = window("day", now - datetime.timedelta(days=days_ago))[0]
        for assistant, cost in zip(("shop", "helper"), costs, strict=True):
            if Decimal(cost):
                UsageCounter.objects.create(scope="assistant", key=assistant, period="day", period_start=start,
                                            cost=Decimal(cost), tokens=1000, turns=2)  # fmt: skip
    page = browser.new_context(accept_downloads=True).new_page()
    log_in(page, live_server.url + "/admin/toolcalling/conversation/", "admin", "admin-demo-pass", "Log in")
    page.get_by_role("link", name="Spend").click()
    expect(page.locator("h1")).to_contain_text("Spend of the last 30 days")

    chart = page.locator("#spend-chart")
    expect(chart).to_be_visible()
    bars = chart.locator("rect.spend-bar")
    expect(bars).to_have_count(5)
    heights = {bars.nth(i).locator("title").text_content(): bars.nth(i).bounding_box()["height"] for i in range(5)}
    by_cost = {label.rsplit(": ", 1)[1]: height for label, height in heights.items() if "Shop" in label}
    # Drawn to scale: the 0.60 day is twice the 0.30 day, four times the 0.15 one.
    assert abs(by_cost["0.6 USD"] - 2 * by_cost["0.3 USD"]) < 1.5
    assert abs(by_cost["0.6 USD"] - 4 * by_cost["0.15 USD"]) < 1.5
    assert by_cost["0.6 USD"] > 100  # pixels: a chart one can read
    expect(page.locator("#spend-legend")).to_contain_text("Shop")
    expect(page.locator("#spend-total")).to_contain_text("1.3 USD")

    with page.expect_download() as download:
        page.locator("#spend-csv").click()
    lines = open(download.value.path(), encoding="utf-8").read().splitlines()
    assert lines[0] == "day,assistant,cost,currency,tokens,turns,tool_calls,unpriced_replies"
    assert len(lines) == 1 + 5
