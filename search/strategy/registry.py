"""The registry of search strategies (``"evolutionary"``, ``"random"``)."""
from ..registry import Registry

STRATEGIES = Registry("search strategy")
