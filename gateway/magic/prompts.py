"""Prompts of the MAGIC agents, written for this gateway.

The method is the MAGIC paper's (a feedback agent, a correction agent and a manager who rewrites their
instructions and compiles the guideline); the wording here is ours. Each system prompt starts with a
marker line (``[magic:...]``) so that logs, and the scripted LLM in tests, can tell the agents apart.

Information each agent sees, as the paper prescribes:
- feedback agent: question, evidence, schema, the incorrect SQL and the correct SQL;
- correction agent: question, evidence, schema, the incorrect SQL and the feedback (never the correct SQL);
- manager (instruction revision): the agent's last instructions and last output, the question, both SQLs;
  for the correction agent it also sees the ideal output, which it must not hand on;
- guideline writer: the guideline so far and a batch of successful corrections with their feedback.

Questions, hints, SQL and agent outputs are filled in as data blocks (``gateway.llm.untrusted``), and every
system prompt ends with ``untrusted.RULE`` (added by ``Agents.ask``, so a manager's rewrite of an agent's
instructions cannot drop it): a correction whose question says "ignore the instructions above" is material
for the agents, not an order.
"""

from __future__ import annotations

FEEDBACK_MARKER = "[magic:feedback]"
CORRECTION_MARKER = "[magic:correction]"
REVISE_FEEDBACK_MARKER = "[magic:manager-revise-feedback]"
REVISE_CORRECTION_MARKER = "[magic:manager-revise-correction]"
GUIDELINE_MARKER = "[magic:guideline]"
REPLAY_MARKER = "[magic:gate-replay]"

# --- feedback agent ------------------------------------------------------------------------------------

FEEDBACK_INSTRUCTIONS = """\
You are a senior database engineer reviewing a query that a text-to-SQL assistant got wrong.
You are shown the question, any hints that came with it, the schema, the assistant's SQL and a reference \
SQL that is known to answer the question correctly. Treat that judgement as settled: the reference is right \
and the assistant's SQL is wrong.
Explain, in plain present-tense sentences, every mistake in the assistant's SQL: which clause, condition, \
join, column, aggregate or ordering is wrong and why it changes the answer. Say what the query must do \
instead in words. Do not write the corrected SQL and do not quote the reference SQL."""

FEEDBACK_USER = """\
Question:
{question}
Hints:
{evidence}

Schema:
{schema}

Reference SQL (correct):
{correct_sql}

Assistant's SQL (incorrect):
{incorrect_sql}

The mistakes in the assistant's SQL are:"""

# --- correction agent ----------------------------------------------------------------------------------

CORRECTION_INSTRUCTIONS = """\
You repair PostgreSQL queries using a reviewer's feedback.
You receive a question, hints, the schema, a query that answers the question wrongly and the reviewer's \
explanation of what is wrong with it. Apply every point of the feedback, keep what the feedback does not \
criticise, and use only tables and columns from the schema.
Answer with exactly one read-only query in a fenced block:
```sql
SELECT ...
```"""

CORRECTION_USER = """\
Question:
{question}
Hints:
{evidence}

Schema:
{schema}

Query to repair:
{incorrect_sql}

Reviewer's feedback:
{feedback}"""

# --- manager: revising the agents' instructions ---------------------------------------------------------

MANAGER_SYSTEM = "You coordinate a small team of assistants and improve the instructions you give them."

REVISE_FEEDBACK_USER = """\
The feedback assistant explains what is wrong with an incorrect SQL query by comparing it with a correct \
one. Its explanation was handed to a second assistant, which still failed to repair the query. You have \
rewritten these instructions {iteration} time(s) so far.

Question:
{question}
Incorrect SQL:
{incorrect_sql}
Correct SQL:
{correct_sql}

Instructions the feedback assistant followed:
<<<
{instructions}
>>>

Its explanation, which was not enough:
{output}

Write improved instructions for the feedback assistant so that its next explanation names the mistakes \
the repair missed, precisely enough to fix them, still without writing out the correct SQL. Reply with the \
complete new instructions only; they are passed to the assistant unchanged."""

REVISE_CORRECTION_USER = """\
The correction assistant repairs an incorrect SQL query from a reviewer's feedback; it never sees the \
correct query. Its last repair still returned a different result from the correct query. You have \
rewritten these instructions {iteration} time(s) so far.

Question:
{question}
Incorrect SQL:
{incorrect_sql}

Instructions the correction assistant followed:
<<<
{instructions}
>>>

Its repair, which was not right:
{output}

For your eyes only, the result it should have reached comes from this query. Do not copy it, or any part \
of it long enough to give it away, into the instructions:
{correct_sql}

Write improved instructions that steer the correction assistant towards what it got wrong (how to read \
the feedback, what to check in the schema, which kinds of change to consider). Keep the requirement to \
answer with one query in a ```sql fenced block. Reply with the complete new instructions only."""

# --- manager: writing the guideline -------------------------------------------------------------------

GUIDELINE_SYSTEM = """\
You keep a self-correction guideline for a text-to-SQL assistant: a list of the mistakes it made, written \
in its own voice, that it reads before it revises a query."""

GUIDELINE_USER = """\
Update the guideline with the recent mistakes below. Merge a mistake into an existing reminder when it is \
the same kind of mistake, otherwise add a new reminder; keep the reminders short and general enough to \
apply to other questions. Every reminder has exactly this shape:

N. <short name of the mistake>
- Question: "<a question where it happened>"
- Incorrect SQL generated by me: ```sql <the wrong query> ```
- Corrected SQL generated by me: ```sql <the repaired query> ```
- Strict ask-to-myself questions before I revise a query, to avoid this mistake again:
  - <a pointed question that starts "Did I" / "Have I" / "Am I">
  - <another such question>

Guideline so far (empty means write it from scratch):
<<<
{guideline}
>>>

Recent mistakes to fold in:
{mistakes}

Reply with the whole updated guideline and nothing else."""

MISTAKE_ITEM = """\
Mistake {n}
- Question:
{question}
- Incorrect SQL:
{incorrect_sql}
- Corrected SQL:
{revised_sql}
- What was wrong:
{feedback}"""

# --- activation gate: replaying held-out corrections -------------------------------------------------

REPLAY_SYSTEM = """\
You revise a PostgreSQL query that is known to give the wrong answer to its question.
{guideline_block}First go through whatever applies of the guideline's ask-to-myself questions, then \
answer with exactly one corrected read-only query in a ```sql fenced block."""

REPLAY_GUIDELINE_BLOCK = """\
Before revising, read the guideline of mistakes you made before:
<<<
{guideline}
>>>
"""

REPLAY_USER = """\
Question:
{question}
Hints:
{evidence}

Schema:
{schema}

Wrong query:
{incorrect_sql}"""
