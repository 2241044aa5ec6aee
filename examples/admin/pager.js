// Paging by the API's opaque `nextPage` cursors: the cursors of the pages seen so far, so that
// the current page can be read again (every refresh) and the list can start over.

export class Pager {
  constructor() {
    this.reset();
  }

  /** Back to the first page. */
  reset() {
    this.cursors = [null];
    this.next = null;
  }

  /** The `page` argument of the current page (null: the first). */
  get current() {
    return this.cursors.at(-1);
  }

  /** 1 for the first page. */
  get number() {
    return this.cursors.length;
  }

  /** Notes the `nextPage` the current page answered. */
  answered(nextPage) {
    this.next = nextPage ?? null;
  }

  /** Moves to the next page; false on the last one. */
  advance() {
    if (this.next === null) return false;
    this.cursors.push(this.next);
    this.next = null;
    return true;
  }
}
