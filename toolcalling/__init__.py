"""django-toolcalling: your site's Python functions as tools for an LLM assistant."""

from django.utils.module_loading import autodiscover_modules

from .assistant import Assistant
from .toolkit import ClientTool, ToolContext, tool

__version__ = "0.1.0"  # the one place the version is written; pyproject.toml reads it

__all__ = ["Assistant", "ClientTool", "ToolContext", "__version__", "autodiscover", "tool"]


def autodiscover() -> None:
    """Import every installed app's ``tools.py``, then its ``assistants.py`` (assistants may name tools)."""
    from .toolkit import assistants, tools

    autodiscover_modules("tools", register_to=tools)
    autodiscover_modules("assistants", register_to=assistants)
