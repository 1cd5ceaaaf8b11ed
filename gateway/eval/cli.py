"""``nl2sql-gateway eval``: run a question set, compare runs, rebuild a report.

``eval QUESTIONS.jsonl`` is short for ``eval run QUESTIONS.jsonl`` (the group runs ``run`` when its first
argument is not one of its commands).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from gateway import extras
from gateway.cli_style import CLI_STYLE
from gateway.eval.questions import Question, QuestionSetError, load_questions, question_set_digest, shipped
from gateway.eval.runfolder import RunFolder, RunFolderError, new_run_id
from gateway.eval.scenarios import DEFAULT_GUIDELINES, DEFAULT_REFLECTIONS, Scenario, ScenarioError, matrix
from gateway.settings import ConfigError, Settings, load_settings


class _RunByDefault(TyperGroup):
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's own (vendored) click Context
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


eval_app = typer.Typer(
    **CLI_STYLE,
    cls=_RunByDefault, no_args_is_help=True, add_completion=False,
    help="Measure accuracy: run a question set through the pipeline and score execution accuracy (EX). "
         "`eval QUESTIONS.jsonl` runs it; `eval compare A B` compares two runs; `eval report RUN` rebuilds a report; "
         "`eval replay` replays the verified set under a change (guideline, model, rules) and lists regressions.",
)

RunsDir = Annotated[Path, typer.Option("--runs-dir", help="Folder that holds one sub-folder per run.")]


def _split(values: list[str] | None, default: tuple[str, ...]) -> list[str]:
    items = [part.strip() for value in (values or []) for part in value.split(",") if part.strip()]
    return items or list(default)


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(message, err=True)
    return typer.Exit(code)


def _load_settings(config: Path | None) -> Settings:
    if config is not None:
        os.environ["NL2SQL_CONFIG"] = str(config)
    try:
        return load_settings()
    except ConfigError as exc:
        raise _fail(f"configuration error: {exc}") from exc


def _questions_path(value: str) -> Path:
    path = Path(value)
    if path.is_file():
        return path
    try:
        return shipped(value)  # "demo": the set that ships with the package
    except QuestionSetError:
        raise _fail(f"{value}: no such file (and no shipped question set by that name)") from None


@eval_app.command("run")
def run_command(
    questions_file: Annotated[str, typer.Argument(metavar="QUESTIONS", help="JSONL question set, or the name of "
                                                  "a shipped set (demo).")],
    config: Annotated[Path | None, typer.Option("--config", "-c", exists=True, dir_okay=False,
                                                   envvar="NL2SQL_CONFIG", help="TOML config file.")] = None,
    run_id: Annotated[str | None, typer.Option(help="Run id; an existing run with this id is resumed "
                                                  "(finished pairs are skipped). Default: a new timestamp.")] = None,
    runs_dir: RunsDir = Path("eval-runs"),
    reflection: Annotated[list[str] | None, typer.Option(
        help="Reflection modes, comma-separated or repeated: first_pass, errors, suspicious, all, gold_first "
             "(the first attempt is the gold SQL: measures how often validation flags right answers). "
             "Default: first_pass,errors,suspicious (first_pass with --collect-corrections).")] = None,
    guideline: Annotated[list[str] | None, typer.Option(
        help="Guidelines, comma-separated or repeated: none, default (the shipped file), vN (store version). "
             "Default: none,default (none with --collect-corrections).")] = None,
    candidates: Annotated[list[str] | None, typer.Option(
        help="First-pass candidates per question (ask.candidates), comma-separated or repeated: 1 is a single "
             "generation; e.g. 1,5 compares five candidates chosen by execution with one. Default: 1.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Questions answered at once.")] = 4,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N questions (a smoke test).")] = None,
    collect_corrections: Annotated[bool, typer.Option(
        "--collect-corrections", help="Store every wrong answer with its gold SQL as a correction in the "
        "feedback store (training step of the MAGIC experiment).")] = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar with ETA.")] = True,
    log_level: Annotated[str, typer.Option(help="Log level of the pipeline's own logs (stderr).")] = "WARNING",
) -> None:
    """Answer every question under every scenario, score EX, write the run folder and its report.

    Without the eval extra (matplotlib) the report has no PNG charts; it says so and exits with status 2.
    """
    from gateway.eval.session import run_session

    settings = _load_settings(config)
    path = _questions_path(questions_file)
    try:
        questions = load_questions(path)
        scenarios = matrix(
            _split(reflection, ("first_pass",) if collect_corrections else DEFAULT_REFLECTIONS),
            _split(guideline, ("none",) if collect_corrections else DEFAULT_GUIDELINES),
            _split(candidates, ("1",)),
        )
    except (QuestionSetError, ScenarioError) as exc:
        raise _fail(str(exc)) from exc
    questions = questions[:limit] if limit else questions
    manifest = _manifest(settings, path, questions, scenarios, concurrency)
    made: list[RunFolder] = []

    def make_folder() -> RunFolder:  # once the preflight passed: a run that cannot start leaves no folder
        try:
            folder, resumed = RunFolder.create_or_resume(runs_dir / (run_id or new_run_id()), manifest)
        except RunFolderError as exc:
            raise _fail(str(exc)) from exc
        typer.echo(f"{'resuming' if resumed else 'starting'} run {folder.run_id} in {folder.path}: "
                   f"{len(questions)} questions x {len(scenarios)} scenarios "
                   f"({', '.join(s.name for s in scenarios)})", err=True)
        made.append(folder)
        return folder

    try:
        status = asyncio.run(run_session(settings, make_folder, questions, scenarios, concurrency=concurrency,
                                         progress=progress, collect=collect_corrections, log_level=log_level))
    except KeyboardInterrupt:
        if not made:
            raise _fail("interrupted before the run started", 130) from None
        raise _fail(f"interrupted: finished results are saved in {made[0].path}; resume with "
                    f"--run-id {made[0].run_id}", 130) from None
    raise typer.Exit(status if status == 2 else _without_charts(status))  # 2: it could not start, wrote nothing


def _without_charts(status: int) -> int:
    """A report was written; without the eval extra it has no PNG charts: say so in one line and exit 2."""
    if not extras.missing("eval"):
        return status
    typer.echo(extras.install_hint("eval", "eval", "for the PNG charts (report.json and report.md are written)"),
               err=True)
    return status or 2


def _manifest(settings: Settings, path: Path, questions: list[Question], scenarios: list[Scenario],
              concurrency: int) -> dict[str, Any]:
    return {
        "questions_file": str(path),
        "questions_digest": question_set_digest(questions),
        "question_count": len(questions),
        "scenarios": [s.name for s in scenarios],
        "model": settings.llm.model,
        "llm_base_url": settings.llm.base_url,  # never the key
        "concurrency": concurrency,
        "databases": sorted({q.database for q in questions}),
    }


def _folder(value: str, runs_dir: Path) -> RunFolder:
    path = Path(value)
    candidates = [path, runs_dir / value] if not path.is_absolute() else [path]
    for candidate in candidates:
        try:
            return RunFolder.open(candidate)
        except RunFolderError:
            continue
    raise _fail(f"{value}: no run folder there or in {runs_dir}")


@eval_app.command("compare")
def compare_command(
    run_a: Annotated[str, typer.Argument(help="Run folder or run id (A, the baseline).")],
    run_b: Annotated[str, typer.Argument(help="Run folder or run id (B).")],
    runs_dir: RunsDir = Path("eval-runs"),
) -> None:
    """Print how EX, reflection's fixes and breaks, cost and each question's outcome changed from A to B."""
    from gateway.eval.compare import compare_runs, render_comparison

    typer.echo(render_comparison(compare_runs(_folder(run_a, runs_dir), _folder(run_b, runs_dir))), nl=False)


@eval_app.command("report")
def report_command(
    run: Annotated[str, typer.Argument(help="Run folder or run id.")],
    runs_dir: RunsDir = Path("eval-runs"),
) -> None:
    """Rebuild a run's report (JSON, Markdown, PNG charts) from its recorded results.

    Without the eval extra (matplotlib) it writes the JSON and Markdown, says so and exits with status 2.
    """
    from gateway.eval.report import write_report

    folder = _folder(run, runs_dir)
    write_report(folder)
    typer.echo(str(folder.report_dir / "report.md"))
    raise typer.Exit(_without_charts(0))


@eval_app.command("replay")
def replay_command(
    config: Annotated[Path | None, typer.Option("--config", "-c", exists=True, dir_okay=False,
                                                   envvar="NL2SQL_CONFIG", help="TOML config file.")] = None,
    database: Annotated[list[str] | None, typer.Option("--database", "-d", help="Only this database's verified "
                                                       "examples (repeatable); default: every configured one.")] = None,
    guideline: Annotated[str | None, typer.Option(help="A stored guideline version (vN) to use instead of the one "
                                                  "in force.")] = None,
    model: Annotated[str | None, typer.Option(help="Another LLM model for the questions (ask.model).")] = None,
    rules_dir: Annotated[Path | None, typer.Option(exists=True, file_okay=False, help="Read the DBA rules from "
                                                   "this folder instead of rules_dir.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many verified questions.")] = 200,
    concurrency: Annotated[int, typer.Option(min=1, help="Questions replayed at once.")] = 2,
    out: Annotated[Path | None, typer.Option("--out", "-o", dir_okay=False, help="Also write the report as "
                                             "JSON here.")] = None,
) -> None:
    """Replay the verified set (approved examples) under the configuration in force and under a change; print
    what was right before and is wrong now, with a reason per question, cost and latency.

    The report is stored (console: Guideline, Regressions). Exit status 1 when a question regressed, 2 when it
    cannot start.
    """
    from gateway.eval.replay_session import replay_session

    settings = _load_settings(config)
    status = asyncio.run(replay_session(settings, databases=_split(database, ()), guideline=guideline, model=model,
                                        rules_dir=rules_dir, limit=limit, concurrency=concurrency, json_path=out))
    raise typer.Exit(status)
