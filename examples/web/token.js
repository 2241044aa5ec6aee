// Tokens for the demo page (auth mode jwt, protocol 1.1). rollcall.js calls a `getToken`
// callback for every login after the first, on the broker's `refreshRequired` notice, and once
// more after a refused reconnect. The page has two:
// - `issuerTokens`: a token issuer URL was given at login (such as the demo endpoint of
//   examples/issuer, `GET /token?user=ID` → `{"token", "expiresAt"}`): each call fetches a
//   freshly minted token — what a real app does with its own backend;
// - `tokenAsker`: only a pasted token: it hands back the token in force while that one is
//   still good, and otherwise shows the token panel and waits for the user to paste a new one.

/** A token that expires within this many milliseconds is not handed out again. */
const STILL_GOOD_MS = 10_000;

/**
 * The `exp` claim of a JWT in milliseconds, or null when it cannot be read. The page only
 * reads the claim to decide whether to ask; the broker verifies the signature.
 * @param {string} token
 * @returns {number | null}
 */
export function tokenExpiry(token) {
  try {
    const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const exp = JSON.parse(atob(payload.padEnd(Math.ceil(payload.length / 4) * 4, "="))).exp;
    return typeof exp === "number" ? exp * 1000 : null;
  } catch {
    return null;
  }
}

/**
 * A `getToken` callback that fetches a new token from `issuerUrl` (`?user=` added) each time.
 * @param {string} issuerUrl absolute, or relative to the page
 * @param {string} userId
 */
export function issuerTokens(issuerUrl, userId) {
  const getToken = async () => {
    const address = new URL(issuerUrl, globalThis.location?.href);
    address.searchParams.set("user", userId);
    const response = await fetch(address, { cache: "no-store" });
    if (!response.ok) throw new Error(`the token issuer answered ${response.status}`);
    const body = await response.json();
    if (typeof body?.token !== "string" || !body.token) throw new Error("the token issuer sent no token");
    return body.token;
  };
  return { getToken, noticeFor() {}, asksUser: false };
}

/**
 * A `getToken` callback that asks the user (through `ask(reason)`, which resolves with the
 * pasted token) whenever the token in force is not good any more: it expires within
 * `STILL_GOOD_MS`, or the broker has said `refreshRequired` for it (`noticeFor(expiresAt)`).
 * Calls made while the user is being asked share that one question.
 * @param {() => string | undefined} inForce the token the broker last accepted (rollcall.js
 *   keeps it in `client.options.token`: a refused token never becomes it)
 * @param {(reason: string) => Promise<string>} ask
 */
export function tokenAsker(inForce, ask) {
  let noticedExpiry = null; // the expiry the broker's last refreshRequired named
  let question = null;

  const stillGood = (current) => {
    if (!current) return false;
    const expiry = tokenExpiry(current);
    if (expiry === null) return true; // not ours to judge: the broker will say
    if (noticedExpiry !== null && expiry <= noticedExpiry) return false;
    return expiry - Date.now() > STILL_GOOD_MS;
  };

  const getToken = () => {
    const current = inForce();
    if (stillGood(current)) return current;
    if (!question) {
      const expiry = current ? tokenExpiry(current) : null;
      const reason = expiry !== null && expiry <= Date.now() ? "Your token has expired." : "Your token is about to expire.";
      question = ask(reason).then(
        (token) => {
          question = null;
          return token;
        },
        (error) => {
          question = null;
          throw error;
        },
      );
    }
    return question;
  };

  return {
    getToken,
    /** The broker sent `refreshRequired` for the token that expires at `expiresAt`. */
    noticeFor(expiresAt) {
      noticedExpiry = expiresAt;
    },
    asksUser: true,
  };
}
