// Waiting on conditions with deadlines (never a fixed sleep): `eventually` polls a condition
// until it holds, `nextEvent` waits for one emitter event that matches.

/**
 * Polls `condition` (sync or async) every `intervalMs` until it returns a truthy value, which
 * is returned. Throws after `timeoutMs`, with `message` and the last value or error.
 * @template T
 * @param {() => T | Promise<T>} condition
 * @param {{timeoutMs?: number, intervalMs?: number, message?: string}} [options]
 * @returns {Promise<T>}
 */
export async function eventually(condition, { timeoutMs = 10_000, intervalMs = 20, message = "condition" } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await condition();
      if (last) return last;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      const detail = last instanceof Error ? last.stack : JSON.stringify(last);
      throw new Error(`${message}: not true within ${timeoutMs} ms (last: ${detail})`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Resolves with the next `type` event of `emitter` (anything with `on(type, fn)` returning an
 * unsubscribe function) for which `predicate` holds; rejects after `timeoutMs`.
 * @param {{on(type: string, fn: (detail: any) => void): () => void}} emitter
 * @param {string} type
 * @param {(detail: any) => boolean} [predicate]
 * @param {number} [timeoutMs]
 * @returns {Promise<any>}
 */
export function nextEvent(emitter, type, predicate = () => true, timeoutMs = 10_000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no matching "${type}" event within ${timeoutMs} ms`));
    }, timeoutMs);
    const off = emitter.on(type, (detail) => {
      if (!predicate(detail)) return;
      clearTimeout(timer);
      off();
      resolve(detail);
    });
  });
}

/**
 * Records every `type` event of `emitter` into an array (for later assertions).
 * @returns {{events: any[], stop: () => void}}
 */
export function record(emitter, type) {
  const events = [];
  const stop = emitter.on(type, (detail) => events.push(detail));
  return { events, stop };
}
