// The console's shell: sign-in (an API key, or the identity provider when config.json offers it), the
// caller's role (GET /v1/whoami), pages offered by role, hash routing.

import { ApiError, get, session } from "./api.js";
import * as oidc from "./oidc.js";
import { clear, h } from "./dom.js";
import * as ask from "./ask.js";
import * as sqltab from "./sqltab.js";
import * as schema from "./schema.js";
import * as rules from "./rules.js";
import * as metrics from "./metrics.js";
import * as guideline from "./guideline.js";
import * as regressions from "./regressions.js";
import * as status from "./status.js";
import * as trusted from "./trusted.js";

const RANK = { client: 1, dba: 2, admin: 3 };
// Each page and the least role its API calls need (gateway/auth/access.py); Status reads public endpoints.
const PAGES = {
  ask: { module: ask, role: "client", title: "Ask" },
  sql: { module: sqltab, role: "client", title: "SQL" },
  schema: { module: schema, role: "dba", title: "Schema" },
  rules: { module: rules, role: "dba", title: "Rules and examples" },
  trusted: { module: trusted, role: "client", title: "Trusted" },
  metrics: { module: metrics, role: "client", title: "Metrics" },
  guideline: { module: guideline, role: "dba", title: "Guideline" },
  regressions: { module: regressions, role: "dba", title: "Regressions" },  // #regressions/<version>, from Guideline
  status: { module: status, role: null, title: "Status" },
};

const $ = (sel) => document.querySelector(sel);
let me = null;
let oidcError = null;  // why sign-in with the identity provider is not offered, when it should be
let current = null;
let showing = 0;  // the page shown last: only its show() settling marks #page ready

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
  $("#oidc").hidden = !oidc.available();
  $("#oidc-error").hidden = !oidcError;
  $("#oidc-error").textContent = oidcError ? `Sign-in with your organisation is unavailable: ${oidcError}` : "";
  $("#signin-error").textContent = message || "";
  (oidc.available() ? $("#oidc-signin") : $("#key")).focus();
}

function showApp() {
  $("#signin").hidden = true;
  for (const link of document.querySelectorAll("#nav a")) link.parentElement.hidden = !allowed(link.dataset.page);
  $("#nav").hidden = false;
  const who = clear($("#who"));
  // An end user by their stable id (or e-mail, with auth.oidc.log_email: then it is the name), a key by name.
  const name = me.user && me.name === me.user ? me.user : me.name;
  who.append(h("span", {}, me.auth_enabled ? `${name} (${me.role})` : "access control off (loopback)"));
  if (session.key || oidc.signedIn()) {
    who.append(h("button", { type: "button", class: "link", onclick: signOut }, "Sign out"));
  }
  route();
}

async function signOut() {
  session.key = null;
  if (current && current.leave) current.leave();
  current = null;
  me = null;
  await oidc.signOut();
  start();
}

function route() {
  if (!me) return;
  // #page or #page/param (a permalink: #ask/<request id>)
  const [asked, ...rest] = location.hash.slice(1).split("/");
  let name = asked || "ask";
  let param = rest.length ? decodeURIComponent(rest.join("/")) : null;
  if (!PAGES[name]) { name = "ask"; param = null; }
  if (!allowed(name)) {
    const asked = name;
    name = Object.keys(PAGES).find(allowed);
    param = null;
    notice(`That page needs a ${PAGES[asked]?.role || "different"} key; your key's role is ${me.role}.`);
  } else notice("");
  if (current && current.leave) current.leave();
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.dataset.page === name || (name === "regressions" && link.dataset.page === "guideline")) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.title = `${PAGES[name].title} · nl2sql-gateway console`;
  const page = clear($("#page"));
  // A page draws its form first and binds its handlers after loading what it needs (databases, history): until
  // its show() settles the page is busy (styled as such, clicks on its forms ignored), then ready.
  const shown = ++showing;
  page.setAttribute("aria-busy", "true");
  current = PAGES[name].module;
  const module = current;
  (async () => module.show(page, { me, notice, param, signedOut: () => showSignin(session.key ? "Your key was refused; sign in again."
                                                                               : "Your sign-in was refused; sign in again.") }))()
    .finally(() => { if (shown === showing) page.setAttribute("aria-busy", "false"); });
}

async function start() {
  const held = session.key ? "key" : oidc.signedIn() ? "oidc" : null;
  try {
    if (await identify()) showApp();
    else showSignin({ key: "The stored key is no longer accepted.", oidc: "Your sign-in has expired; sign in again." }[held] || "");
  } catch (error) {
    showSignin(error.message);
  }
}

// How this gateway signs people in (public, no credentials sent): with an API key, and with the identity
// provider when it names one. Then, when this load is the identity provider's answer, finish that sign-in.
async function boot() {
  try {
    const response = await fetch("config.json", { credentials: "omit", headers: { Accept: "application/json" } });
    const config = response.ok ? await response.json() : {};
    oidc.configure(config.oidc);
    oidcError = config.oidc_error || null;
  } catch {
    oidc.configure(null);
  }
  try {
    if (await oidc.complete()) session.key = null;  // one way of signing in at a time
  } catch (error) {
    showSignin(error.message);  // a refused answer is said, whoever may still be signed in in this tab
    return;
  }
  await start();
}

$("#signin-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  session.key = $("#key").value.trim();
  $("#key").value = "";
  oidc.forget();  // one way of signing in at a time
  try {
    if (await identify()) { showApp(); $("#main").focus(); return; }
    session.key = null;
    showSignin("The gateway did not accept this key: check that you pasted all of it and that it was not revoked.");
  } catch (error) {
    session.key = null;
    showSignin(error.message);
  }
});
$("#oidc-signin").addEventListener("click", async () => {
  try {
    await oidc.begin();
  } catch (error) {
    showSignin(error.message);
  }
});
// Forms are the pages' scripts' to send: a native submission (a form used before its page bound its handler)
// would go to the console's own URL, which the CSP's form-action 'none' refuses.
document.addEventListener("submit", (event) => event.preventDefault(), true);
window.addEventListener("hashchange", route);
boot();
