# SPDX-License-Identifier: MIT
# python/crlm/logger/__init__.py -- the reference's rlm.logger: RLMLogger.
from .rlm_logger import RLMLogger

__all__ = ['RLMLogger']
