"""The semantic layer: named metrics, dimensions and synonyms with exact SQL definitions (see model.py)."""

from gateway.semantic.compile import CompiledQuery, MetricQuery, SemanticQueryError, compile_query
from gateway.semantic.model import SemanticModel
from gateway.semantic.registry import SemanticRegistry

__all__ = ["CompiledQuery", "MetricQuery", "SemanticModel", "SemanticQueryError", "SemanticRegistry",
           "compile_query"]
