"""The question pipeline behind ``POST /v1/ask``, one module per stage, in the order a question meets them:

- :mod:`~gateway.pipeline.question`: what is asked (database, question, evidence, caps, the caller's role);
- context: :func:`gateway.context.build_context` (pruned schema, rules, examples, guideline);
- :mod:`~gateway.pipeline.generate`: the LLM drafts SQL (:mod:`~gateway.pipeline.prompts` holds the words);
- :mod:`~gateway.pipeline.check`: the static safety check (:mod:`gateway.safety`), before anything runs;
- :mod:`~gateway.pipeline.execute`: guarded execution (:mod:`gateway.execute`);
- :mod:`~gateway.pipeline.validate`: findings about the result (and :mod:`~gateway.pipeline.judge`, an
  optional LLM verdict);
- :mod:`~gateway.pipeline.candidates`: with ``ask.candidates`` > 1, several first drafts at once, each checked,
  run and validated, the answer chosen from the largest group that agrees on the result;
- :mod:`~gateway.pipeline.reflect`: the LLM reviews its attempts and their findings;
- :mod:`~gateway.pipeline.respond`: the best attempt becomes the answer, with its trace.

:mod:`~gateway.pipeline.loop` runs them; :mod:`~gateway.pipeline.conversation` puts a question in its
conversation (earlier turns in, this turn stored) and :mod:`~gateway.pipeline.clarify` reads a clarifying
question the model may ask instead of SQL; :mod:`~gateway.pipeline.verified` answers exact matches of
verified examples without the LLM; :mod:`~gateway.pipeline.stream` turns attempts into server-sent events;
:mod:`~gateway.pipeline.tally` records metrics and log lines; :mod:`~gateway.pipeline.token_budget` checks the
owner's daily LLM tokens before the LLM is called and counts what each answer used.
"""

from gateway.pipeline.conversation import Thread, ask, open_thread
from gateway.pipeline.loop import llm_for
from gateway.pipeline.question import Question
from gateway.pipeline.respond import Answer, Attempt, corrections_of
from gateway.pipeline.stream import ask_events

__all__ = ["Answer", "Attempt", "Question", "Thread", "ask", "ask_events", "corrections_of", "llm_for", "open_thread"]
