# SPDX-License-Identifier: MIT
# python/crlm/utils/__init__.py -- the reference's rlm.utils (exceptions).
