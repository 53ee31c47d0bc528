"""What the page itself still waits on, so a step's observation comes after the page has settled.

Playwright hears of a request a click started only when the browser reports it, which on a loaded machine
can come after the env has read the page; the page knows at once. ``PENDING_JS`` (a context init script, run
before any page script) counts the page's fetch and XHR calls not yet settled, body reads included;
``ROUND_TRIP_JS`` lets the page run its queued callbacks and returns that count.
"""

PENDING_JS = r"""
(() => {
  if (window.__cgPending) return;
  let pending = 0;
  const done = () => { pending = Math.max(0, pending - 1); };
  const track = (promise) => { pending++; promise.then(done, done); return promise; };
  Object.defineProperty(window, '__cgPending', {value: () => pending});
  const fetch = window.fetch;
  if (fetch) window.fetch = function (...args) { return track(fetch.apply(this, args)); };
  for (const name of ['text', 'json', 'blob', 'arrayBuffer', 'formData']) {
    const read = window.Response && Response.prototype[name];
    if (read) Response.prototype[name] = function (...args) { return track(read.apply(this, args)); };
  }
  const send = window.XMLHttpRequest && XMLHttpRequest.prototype.send;
  if (send) XMLHttpRequest.prototype.send = function (...args) {
    pending++;
    this.addEventListener('loadend', done, {once: true});
    try { return send.apply(this, args); } catch (error) { done(); throw error; }
  };
})();
"""
ROUND_TRIP_JS = "() => new Promise((done) => setTimeout(() => done(window.__cgPending ? window.__cgPending() : 0), 0))"
