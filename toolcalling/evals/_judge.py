"""``AnswerJudge``: pydantic-evals' LLM judge with a rubric, asking the site's own model endpoint
(``TOOLCALLING["BASE_URL"]`` and ``API_KEY``) unless the case names another pydantic-ai model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext
from pydantic_evals.evaluators.llm_as_a_judge import judge_input_output, judge_output

from ..conf import toolcalling_settings
from ..exceptions import ImproperlyDefined
from ._cases import EvalInputs, Transcript


def site_judge_model(model_name: str | None = None) -> Any:
    """A pydantic-ai model on the site's Chat Completions endpoint: ``model_name``, else ``TOOLCALLING["MODEL"]``."""
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    s = toolcalling_settings
    if s.OFFLINE_MODEL:
        # The offline model matches keywords; it cannot read a rubric, so a judged case would pass by accident.
        raise ImproperlyDefined("AnswerJudge needs a real model: TOOLCALLING['OFFLINE_MODEL'] is on.")
    client = AsyncOpenAI(api_key=s.API_KEY, base_url=s.BASE_URL, timeout=s.TIMEOUT, max_retries=s.MAX_RETRIES)
    return OpenAIChatModel(model_name or s.MODEL, provider=OpenAIProvider(openai_client=client))


@dataclass
class AnswerJudge(Evaluator[EvalInputs, Transcript, Any]):
    """A model grades the final answer against ``rubric`` (with the user's messages when ``include_input``).

    ``model``: a model name on the site's endpoint (default ``TOOLCALLING["MODEL"]``), or a pydantic-ai model
    string with its provider prefix (``"openai:gpt-5.2"``, ``"anthropic:..."``) to judge elsewhere."""

    rubric: str
    model: str | None = None
    include_input: bool = False

    async def evaluate(self, ctx: EvaluatorContext[EvalInputs, Transcript, Any]) -> EvaluationReason:
        judge: Any = self.model if self.model and ":" in self.model else site_judge_model(self.model)
        if self.include_input:
            grade = await judge_input_output("\n\n".join(ctx.inputs.messages), ctx.output.reply, self.rubric, judge)
        else:
            grade = await judge_output(ctx.output.reply, self.rubric, judge)
        return EvaluationReason(grade.pass_, grade.reason)
