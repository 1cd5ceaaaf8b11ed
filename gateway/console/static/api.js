// The gateway's public HTTP API, as the console calls it: the API key from sessionStorage, or the access
// token from the identity provider (oidc.js), on every call; problems (application/problem+json) turned
// into errors that say what happened in words.

import * as oidc from "./oidc.js";

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
  const user = !session.key && oidc.signedIn();
  if (status === 401) {
    if (user) return `The gateway did not accept your sign-in${detail ? ` (${detail})` : ""}. Sign in again.`;
    return `The gateway did not accept the API key${detail ? ` (${detail})` : ""}. Sign in again with a valid key.`;
  }
  if (status === 403) {
    if (user) return `Your account may not do that${detail ? `: ${detail}` : ""}. Ask an admin for the needed role or database.`;
    return `This API key may not do that${detail ? `: ${detail}` : ""}. Ask an admin for a key with the needed role or database.`;
  }
  if (status === 429) return `Too many requests: ${detail || "wait a moment and try again"}.`;
  if (problem && problem.code === "store_not_configured") return `Not configured on this gateway: ${detail || "it has no feedback store"}.`;
  if (status === 503) return `The gateway is busy or unavailable: ${detail || "try again shortly"}.`;
  const code = problem && problem.code ? ` [${problem.code}]` : "";
  return (detail || `The request failed with HTTP ${status}.`) + code;
}

async function headers(extra) {
  const h = { Accept: "application/json", ...extra };
  const bearer = session.key || await oidc.accessToken();
  if (bearer) h.Authorization = `Bearer ${bearer}`;
  return h;
}

async function problemOf(response) {
  try { return await response.json(); } catch { return null; }
}

// fetch with the caller's credentials; an access token the gateway calls invalid (expired, revoked key ...)
// is refreshed once and the request sent again. A 401 for an API key is final.
async function send(path, init, extra) {
  const response = await fetch(path, { ...init, headers: await headers(extra) });
  if (response.status !== 401 || session.key || !oidc.signedIn()) return response;
  const problem = await problemOf(response.clone());
  if (!problem || problem.code !== "invalid_token" || !(await oidc.refresh())) return response;
  return fetch(path, { ...init, headers: await headers(extra) });
}

export async function request(method, path, body, { allow = [] } = {}) {
  const init = { method };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await send(path, init, body === undefined ? {} : { "Content-Type": "application/json" });
  if (!response.ok && !allow.includes(response.status)) throw new ApiError(response.status, await problemOf(response));
  const type = response.headers.get("content-type") || "";
  return type.includes("json") ? response.json() : response.text();
}

export const get = (path, options) => request("GET", path, undefined, options);
export const post = (path, body, options) => request("POST", path, body, options);

// POST /v1/ask with Accept: text/event-stream; onEvent(name, data) per server-sent event.
export async function askStream(body, onEvent, signal) {
  const response = await send("../v1/ask", { method: "POST", signal, body: JSON.stringify(body) },
                               { "Content-Type": "application/json", Accept: "text/event-stream" });
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
