// Whether the server can be reached, as the page's requests find out. A request that fails
// for want of a connection marks it lost; from then on the server is asked at growing
// intervals until it answers, and everyone waiting is told it is back.

const BACKOFF_MS = [1000, 2000, 4000, 8000, 15000, 30000];

class Connection extends EventTarget {
  constructor() {
    super();
    this.online = true;
    this.nextTryAt = null; // when the next probe goes out, while offline
    this.attempts = 0;
    this.timer = null;
    this.probing = false;
  }

  /** A request got no answer at all: the server is down, or the network is. */
  lost() {
    if (!this.online) return;
    this.online = false;
    this.attempts = 0;
    this.schedule();
  }

  /** A request got an answer. */
  reached() {
    if (this.online) return;
    this.online = true;
    clearTimeout(this.timer);
    this.nextTryAt = null;
    this.changed();
  }

  /** Ask now rather than at the next planned try. */
  retryNow() {
    clearTimeout(this.timer);
    this.probe();
  }

  /** Resolves once the server answers again (at once when it does now). */
  whenOnline(signal) {
    if (this.online) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.removeEventListener("change", check);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const check = () => this.online && done();
      this.addEventListener("change", check);
      signal?.addEventListener("abort", done);
    });
  }

  schedule() {
    const delay = BACKOFF_MS[Math.min(this.attempts, BACKOFF_MS.length - 1)];
    this.nextTryAt = Date.now() + delay;
    this.timer = setTimeout(() => this.probe(), delay);
    this.changed();
  }

  async probe() {
    if (this.probing) return;
    this.probing = true;
    this.attempts += 1;
    this.nextTryAt = null;
    this.changed();
    try {
      const response = await fetch("/ok", { cache: "no-store" });
      if (response.ok) {
        this.reached();
        return;
      }
    } catch {
      // Still unreachable.
    } finally {
      this.probing = false;
    }
    if (!this.online) this.schedule();
  }

  changed() {
    this.dispatchEvent(new Event("change"));
  }
}

export const connection = new Connection();
