"""Every finding code the safety check can emit, with a one-line description: the ``safety`` family of the
one registry of finding codes, :data:`gateway.findings.CODES`.

Codes are stable API: clients, metrics (``nl2sql_safety_blocks_total{code=...}``) and reflection prompts
key on them. Register a code in :mod:`gateway.findings` before any rule emits it; a test checks that rules
only emit registered codes.
"""

from __future__ import annotations

from gateway.findings import codes_of

CODES: dict[str, str] = codes_of("safety")
