"""What one eval case says (``EvalInputs``) and what running it left behind (``Transcript``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Decision = Literal["approve", "reject", "wait", "cancel", "expire"]


class EvalInputs(BaseModel):
    """A case's inputs: who talks to which assistant, what they say, and how gated calls are decided."""

    model_config = ConfigDict(extra="forbid")

    assistant: str | None = None
    """The assistant's id; ``None``: the command's ``--assistant``."""
    user: str
    """The username the turns run as: an existing user, or one the case's ``fixtures`` load."""
    fixtures: list[str] = Field(default_factory=list)
    """Django fixtures (``loaddata`` names or paths) loaded inside the case's transaction, so rolled back too."""
    messages: list[str] = Field(default_factory=list)
    """The user's messages, one turn each, in one conversation."""
    message: str | None = None
    """A single message; shorthand for ``messages: [message]``."""
    decisions: dict[str, Decision] = Field(default_factory=dict)
    """How calls of gated tools are decided, by tool name: ``approve`` (the call runs), ``reject``, ``cancel`` (the
    user withdraws the waiting calls; the model is not asked until the next message), ``expire`` (the model is told
    the request expired) or ``wait``; a gated tool not named here waits. Only ``approve`` runs the tool."""
    reject_reason: str = ""
    """The reason a rejection gives the model."""
    approver: str | None = None
    """The username who decides gated calls; ``None``: a staff user made for the case (rolled back with it)."""

    @model_validator(mode="after")
    def _one_list_of_messages(self) -> EvalInputs:
        if self.message is not None:
            if self.messages:
                raise ValueError("give either message or messages, not both")
            self.messages = [self.message]
            self.message = None
        if not self.messages:
            raise ValueError("a case needs a message (message or messages)")
        return self


class ObservedCall(BaseModel):
    """One tool call the model asked for during a case, as it ended."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    status: str = ""
    result: str = ""


class Transcript(BaseModel):
    """What a case's turns left behind, read before its transaction was rolled back."""

    reply: str = ""
    """The last plain answer of the last turn."""
    output: dict[str, Any] | None = None
    """The structured output of the last turn, when the assistant asks for one."""
    tool_calls: list[ObservedCall] = Field(default_factory=list)
    turns: int = 0
    """How many answers the model gave (each model request counts once)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost: str | None = None
    """The conversation's cost as a decimal string, when the site prices its model."""
    status: str = ""
    """The conversation's status after the last turn."""
    error: str = ""
    """Why a turn failed (a ``TurnError``), else empty."""
