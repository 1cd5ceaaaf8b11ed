"""Static safety check: is this SQL a single read-only query that may run? No I/O, never raises.

>>> from gateway.safety import check
>>> check("SELECT * FROM orders FOR UPDATE").codes
['locking_clause']
"""

from gateway.safety.check import check
from gateway.safety.codes import CODES
from gateway.safety.model import Finding, Verdict
from gateway.safety.policy import Policy

__all__ = ["CODES", "Finding", "Policy", "Verdict", "check"]
