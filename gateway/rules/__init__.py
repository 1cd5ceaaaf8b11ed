"""DBA rules per database (``rules/<database>.yaml`` or ``rules/<database>/*.yaml``).

Descriptions and instructions reach the LLM's prompts; hidden tables and columns are left out of every
prompt and schema answer and blocked by the safety check; required conditions and result checks become
``rule_violation`` findings; extra functions and limits adjust the database's safety policy.
"""

from gateway.rules.check import check_rules
from gateway.rules.conditions import missing_conditions
from gateway.rules.findings import rule_findings
from gateway.rules.loading import RuleProblem, load_ruleset, rule_files
from gateway.rules.model import RequiredCondition, ResultCheck, RuleSet
from gateway.rules.registry import RulesRegistry
from gateway.rules.visibility import visible_schema

__all__ = [
    "RequiredCondition",
    "ResultCheck",
    "RuleProblem",
    "RuleSet",
    "RulesRegistry",
    "check_rules",
    "load_ruleset",
    "missing_conditions",
    "rule_files",
    "rule_findings",
    "visible_schema",
]
