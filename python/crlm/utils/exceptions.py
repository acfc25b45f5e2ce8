# SPDX-License-Identifier: MIT
# python/crlm/utils/exceptions.py -- the reference's rlm.utils.exceptions
# (an alias of crlm.exceptions).
from ..exceptions import (BudgetExceededError, CallLimitExceededError, CancellationError,
                          ErrorThresholdExceededError, RLMArgumentError, RLMError,
                          TimeoutExceededError, TokenLimitExceededError)

__all__ = ['RLMError', 'BudgetExceededError', 'TimeoutExceededError',
           'TokenLimitExceededError', 'ErrorThresholdExceededError', 'CancellationError',
           'CallLimitExceededError', 'RLMArgumentError']
