"""``manage.py toolcalling_eval`` on the demo shop with the offline model: exit codes, the table and the reports."""

import json
from io import StringIO
from xml.etree import ElementTree

import pytest
from django.core.management import call_command

from toolcalling import Assistant
from toolcalling.models import EvalCaseResult, EvalRun
from toolcalling.testing import ScriptedModel
from toolcalling.testutils import override_model, override_toolcalling

DATASET = """
    name: shop
    cases:
      - name: status
        inputs: {assistant: shop, user: alice, message: "Where is my order 20250719-0032?"}
        evaluators:
          - ToolCalls: {calls: [{name: get_order_status, arguments: {order_no: "20250719-0032"}}], only: true}
          - AnswerContains: shipped
          - AnswerMatches: "ETA is 2025-07-2\\\\d"
      - name: wrong_answer
        inputs: {assistant: shop, user: alice, message: "Where is my order 20250719-0032?"}
        evaluators:
          - AnswerContains: delivered yesterday
    evaluators:
      - Limits: {turns: 3, tool_calls: 2}
"""


def run(path, *args):
    out = StringIO()
    try:
        call_command("toolcalling_eval", path, *args, stdout=out)
    except SystemExit as exit:
        return exit.code, out.getvalue()
    return 0, out.getvalue()


@override_toolcalling(OFFLINE_MODEL=True)
def test_a_failing_case_exits_1_and_the_reports_say_which(shop, dataset_file, tmp_path):
    path = dataset_file(DATASET)
    code, out = run(path, "--report", str(tmp_path / "r.json"), "--report", str(tmp_path / "r.xml"),
                    "--report", str(tmp_path / "r.html"))  # fmt: skip
    assert code == 1
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith(("status", "wrong"))}
    assert lines["status"][1:4] == ["yes", "1.00", "get_order_status"]
    assert lines["wrong_answer"][1] == "NO"
    assert "wrong_answer: AnswerContains: 'delivered yesterday' not in the answer" in out
    assert "1/2 passed (50%)" in out

    report = json.loads((tmp_path / "r.json").read_text())
    assert (report["runs"], report["passed"], report["pass_rate"]) == (2, 1, 0.5)
    by_name = {o["name"]: o for o in report["outcomes"]}
    assert by_name["status"]["passed"] and by_name["status"]["tool_calls"] == ["get_order_status"]
    assert by_name["wrong_answer"]["score"] == 0.5  # the dataset's Limits held, its AnswerContains did not
    assert by_name["status"]["tokens"] > 0

    suite = ElementTree.parse(tmp_path / "r.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == ["wrong_answer"]
    html = (tmp_path / "r.html").read_text()
    assert '<tr class="failed"><td>wrong_answer</td>' in html and "1/2 passed" in html

    stored = EvalRun.objects.get()
    assert (stored.name, stored.cases, stored.passed, stored.pass_rate) == ("shop", 2, 1, 0.5)
    assert set(EvalCaseResult.objects.filter(run=stored).values_list("case", "passed")) == {
        ("status", True),
        ("wrong_answer", False),
    }


@override_toolcalling(OFFLINE_MODEL=True)
def test_every_case_passing_exits_0_and_repeat_gives_pass_rates(shop, dataset_file):
    path = dataset_file(DATASET.split("      - name: wrong_answer")[0])
    code, out = run(path, "--repeat", "2", "--concurrency", "2", "--no-store")
    assert code == 0, out
    assert "status [1/2]" in out and "status [2/2]" in out
    assert "2/2 passed (100%)" in out and "status: 2/2 (100%)" in out
    assert not EvalRun.objects.exists()


@override_toolcalling(OFFLINE_MODEL=True)
def test_the_assistant_option_serves_cases_that_name_none(shop, dataset_file):
    path = dataset_file(
        """
        cases:
          - name: search
            inputs: {user: alice, message: "Search the catalogue for mug"}
            evaluators:
              - ToolCalls: {calls: [{name: search_products}]}
        """
    )
    assert run(path, "--assistant", "shop", "--no-store")[0] == 0
    with pytest.raises(Exception, match="The cases search name no assistant"):
        run(path, "--no-store")


def test_a_report_must_be_json_html_or_xml(shop, dataset_file):
    with pytest.raises(Exception, match="not 'r.txt'"):
        run(dataset_file(DATASET), "--report", "r.txt")


def test_model_and_api_options_replace_the_assistants_own_for_the_run(shop, dataset_file):
    path = dataset_file(
        """
        cases:
          - name: hello
            inputs: {assistant: shop, user: alice, message: Hello}
            evaluators: [{AnswerContains: Hi}]
        """
    )
    with override_model(ScriptedModel()) as model:
        model.reply("Hi Alice.")
        assert run(path, "--model", "other-model", "--api", "responses", "--no-store")[0] == 0
        model.assert_done()
    assert model.requests[0]["model"] == "other-model" and "input" in model.requests[0]  # the Responses API
    shop_assistant = Assistant.get("shop")
    assert (shop_assistant.get_model(), shop_assistant.get_api()) == ("test-model", "chat_completions")
