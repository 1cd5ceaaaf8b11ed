// The console's shell: sign-in, the caller's role (GET /v1/whoami), pages offered by role, hash routing.

import { ApiError, get, session } from "./api.js";
import { clear, h } from "./dom.js";
import * as ask from "./ask.js";
import * as schema from "./schema.js";
import * as rules from "./rules.js";
import * as guideline from "./guideline.js";
import * as status from "./status.js";

const RANK = { client: 1, dba: 2, admin: 3 };
// Each page and the least role its API calls need (gateway/auth/access.py); Status reads public endpoints.
const PAGES = {
  ask: { module: ask, role: "client", title: "Ask" },
  schema: { module: schema, role: "dba", title: "Schema" },
  rules: { module: rules, role: "dba", title: "Rules and examples" },
  guideline: { module: guideline, role: "dba", title: "Guideline" },
  status: { module: status, role: null, title: "Status" },
};

const $ = (sel) => document.querySelector(sel);
let me = null;
let current = null;

function allowed(name) {
  const need = PAGES[name].role;
  return need === null || (me && RANK[me.role] >= RANK[need]);
}

export function notice(message) {
  const el = $("#notice");
  el.textContent = message || "";
  el.hidden = !message;
}

async function identify() {
  try {
    me = await get("../v1/whoami");
    return true;
  } catch (error) {
    me = null;
    if (error instanceof ApiError && error.status === 401) return false;
    throw error;
  }
}

function showSignin(message) {
  $("#nav").hidden = true;
  clear($("#page"));
  clear($("#who"));
  $("#signin").hidden = false;
  $("#signin-error").textContent = message || "";
  $("#key").focus();
}

function showApp() {
  $("#signin").hidden = true;
  for (const link of document.querySelectorAll("#nav a")) link.parentElement.hidden = !allowed(link.dataset.page);
  $("#nav").hidden = false;
  const who = clear($("#who"));
  who.append(h("span", {}, me.auth_enabled ? `${me.name} (${me.role})` : "access control off (loopback)"));
  if (session.key) who.append(h("button", { type: "button", class: "link", onclick: signOut }, "Sign out"));
  route();
}

function signOut() {
  session.key = null;
  if (current && current.leave) current.leave();
  current = null;
  start();
}

function route() {
  if (!me) return;
  let name = location.hash.slice(1) || "ask";
  if (!PAGES[name]) name = "ask";
  if (!allowed(name)) {
    name = Object.keys(PAGES).find(allowed);
    notice(`That page needs a ${PAGES[location.hash.slice(1)]?.role || "different"} key; your key's role is ${me.role}.`);
  } else notice("");
  if (current && current.leave) current.leave();
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.dataset.page === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.title = `${PAGES[name].title} · nl2sql-gateway console`;
  const page = clear($("#page"));
  current = PAGES[name].module;
  current.show(page, { me, notice, signedOut: () => showSignin("Your key was refused; sign in again.") });
}

async function start() {
  try {
    if (await identify()) showApp();
    else showSignin(session.key ? "The stored key is no longer accepted." : "");
  } catch (error) {
    showSignin(error.message);
  }
}

$("#signin-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  session.key = $("#key").value.trim();
  $("#key").value = "";
  try {
    if (await identify()) { showApp(); $("#main").focus(); return; }
    session.key = null;
    showSignin("The gateway did not accept this key: check that you pasted all of it and that it was not revoked.");
  } catch (error) {
    session.key = null;
    showSignin(error.message);
  }
});
window.addEventListener("hashchange", route);
start();
