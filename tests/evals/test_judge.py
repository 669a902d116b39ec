"""``AnswerJudge``: pydantic-evals' LLM judge asks the site's model endpoint, here the strict local server."""

import json

import pytest
from pydantic_evals import Case, Dataset

from toolcalling.evals import AnswerJudge, EvalInputs, Transcript, evaluate
from toolcalling.exceptions import ImproperlyDefined
from toolcalling.testing import ScriptedModel
from toolcalling.testutils import override_model, override_toolcalling

RUBRIC = "The answer tells the customer their order has shipped."


def dataset(**judge):
    inputs = EvalInputs(assistant="shop", user="alice", message="Has my order 20250719-0032 shipped?")
    return Dataset[EvalInputs, Transcript, None](
        name="judged", cases=[Case(name="shipped", inputs=inputs, evaluators=[AnswerJudge(RUBRIC, **judge)])]
    )


@pytest.mark.parametrize("verdict", [True, False])
def test_the_judge_grades_the_answer_on_the_sites_endpoint(shop, verdict):
    with override_model(ScriptedModel(), MODEL="judge-model") as model:
        model.reply("It shipped on 20 July and arrives on the 23rd.")
        reason = "It says the order shipped." if verdict else "It does not mention shipping."
        model.call("final_result", {"reason": reason, "pass": verdict, "score": 1.0 if verdict else 0.0})
        _, summary = evaluate(dataset(include_input=True))
        model.assert_done()  # both requests passed the strict server's rules
    [outcome] = summary.outcomes
    assert outcome.passed is verdict
    assert outcome.failures == ([] if verdict else [f"AnswerJudge: {reason}"])
    judged = model.requests[1]
    assert judged["model"] == "judge-model"
    prompt = json.dumps(judged["messages"])
    assert RUBRIC in prompt and "It shipped on 20 July" in prompt and "Has my order 20250719-0032 shipped?" in prompt


@override_toolcalling(OFFLINE_MODEL=True)
def test_the_offline_model_cannot_judge(shop):
    _, summary = evaluate(dataset())
    [outcome] = summary.outcomes
    assert not outcome.passed
    assert "AnswerJudge needs a real model" in outcome.failures[0]
    with pytest.raises(ImproperlyDefined):
        from toolcalling.evals._judge import site_judge_model

        site_judge_model()
