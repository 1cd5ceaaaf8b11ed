"""A scripted model that answers every question of a question set with its gold SQL, served over HTTP.

For measuring validation itself: with this model every first attempt is right, so any reflection or
``suspicious`` answer in an ``eval`` run is a false alarm of the result checks. Generation, reflection and
guideline reviews all answer the gold SQL (the first alternative) of the question found in the prompt (the
longest question text found wins, so a question that is a prefix of another cannot confuse it).

    python -m gateway.testing.gold_llm demo --port 8765     # then OPENAI_BASE_URL=http://127.0.0.1:8765/v1
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

from gateway.eval.questions import Question, load_questions, shipped
from gateway.testing.scripted_llm import LLMRequest, ScriptedLLM

__all__ = ["answer_gold", "main"]


def answer_gold(llm: ScriptedLLM, questions: list[Question]) -> None:
    """Script ``llm`` to answer each question's first gold SQL whatever it is asked about that question."""
    by_text = sorted(questions, key=lambda q: len(q.question), reverse=True)

    def rule(request: LLMRequest) -> str | None:
        q = next((q for q in by_text if q.question in request.text), None)
        return None if q is None else f"<thinking>the gold SQL</thinking>\n<sql>{q.gold_sql[0]}</sql>"

    llm.add(rule)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("questions", help="JSONL question set, or the name of a shipped set (demo)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free port)")
    args = parser.parse_args(argv)
    path = Path(args.questions)
    llm = ScriptedLLM(model="gold", port=args.port)
    answer_gold(llm, load_questions(path if path.is_file() else shipped(args.questions)))
    llm.start()
    print(f"gold-answering model at {llm.base_url} (model name: gold); Ctrl-C or SIGTERM stops it", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        llm.stop()


if __name__ == "__main__":
    main()
