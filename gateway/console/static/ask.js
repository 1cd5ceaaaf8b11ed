// Ask: a question to a database, its attempts streaming in (SQL, findings, timings), the answer as a table
// and a chart, feedback on it, and the session's questions on the side.

import { askStream, get, post, ApiError } from "./api.js";
import { clear, h, id, liveRegion, ms } from "./dom.js";
import { highlight } from "./sql.js";
import { resultTable } from "./table.js";
import { chartView } from "./chart.js";
import { editAndRerun } from "./sqltab.js";
import { starterList } from "./starters.js";
import { restrictedNote } from "./restricted.js";

const asked = [];  // this tab's questions and answers, with their rows (kept while the tab is open)
let earlier = [];  // this user's earlier answers from the audit (no rows)
let databases = null;
let controller = null;

export function leave() { if (controller) controller.abort(); }

export async function show(root, ctx) {
  const live = liveRegion();
  const say = (text) => { live.textContent = text; };
  const dbSelect = h("select", { id: "ask-db", name: "database", required: true });
  const question = h("textarea", { id: "ask-q", name: "question", rows: 3, required: true,
    maxlength: 4000, "aria-describedby": "ask-q-hint" });
  // Off by default: an unrelated next question sent as a follow-up is read in the wrong context (and,
  // without an LLM, only a question asked on its own can be a verified one). Ticked per question.
  const follow = h("input", { type: "checkbox", id: "ask-follow" });
  const followRow = h("p", { class: "follow", hidden: true }, follow, " ", h("label", { for: "ask-follow" }, ""));
  const submit = h("button", { type: "submit", id: "ask-submit" }, "Ask");
  const output = h("div", { id: "ask-output" });
  const historyList = h("ol", { id: "ask-history" });
  const form = h("form", { id: "ask-form", "aria-label": "Ask a question" },
    h("div", { class: "field" }, h("label", { for: "ask-db" }, "Database"), dbSelect),
    h("div", { class: "field grow" }, h("label", { for: "ask-q" }, "Question"), question,
      h("small", { id: "ask-q-hint" }, "Ctrl+Enter asks. The SQL is generated, checked, run read-only and validated.")),
    followRow, submit);
  const starters = h("div", { id: "ask-starters" });

  root.append(h("div", { class: "ask-layout" },
    h("section", { class: "panel", "aria-labelledby": "ask-title" }, h("h1", { id: "ask-title" }, "Ask"), form, starters, live, output),
    h("aside", { class: "panel history", "aria-labelledby": "hist-title" },
      h("h2", { id: "hist-title" }, "Your questions"), historyList)));

  // The side list: this user's answers from the audit (GET /v1/history, kept across reloads and tabs), newest
  // first, with this tab's answers put on top as they come. Each opens its permalink, #ask/<request id>.
  const renderHistory = () => {
    const seen = new Set();
    const rows = [...asked.filter((item) => item.answer?.request_id).reverse().map((item) => ({
      request_id: item.answer.request_id, question: item.question, database: item.database, status: item.answer.status })),
    ...earlier].filter((row) => !seen.has(row.request_id) && seen.add(row.request_id));
    const failed = asked.filter((item) => !item.answer?.request_id).reverse();
    historyList.replaceChildren(...failed.map((item) => h("li", {}, h("span", {}, item.question), " ",
      h("span", { class: "badge failed" }, "error"))), ...rows.map((row) => h("li", { "data-request": row.request_id },
      h("a", { href: `#ask/${encodeURIComponent(row.request_id)}` }, row.question), " ",
      h("span", { class: `badge ${row.status}` }, row.status), " ",
      h("button", { type: "button", class: "link rerun", "aria-label": `Ask again: ${row.question}`,
        onclick: () => rerun(row) }, "Ask again"))));
    const last = [...asked].reverse().find((item) => item.answer?.conversation_id);
    followRow.hidden = !last;
    if (last) {
      followRow.dataset.conversation = last.answer.conversation_id;
      followRow.querySelector("label").textContent = `Follow-up in conversation ${last.answer.conversation_id}`;
    }
  };
  const rerun = (row) => {
    if ([...dbSelect.options].some((o) => o.value === row.database)) dbSelect.value = row.database;
    question.value = row.question;
    follow.checked = false;
    if (location.hash.startsWith("#ask/")) window.history.replaceState(null, "", "#ask");
    form.requestSubmit();
  };
  renderHistory();

  try {
    databases = databases || (await get("../v1/databases")).databases;
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return ctx.signedOut();
    output.append(h("p", { class: "error", role: "alert" }, error.message));
    submit.disabled = true;  // nothing to ask without the databases: reloading the page tries again
    return;
  }
  dbSelect.append(...databases.map((d) => h("option", { value: d.name }, d.description ? `${d.name} — ${d.description}` : d.name)));
  if (!databases.length) output.append(h("p", { class: "error" }, "This key may not use any database."));
  const loadStarters = () => starterList(starters, dbSelect.value, (text) => { question.value = text; form.requestSubmit(); });
  dbSelect.addEventListener("change", loadStarters);
  if (databases.length) loadStarters();

  if (ctx.me.store) {
    try { earlier = (await get("../v1/history?limit=30")).answers; } catch { earlier = []; }
    renderHistory();
  }
  if (ctx.param) {
    const cached = asked.find((item) => item.answer?.request_id === ctx.param);
    if (cached) renderAnswer(output, cached, ctx, say, renderHistory);
    else await openAudited(output, ctx, say, rerun);
  }

  question.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); form.requestSubmit(); } });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = question.value.trim();
    if (!text) return;
    const body = { database: dbSelect.value, question: text };
    if (!followRow.hidden && follow.checked) body.conversation_id = followRow.dataset.conversation;
    const item = { question: text, database: body.database, attempts: [], answer: null, error: null };
    asked.push(item);
    submit.disabled = true;
    clear(output);
    const attempts = h("ol", { class: "attempts", "aria-label": "Attempts" });
    output.append(h("h2", {}, "Attempts"), attempts);
    say("Asking…");
    controller = new AbortController();
    try {
      await askStream(body, (name, data) => {
        if (name === "attempt") {
          item.attempts.push(data);
          attempts.append(attemptView(data, body.database));
          say(`Attempt ${data.n} (${data.source}): ${data.passed ? "passed" : "did not pass"}${data.row_count !== null ? `, ${data.row_count} rows` : ""}.`);
        } else if (name === "answer") item.answer = data;
        else if (name === "problem") item.error = data.detail || data.title;
      }, controller.signal);
    } catch (error) {
      if (error.name === "AbortError") return;
      if (error instanceof ApiError && error.status === 401) return ctx.signedOut();
      item.error = error.message;
    } finally {
      submit.disabled = false;
      controller = null;
    }
    follow.checked = false;  // each follow-up is chosen, never inherited from the one before
    renderAnswer(output, item, ctx, say, renderHistory);
    renderHistory();
  });
  question.focus();
}

