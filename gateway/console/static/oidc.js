// Sign-in with the identity provider: OAuth 2.1 authorization code with PKCE (S256), run in this page as a
// public client (no secret). GET config.json names the client id, scopes and the authorization server's
// endpoints; the gateway's content security policy lets this page fetch the token endpoint and nothing else.
//
// Tokens live in sessionStorage, not localStorage: they stay with this tab and are gone when it closes,
// are not shared with other tabs or written to the profile for days, and survive the one thing we need,
// the redirect to the identity provider and back. (Script injected into the page could read either; the
// strict CSP is what keeps such script out.) Tokens never go into a URL, a log line or an error message.

const TOKENS = "nl2sql.oidc";            // { access_token, refresh_token, expires_at (ms) }
const PENDING = "nl2sql.oidc.pending";   // { state, verifier, redirect_uri, hash, at }: one sign-in in flight
const EARLY_S = 30;                      // refresh this long before the access token expires
const PENDING_TTL_MS = 10 * 60 * 1000;   // a sign-in not completed within this is refused

let config = null;       // config.json's "oidc", or null: API keys only
let refreshing = null;   // the refresh in flight: refresh tokens are single use, so concurrent calls share one

export class SignInError extends Error {}

export function configure(oidc) { config = oidc || null; }
export const available = () => config !== null;

function read(name) {
  try { return JSON.parse(sessionStorage.getItem(name) || "null"); } catch { return null; }
}

function tokens() { return read(TOKENS); }
export const signedIn = () => Boolean(tokens()?.access_token);

function keep(answer, previous) {
  const stored = {
    access_token: answer.access_token,
    // A server that does not rotate refresh tokens answers without one: the old one stays good.
    refresh_token: typeof answer.refresh_token === "string" ? answer.refresh_token : previous?.refresh_token || null,
    expires_at: Number.isFinite(answer.expires_in) ? Date.now() + answer.expires_in * 1000 : null,
  };
  sessionStorage.setItem(TOKENS, JSON.stringify(stored));
  return stored;
}

export function forget() { sessionStorage.removeItem(TOKENS); }

// The console's own address, where the identity provider sends the browser back: this origin and path,
// never a query or fragment (the client registered at the IdP has exactly this redirect URI).
export function redirectUri() {
  const here = new URL("./", location.href);
  return here.origin + here.pathname;
}

function base64url(bytes) {
  let text = "";
  for (const b of new Uint8Array(bytes)) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const random = (n) => base64url(crypto.getRandomValues(new Uint8Array(n)));

async function challengeOf(verifier) {
  return base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
}

// Off to the identity provider; it comes back to redirectUri() with ?code=...&state=...
export async function begin() {
  if (!config) throw new SignInError("Sign-in with the identity provider is not configured.");
  const verifier = random(32);  // 43 characters of base64url: RFC 7636's least, from the OS's random source
  const state = random(16);
  const redirect_uri = redirectUri();
  sessionStorage.setItem(PENDING, JSON.stringify({ state, verifier, redirect_uri, hash: location.hash, at: Date.now() }));
  const url = new URL(config.authorization_endpoint);
  const params = {
    response_type: "code", client_id: config.client_id, redirect_uri, scope: config.scopes.join(" "), state,
    code_challenge: await challengeOf(verifier), code_challenge_method: "S256",
  };
  if (config.resource) params.resource = config.resource;
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  location.assign(url.href);
}

// The way back: true when this page load is an answer from the identity provider (then handled: tokens
// kept, or a SignInError saying why not), false otherwise.
export async function complete() {
  const params = new URLSearchParams(location.search);
  if (!params.has("state") && !params.has("code") && !params.has("error")) return false;
  // The state and verifier are single use: taken out before anything else, whatever happens next.
  const pending = read(PENDING);
  sessionStorage.removeItem(PENDING);
  // The code leaves the address bar and the history entry at once (a reload or Back cannot replay it).
  history.replaceState(null, "", redirectUri() + (pending?.hash || ""));
  if (!pending || !params.get("state") || params.get("state") !== pending.state) {
    throw new SignInError("This sign-in answer does not belong to a sign-in started in this tab; sign in again.");
  }
  if (Date.now() - pending.at > PENDING_TTL_MS) throw new SignInError("The sign-in took too long; sign in again.");
  if (params.has("error")) {
    const why = params.get("error_description") || params.get("error");
    throw new SignInError(`The identity provider did not sign you in: ${why}.`);
  }
  // RFC 9207: an authorization server that names itself must be the one we sent the user to.
  if (params.has("iss") && params.get("iss") !== config?.issuer) {
    throw new SignInError("The sign-in answer came from another identity provider; sign in again.");
  }
  if (!config || !params.get("code")) throw new SignInError("The sign-in answer holds no code; sign in again.");
  const answer = await tokenRequest({
    grant_type: "authorization_code", code: params.get("code"), redirect_uri: pending.redirect_uri,
    code_verifier: pending.verifier,
  });
  keep(answer, null);
  return true;
}

async function tokenRequest(form) {
  const body = new URLSearchParams({ ...form, client_id: config.client_id });
  if (config.resource) body.set("resource", config.resource);
  let response;
  try {
    // A simple CORS request (form body, no custom header): no preflight; no cookies of the IdP's origin.
    response = await fetch(config.token_endpoint, {
      method: "POST", body, credentials: "omit", cache: "no-store",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
    });
  } catch {
    throw new SignInError("The identity provider's token endpoint could not be reached.");
  }
  let answer = null;
  try { answer = await response.json(); } catch { answer = null; }
  if (!response.ok || !answer || typeof answer.access_token !== "string") {
    const why = answer && typeof answer.error === "string" ? answer.error : `HTTP ${response.status}`;
    throw new SignInError(`The identity provider did not issue a token (${why}); sign in again.`);
  }
  return answer;
}

// A new access token from the refresh token; null (and signed out) when there is none or it is refused.
export function refresh() {
  if (!refreshing) {
    refreshing = (async () => {
      const held = tokens();
      if (!config || !held?.refresh_token) { forget(); return null; }
      try {
        return keep(await tokenRequest({ grant_type: "refresh_token", refresh_token: held.refresh_token }), held)
          .access_token;
      } catch {
        forget();
        return null;
      }
    })().finally(() => { refreshing = null; });
  }
  return refreshing;
}

// The access token to send, refreshed first when it is about to expire; null when not signed in here.
export async function accessToken() {
  if (refreshing) return refreshing;
  const held = tokens();
  if (!held?.access_token) return null;
  if (held.expires_at && held.expires_at - Date.now() < EARLY_S * 1000 && held.refresh_token) return refresh();
  return held.access_token;
}

// Forget the tokens here, and ask the identity provider to revoke the refresh token (best effort: the
// tokens are gone from this tab whether or not it answers).
export async function signOut() {
  const held = tokens();
  forget();
  if (!config?.revocation_endpoint || !held?.refresh_token) return;
  try {
    await fetch(config.revocation_endpoint, {
      method: "POST", credentials: "omit", cache: "no-store",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: held.refresh_token, token_type_hint: "refresh_token", client_id: config.client_id }),
    });
  } catch { /* unreachable: the refresh token expires on its own */ }
}
