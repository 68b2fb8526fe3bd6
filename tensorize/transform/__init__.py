"""Passes (placeholder while the package is being written)."""
from .pass_infra import *  # noqa
