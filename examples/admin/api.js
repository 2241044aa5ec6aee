// The broker's server API (docs/api.md), called with the key the operator typed in. The key is
// kept in sessionStorage only: this tab, until it closes or the operator logs out.

const STORAGE_KEY = "rollcall.admin.apiKey";
/** Relative to /admin/, so that a proxy's path prefix carries over. */
const API_BASE = "../api/v1/";

/** An error answer of the API (`{ok: false, error: {code, message}}`) or a failed request. */
export class ApiError extends Error {
  constructor(status, code, message, retryAfterMs) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.retryAfterMs = retryAfterMs;
  }
}

/** The key of this tab, or null. */
export const storedKey = () => sessionStorage.getItem(STORAGE_KEY);
export const storeKey = (key) => sessionStorage.setItem(STORAGE_KEY, key);
export const forgetKey = () => sessionStorage.removeItem(STORAGE_KEY);

/** Calls `op` with `body`; resolves to its `result`, rejects with an ApiError. */
export async function call(op, body = {}, key = storedKey()) {
  let response;
  try {
    response = await fetch(API_BASE + op, {
      method: "POST",
      headers: { "Authorization": `Bearer ${key ?? ""}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
    });
  } catch (error) {
    throw new ApiError(0, "UNREACHABLE", `the broker did not answer (${error.message})`);
  }
  let answer;
  try {
    answer = await response.json();
  } catch {
    throw new ApiError(response.status, "INVALID_ANSWER", `HTTP ${response.status} without a JSON answer`);
  }
  if (answer.ok !== true) {
    const { code = "INVALID_ANSWER", message = `HTTP ${response.status}`, retryAfterMs } = answer.error ?? {};
    throw new ApiError(response.status, code, message, retryAfterMs);
  }
  return answer.result;
}
