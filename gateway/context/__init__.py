"""The context stage: pruned schema, rules, guideline, examples and value hints for one question."""

from gateway.context.build import build_context
from gateway.context.cache import SchemaCache
from gateway.context.model import Context, Example, Guideline, ValueHint, estimate_tokens
from gateway.context.snapshot import SchemaSnapshot
from gateway.context.sources import ExamplesSource, FileGuidelineSource, GuidelineSource, NoExamples

__all__ = [
    "Context",
    "Example",
    "ExamplesSource",
    "FileGuidelineSource",
    "Guideline",
    "GuidelineSource",
    "NoExamples",
    "SchemaCache",
    "SchemaSnapshot",
    "ValueHint",
    "build_context",
    "estimate_tokens",
]
