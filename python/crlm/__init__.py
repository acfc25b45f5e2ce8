# SPDX-License-Identifier: MIT
# python/crlm/__init__.py -- crlm: Recursive Language Models from Python on
# librlm, with the reference library's API (`from rlm import RLM` becomes
# `from crlm import RLM`). docs/python.md has the migration table.
from ._lib import version as lib_version
from .core.rlm import RLM
from .exceptions import (BudgetExceededError, CallLimitExceededError, CancellationError,
                         ErrorThresholdExceededError, RLMArgumentError, RLMError,
                         TimeoutExceededError, TokenLimitExceededError)
from .logger import RLMLogger
from .types import ModelUsageSummary, RLMChatCompletion, UsageSummary

# The version of rlm this package is part of (common/common.h's RLM_VERSION).
__version__ = '0.1.0'

__all__ = ['RLM', 'RLMChatCompletion', 'UsageSummary', 'ModelUsageSummary', 'RLMLogger',
           'RLMError', 'BudgetExceededError', 'TimeoutExceededError',
           'TokenLimitExceededError', 'ErrorThresholdExceededError', 'CancellationError',
           'CallLimitExceededError', 'RLMArgumentError', 'lib_version', '__version__']
