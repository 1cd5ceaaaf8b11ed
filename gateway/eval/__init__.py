"""Evaluation harness: execution accuracy (EX) of the question pipeline, per scenario, on a question set.

See ``docs/evaluation.md``. The pieces, in the order a run uses them: :mod:`questions` (JSONL sets),
:mod:`scenarios` (reflection mode x guideline), :mod:`pipeline` (the real gateway, opened like ``serve``),
:mod:`runner` (concurrency, durable results), :mod:`score` (gold execution, EX), :mod:`report`,
:mod:`markdown` and :mod:`charts` (the report folder), :mod:`compare` (two runs), :mod:`collect`
(failures -> corrections), :mod:`session` and :mod:`cli` (the command).
"""

from gateway.eval.questions import Question, QuestionSetError, load_questions, shipped
from gateway.eval.runfolder import RunFolder
from gateway.eval.scenarios import Scenario, matrix, parse_scenario

__all__ = ["Question", "QuestionSetError", "RunFolder", "Scenario", "load_questions", "matrix", "parse_scenario",
           "shipped"]
