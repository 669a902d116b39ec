"""Assistants of the attachment tests: earlier turns kept as question and answer, and a small token budget."""

from toolcalling import Assistant


class FinalFilesAssistant(Assistant):
    id = "files_final"
    instructions = "You read files; earlier turns as question and answer."
    tools = ["attached_files"]
    memory = "final"


class BudgetFilesAssistant(Assistant):
    id = "files_budget"
    instructions = "You read files within a small budget."
    tools = ["attached_files"]
    history_max_tokens = 1000  # less than one image's estimate (1,600 tokens)
