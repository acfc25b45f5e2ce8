# SPDX-License-Identifier: MIT
# python/crlm/core/types.py -- the reference's rlm.core.types (an alias of
# crlm.types).
from ..types import ModelUsageSummary, RLMChatCompletion, UsageSummary

__all__ = ['RLMChatCompletion', 'UsageSummary', 'ModelUsageSummary']
