"""The engine: a turn (``Turn``, whose ``iter()`` is the one loop), one call's path, the fan-out to signals,
events and telemetry, memory and structured output. It knows tools and model APIs, never HTTP or
approvals. It exports what the packages above it use; everything else is private."""

from ._calls import run_approved_call
from ._drivers import (
    INTERRUPTED,
    Stepper,
    TurnResult,
    arun_turn,
    call_directly,
    continue_turn,
    conversation_for,
    drive,
    resume_stale_turn,
    run_claimed_turn,
    run_turn,
    stop_turn,
)
from ._observers import Listener, describe_call
from ._queue import CONTINUE_CONVERSATION, RUN_APPROVED_TOOL_CALL, RUN_TURN, enqueue
from ._structured import OutputSpec
from ._turn import Turn, tool_definitions
from ._turn_loop import start as start_on_turn_loop

__all__ = [
    "CONTINUE_CONVERSATION",
    "INTERRUPTED",
    "RUN_APPROVED_TOOL_CALL",
    "RUN_TURN",
    "Listener",
    "OutputSpec",
    "Stepper",
    "Turn",
    "TurnResult",
    "arun_turn",
    "call_directly",
    "continue_turn",
    "conversation_for",
    "describe_call",
    "drive",
    "enqueue",
    "run_approved_call",
    "run_claimed_turn",
    "resume_stale_turn",
    "run_turn",
    "start_on_turn_loop",
    "stop_turn",
    "tool_definitions",
]