function attemptView(a, database) {
  const t = a.timings || {};
  return h("li", { class: `attempt ${a.passed ? "passed" : "failed"}` },
    h("p", { class: "attempt-head" }, h("strong", {}, `Attempt ${a.n}`), ` · ${a.source} · `,
      h("span", { class: `badge ${a.passed ? "ok" : "failed"}` }, a.passed ? "passed" : "did not pass"),
      a.row_count !== null && a.row_count !== undefined ? ` · ${a.row_count} rows` : "",
      a.guideline_applied ? " · guideline applied" : ""),
    a.sql ? highlight(a.sql) : h("p", {}, "The model's answer held no SQL."),
    a.sql ? h("button", { type: "button", class: "link edit-sql", onclick: () => editAndRerun(database, a.sql) },
      `Edit attempt ${a.n}'s SQL and re-run`) : null,
    a.findings && a.findings.length ? h("ul", { class: "findings", "aria-label": "Findings" },
      a.findings.map((f) => h("li", {}, h("code", {}, f.code), ` ${f.message}`))) : null,
    h("p", { class: "timings" }, `LLM ${ms(t.llm_ms)} · check ${ms(t.check_ms)} · database ${ms(t.db_ms)} · total ${ms(t.total_ms)}`,
      a.tokens && a.tokens.prompt !== undefined ? ` · ${a.tokens.prompt}+${a.tokens.completion} tokens` : ""));
}

