"""The admin of evals in Chromium: stored runs, the page comparing two runs, and "add to dataset" on a
conversation writing a case that then passes as an eval."""

from io import StringIO

import yaml
from django.contrib.auth import get_user_model
from django.core.management import call_command
from playwright.sync_api import expect

from tests.browser.helpers import log_in
from toolcalling import Assistant
from toolcalling.evals import evaluate, load_dataset
from toolcalling.models import EvalRun
from toolcalling.testutils import override_toolcalling

CASES = """
name: shop
cases:
  - name: status
    inputs: {assistant: shop, user: alice, message: "Where is my order 20250719-0032?"}
    evaluators: [{AnswerContains: %s}]
  - name: orders
    inputs: {assistant: shop, user: alice, message: "List my orders"}
    evaluators: [{ToolCalls: {calls: [{name: list_my_orders}]}}]
"""


def eval_run(tmp_path, expected):
    path = tmp_path / f"{expected}.yaml"
    path.write_text(CASES % expected)
    try:
        call_command("toolcalling_eval", str(path), stdout=StringIO())
    except SystemExit:
        pass  # a failing case; the run is stored all the same
    return EvalRun.objects.latest("id")


@override_toolcalling(OFFLINE_MODEL=True)
def test_two_runs_compared_case_by_case(live_server, browser, shop, tmp_path):
    good = eval_run(tmp_path, "shipped")
    bad = eval_run(tmp_path, "delivered")
    assert (good.passed, bad.passed) == (2, 1)

    page = browser.new_context().new_page()
    log_in(page, live_server.url + "/admin/toolcalling/evalrun/", "admin", "admin-demo-pass", "Log in")
    expect(page.locator("#result_list")).to_contain_text(f"shop #{good.pk}: 2/2 passed")
    expect(page.locator("#result_list")).to_contain_text("50%")
    for run in (good, bad):
        page.locator(f"input[name=_selected_action][value='{run.pk}']").check()
    page.locator("select[name=action]").select_option("compare_runs")
    page.locator("button[name=index]").click()  # the actions' submit button
    expect(page).to_have_url(live_server.url + f"/admin/toolcalling/evalrun/compare/{good.pk}/{bad.pk}/")
    status = page.locator("tr.eval-case", has_text="status")
    expect(status.locator("td").nth(1)).to_have_text("1/1 (1.00)")
    expect(status.locator("td").nth(2)).to_have_text("0/1 (0.00)")
    expect(status.locator(".change")).to_have_text("worse")
    expect(page.locator("tr.eval-case", has_text="orders").locator(".change")).to_have_text("same")

    page.goto(live_server.url + f"/admin/toolcalling/evalrun/{bad.pk}/change/")
    expect(page.locator("#results-group")).to_contain_text("'delivered' not in the answer")


def test_add_to_dataset_writes_a_case_that_passes(live_server, browser, shop, tmp_path):
    alice = get_user_model().objects.get(username="alice")
    target = tmp_path / "from-admin.yaml"
    with override_toolcalling(OFFLINE_MODEL=True, EVAL_DATASET=str(target)):
        conversation = Assistant.get("shop").run(alice, "Please cancel my order 20251120-0007").conversation
        page = browser.new_context().new_page()
        log_in(page, live_server.url + "/admin/toolcalling/conversation/", "admin", "admin-demo-pass", "Log in")
        page.locator(f"input[name=_selected_action][value='{conversation.pk}']").check()
        page.locator("select[name=action]").select_option("add_to_dataset")
        page.locator("button[name=index]").click()  # the actions' submit button
        expect(page.locator(".messagelist")).to_contain_text(f"1 cases written to {target}, which now holds 1.")

        [case] = yaml.safe_load(target.read_text())["cases"]
        assert case["inputs"] == {
            "assistant": "shop",
            "user": "alice",
            "messages": ["Please cancel my order 20251120-0007"],
            "decisions": {"cancel_order": "wait"},
        }
        _, summary = evaluate(load_dataset(str(target)))
        assert summary.all_passed, summary.outcomes


def test_add_to_dataset_downloads_the_cases_without_a_dataset_file(shop, client):
    alice = get_user_model().objects.get(username="alice")
    with override_toolcalling(OFFLINE_MODEL=True):
        conversation = Assistant.get("shop").run(alice, "Where is my order 20250719-0032?").conversation
    client.force_login(get_user_model().objects.get(username="admin"))
    response = client.post(
        "/admin/toolcalling/conversation/", {"action": "add_to_dataset", "_selected_action": [conversation.pk]}
    )
    assert response["Content-Disposition"] == 'attachment; filename="cases.yaml"'
    [case] = yaml.safe_load(response.content)["cases"]
    assert case["name"] == f"conversation-{conversation.pk}"
    assert case["evaluators"] == [
        {
            "ToolCalls": {
                "calls": [{"name": "get_order_status", "arguments": {"order_no": "20250719-0032"}}],
                "only": True,
            }
        }  # fmt: skip
    ]
