# SPDX-License-Identifier: MIT
# python/crlm/exceptions.py -- the reference library's exceptions (same
# names, arguments and attributes as rlm.utils.exceptions), raised when a
# limit stops a solve, and RLMError for a solve that failed.


class RLMError(Exception):
    """A solve that failed (the model's endpoint, the sandbox, bad
    arguments the C side refused): the message is the C side's. Every
    exception of this package derives from it."""

    def __init__(self, message, code=None, result=None):
        super().__init__(message)
        self.message = message
        self.code = code          # "RLM_EHTTP", ... or None
        self.result = result      # the C result object (a dict) or None


class RLMArgumentError(RLMError, ValueError):
    """Ours: the C side refused what a completion was given (a context
    that does not load, such as a missing file; an option it cannot use).
    Also a ValueError."""


class BudgetExceededError(RLMError):
    """max_budget (USD) was spent, or the next call could pass it. Ours:
    partial_answer (the reference's has none)."""

    def __init__(self, spent, budget, message=None):
        self.spent = spent
        self.budget = budget
        self.partial_answer = None
        super().__init__(message or 'budget exceeded: spent $%.6f of $%.6f' % (spent, budget))


class TimeoutExceededError(RLMError):
    """max_timeout (seconds) passed; partial_answer is the best answer so
    far (answer["content"]) or None."""

    def __init__(self, elapsed, timeout, partial_answer=None, message=None):
        self.elapsed = elapsed
        self.timeout = timeout
        self.partial_answer = partial_answer
        super().__init__(message or 'timeout exceeded: %.1fs of %.1fs' % (elapsed, timeout))


class TokenLimitExceededError(RLMError):
    """max_tokens (input + output tokens of every call) was used."""

    def __init__(self, tokens_used, token_limit, partial_answer=None, message=None):
        self.tokens_used = tokens_used
        self.token_limit = token_limit
        self.partial_answer = partial_answer
        super().__init__(message or 'token limit exceeded: %d of %d tokens' %
                         (tokens_used, token_limit))


class ErrorThresholdExceededError(RLMError):
    """max_errors consecutive turns whose code failed."""

    def __init__(self, error_count, threshold, last_error=None, partial_answer=None,
                 message=None):
        self.error_count = error_count
        self.threshold = threshold
        self.last_error = last_error
        self.partial_answer = partial_answer
        super().__init__(message or 'error threshold exceeded: %d consecutive errors (limit %d)'
                         % (error_count, threshold))


class CancellationError(RLMError):
    """The solve was cancelled: cancel(), KeyboardInterrupt, or the
    cancellation of the asyncio task of acompletion()."""

    def __init__(self, partial_answer=None, message=None):
        self.partial_answer = partial_answer
        super().__init__(message or 'execution cancelled')


class CallLimitExceededError(RLMError):
    """Ours: max_calls (model calls at any depth) was reached."""

    def __init__(self, calls, limit, partial_answer=None, message=None):
        self.calls = calls
        self.limit = limit
        self.partial_answer = partial_answer
        super().__init__(message or 'call limit exceeded: %d of %d model calls' % (calls, limit))