// A permalink (#ask/<request id>) to an answer not in this tab: the audited question, SQL and attempts (the
// audit keeps no rows), with "ask again" and "edit SQL and re-run". The gateway decides who may see it.
async function openAudited(output, ctx, say, rerun) {
  let a;
  try { a = await get(`../v1/answers/${encodeURIComponent(ctx.param)}`); } catch (error) {
    if (error instanceof ApiError && error.status === 401) return ctx.signedOut();
    clear(output).append(h("p", { class: "error", role: "alert", id: "answer-missing" },
      error.code === "unknown_request" ? "There is no answer under this link that you may see." : error.message));
    return;
  }
  clear(output).append(h("section", { class: "answer audited", "aria-labelledby": "answer-title" },
    h("h2", { id: "answer-title" }, a.question),
    h("p", { class: "answer-head" }, h("span", { class: `badge ${a.status}`, id: "answer-status" }, a.status),
      ` · ${a.database} · asked ${String(a.created_at || "").replace("T", " ").slice(0, 19)}`, a.yours ? "" : " · asked by someone else"),
    a.sql ? highlight(a.sql) : h("p", {}, "No SQL was chosen."),
    h("div", { class: "toolbar" },
      h("button", { type: "button", id: "answer-rerun", onclick: () => rerun(a) }, "Ask again"),
      a.sql ? h("button", { type: "button", id: "answer-edit", onclick: () => editAndRerun(a.database, a.sql) }, "Edit SQL and re-run") : null),
    h("p", { class: "muted" }, "Rows are not kept with past answers: ask again or run the SQL to see them."),
    h("h3", {}, "Attempts"), h("ol", { class: "attempts", "aria-label": "Attempts" }, (a.attempts || []).map((x) => attemptView(x, a.database)))));
  say(`Answer from ${a.created_at}: ${a.status}.`);
}

