// The gateway's public HTTP API, as the console calls it: the key from sessionStorage on every call,
// problems (application/problem+json) turned into errors that say what happened in words.

const KEY = "nl2sql.key";

export const session = {
  get key() { return sessionStorage.getItem(KEY); },
  set key(value) { value ? sessionStorage.setItem(KEY, value) : sessionStorage.removeItem(KEY); },
};

export class ApiError extends Error {
  constructor(status, problem) {
    super(explain(status, problem));
    this.status = status;
    this.problem = problem || {};
    this.code = this.problem.code || `http_${status}`;
  }
}

// A 401/403 in words a person can act on; other problems carry their own detail.
export function explain(status, problem) {
  const detail = problem && problem.detail ? problem.detail : "";
  if (status === 401) {
    return `The gateway did not accept the API key${detail ? ` (${detail})` : ""}. Sign in again with a valid key.`;
  }
  if (status === 403) {
    return `This API key may not do that${detail ? `: ${detail}` : ""}. Ask an admin for a key with the needed role or database.`;
  }
  if (status === 429) return `Too many requests: ${detail || "wait a moment and try again"}.`;
  if (status === 503) return `The gateway is busy or unavailable: ${detail || "try again shortly"}.`;
  const code = problem && problem.code ? ` [${problem.code}]` : "";
  return (detail || `The request failed with HTTP ${status}.`) + code;
}

function headers(extra) {
  const h = { Accept: "application/json", ...extra };
  if (session.key) h.Authorization = `Bearer ${session.key}`;
  return h;
}

async function problemOf(response) {
  try { return await response.json(); } catch { return null; }
}

export async function request(method, path, body, { allow = [] } = {}) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(path, init);
  if (!response.ok && !allow.includes(response.status)) throw new ApiError(response.status, await problemOf(response));
  const type = response.headers.get("content-type") || "";
  return type.includes("json") ? response.json() : response.text();
}

export const get = (path, options) => request("GET", path, undefined, options);
export const post = (path, body, options) => request("POST", path, body, options);

// POST /v1/ask with Accept: text/event-stream; onEvent(name, data) per server-sent event.
export async function askStream(body, onEvent, signal) {
  const response = await fetch("../v1/ask", {
    method: "POST", signal,
    headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new ApiError(response.status, await problemOf(response));
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}
