// Tokens for the demo page (auth mode jwt, protocol 1.1): the page has no token issuer of its
// own — the user pastes a JWT at login — so when a new token is needed it asks the user for
// one. `tokenAsker` is the `getToken` callback rollcall.js calls: it hands back the token in
// hand while that one is still good, and otherwise shows the token panel and waits for a new
// one. A real app would fetch a fresh token from its backend here instead.

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
  };
}
