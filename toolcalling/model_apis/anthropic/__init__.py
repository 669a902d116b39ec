"""Anthropic's Messages API, through the official ``anthropic`` SDK (the ``[anthropic]`` extra): its clients
(``_clients``), its requests (``_api``) and the strict reading of its answers and event streams (``_reading``).
Imported only when an assistant names it; without the SDK the import says which extra installs it.
"""

from ._api import Anthropic

__all__ = ["Anthropic"]
