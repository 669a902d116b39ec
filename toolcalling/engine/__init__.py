"""The engine: a turn (``Turn``), one call's path, the model client, the fan-out to hooks, signals, events and
telemetry, storage, memory and structured output. It knows tools and models, never HTTP or approvals."""

from ._calls import CallPath, Limits, run_approved_call, run_tool
from ._client import ModelClient, build_openai_client, get_client
from ._direct import call_directly
from ._observers import Listener, Observers, describe_call
from ._queue import CONTINUE_CONVERSATION, RUN_APPROVED_TOOL_CALL, RUN_TURN, enqueue
from ._replies import ModelReply, RequestedCall, Usage
from ._runner import (
    Step,
    Stepper,
    TurnResult,
    continue_turn,
    conversation_for,
    run_claimed_turn,
    run_turn,
)
from ._stop import stop_turn
from ._storage import (
    answer_call_if,
    close_open_calls,
    load_messages,
    send_post_save,
    set_status,
    to_openai,
    update_call_if,
)
from ._structured import OutputSpec
from ._turn import Turn, tool_definitions

__all__ = [
    "CONTINUE_CONVERSATION",
    "RUN_APPROVED_TOOL_CALL",
    "RUN_TURN",
    "CallPath",
    "Limits",
    "Listener",
    "ModelClient",
    "ModelReply",
    "Observers",
    "OutputSpec",
    "RequestedCall",
    "Step",
    "Stepper",
    "Turn",
    "TurnResult",
    "Usage",
    "answer_call_if",
    "build_openai_client",
    "call_directly",
    "close_open_calls",
    "continue_turn",
    "conversation_for",
    "describe_call",
    "enqueue",
    "get_client",
    "load_messages",
    "run_approved_call",
    "run_claimed_turn",
    "run_tool",
    "run_turn",
    "send_post_save",
    "set_status",
    "stop_turn",
    "to_openai",
    "tool_definitions",
    "update_call_if",
]
