# SPDX-License-Identifier: MIT
# tests/python/quickstart.py -- the reference library's README quickstart
# with only its import line changed (`from rlm import RLM`); test_crlm.py
# runs it against `rlm sim-serve` (OPENAI_BASE_URL, OPENAI_API_KEY).
from crlm import RLM

rlm = RLM(
    backend="openai",
    backend_kwargs={"model_name": "gpt-5-nano"},
    verbose=True,  # For printing to console with rich, disabled by default.
)

print(rlm.completion("Print me the first 100 powers of two, each on a newline.").response)