function renderAnswer(output, item, ctx, say, renderHistory) {
  if (!output.querySelector(".attempts")) {
    clear(output);
    output.append(h("h2", {}, "Attempts"), h("ol", { class: "attempts", "aria-label": "Attempts" }, item.attempts.map((x) => attemptView(x, item.database))));
  }
  output.querySelector(".answer")?.remove();
  const section = h("section", { class: "answer", "aria-labelledby": "answer-title" }, h("h2", { id: "answer-title" }, "Answer"));
  output.append(section);
  if (item.error || !item.answer) {
    section.append(h("p", { class: "error", role: "alert" }, item.error || "The stream ended without an answer."));
    say("The question failed.");
    return;
  }
  const a = item.answer;
  section.append(h("p", { class: "answer-head" }, h("span", { class: `badge ${a.status}`, id: "answer-status" }, a.status),
    a.trusted ? [" ", h("span", { class: "badge trusted", id: "answer-trusted" }, `trusted: ${a.trusted.template}`)] : "",
    ` ${a.row_count} rows${a.truncated ? " (truncated)" : ""} · stopped: ${a.stop_reason || "–"}`,
    a.guideline_version ? ` · guideline ${a.guideline_version}` : "",
    a.conversation_id ? ` · conversation ${a.conversation_id}` : "",
    a.request_id ? h("small", { class: "rid" }, ` request ${a.request_id} `) : "",
    a.request_id && ctx.me.store ? h("a", { href: `#ask/${encodeURIComponent(a.request_id)}`, id: "answer-link" }, "Permalink") : ""));
  if (a.status === "needs_clarification") {
    const c = a.clarification || {};
    section.append(h("p", { class: "clarify" }, c.question || a.question || "The question is ambiguous; please say more."));
    const options = c.options || a.options || [];
    if (options.length) section.append(h("ul", { class: "options" }, options.map((o) => h("li", {},
      h("button", { type: "button", onclick: () => { const q = document.querySelector("#ask-q"); q.value = String(o); q.focus(); } }, String(o))))));
  }
  if (a.findings && a.findings.length) {
    section.append(h("ul", { class: "findings", "aria-label": "Findings left on the answer" },
      a.findings.map((f) => h("li", {}, h("code", {}, f.code), ` ${f.message}`))));
  }
  // Any attempt blocked for restricted data: the answer may be another attempt's failure, say why in words.
  const note = restrictedNote([...(a.findings || []), ...(a.attempts || []).flatMap((x) => x.findings || [])],
    { database: a.database || item.database, role: ctx.me.role });
  if (note && a.status !== "ok") section.append(note);
  if (a.sql) {
    section.append(h("div", { class: "toolbar" }, h("button", { type: "button", id: "answer-edit",
      onclick: () => editAndRerun(a.database || item.database, a.sql) }, "Edit SQL and re-run")));
  }
  if (a.columns && a.columns.length) {
    section.append(chartView(a.columns, a.rows), resultTable(a.columns, a.rows, { caption: item.question, say }));
  }
  if (a.request_id && ctx.me.store) section.append(feedbackView(a, say));
  else if (a.request_id) section.append(h("p", { class: "feedback muted", id: "fb-off" },
    "Feedback is not configured on this gateway (it has no feedback store: set store.dsn to collect right and wrong verdicts)."));
  say(`Answer: ${a.status}, ${a.row_count} rows.`);
  renderHistory();
}

function feedbackView(a, say) {
  const result = h("p", { class: "fb-result", role: "status" });
  const corrected = h("textarea", { id: "fb-sql", rows: 4, spellcheck: "false" });
  const note = h("input", { id: "fb-note", type: "text", maxlength: 4000 });
  const send = async (verdict) => {
    const body = { request_id: a.request_id, verdict };
    if (verdict === "incorrect" && corrected.value.trim()) body.corrected_sql = corrected.value.trim();
    if (note.value.trim()) body.note = note.value.trim();
    try {
      const r = await post("../v1/feedback", body);
      result.textContent = `Thank you: recorded as ${r.verdict}` + (r.example_id ? `; example #${r.example_id} is ${r.example_status || "stored"}` +
        (r.example_status === "proposed" ? " until a DBA reviews it" : "") : "") + ".";
    } catch (error) {
      result.textContent = error.message;
    }
    say(result.textContent);
  };
  const wrongBox = h("div", { class: "wrong", hidden: true },
    h("div", { class: "field" }, h("label", { for: "fb-sql" }, "Corrected SQL (optional)"), corrected),
    h("button", { type: "button", id: "fb-send", onclick: () => send("incorrect") }, "Send correction"));
  return h("section", { class: "feedback", "aria-labelledby": "fb-title" }, h("h3", { id: "fb-title" }, "Was this right?"),
    h("div", { class: "toolbar" },
      h("button", { type: "button", id: "fb-right", onclick: () => send("correct") }, "Right"),
      h("button", { type: "button", id: "fb-wrong", "aria-expanded": "false", onclick: (e) => {
        wrongBox.hidden = !wrongBox.hidden; e.currentTarget.setAttribute("aria-expanded", String(!wrongBox.hidden));
        if (!wrongBox.hidden) { corrected.value = corrected.value || a.sql || ""; corrected.focus(); }
      } }, "Wrong…")),
    h("div", { class: "field" }, h("label", { for: "fb-note" }, "Note for the DBA (optional)"), note),
    wrongBox, result);
}
