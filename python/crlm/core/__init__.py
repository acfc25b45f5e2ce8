# SPDX-License-Identifier: MIT
# python/crlm/core/__init__.py -- the reference's rlm.core: RLM and its types.
from .rlm import RLM
from ..types import ModelUsageSummary, RLMChatCompletion, UsageSummary

__all__ = ['RLM', 'RLMChatCompletion', 'UsageSummary', 'ModelUsageSummary']
