// Live parts of a page (web/live.py) do not ask while the tab is hidden, and ask at once
// when it is shown again. Between their asks, which the server answers 304 while nothing
// changed, a running task's (or a waited-for turn's) seconds are counted here from the
// figures the server drew: "12 s of 90 s". Loaded as a file: the page policy refuses
// inline scripts.
(function () {
  "use strict";
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail && event.detail.elt;
    if (document.hidden && elt && elt.classList && elt.classList.contains("live")) {
      event.preventDefault();
    }
  });
  document.addEventListener("visibilitychange", function () {
    if (document.hidden || !window.htmx) {
      return;
    }
    document.querySelectorAll(".live[hx-get]").forEach(function (elt) {
      window.htmx.trigger(elt, "wake");
    });
    tick();
  });

  // When each counter was drawn, by this page's clock: the server's "now" is its origin,
  // so the two clocks need not agree.
  function drawn(elt, at) {
    if (elt.palaestraDrawn === undefined) {
      elt.palaestraDrawn = at;
    }
    return elt.palaestraDrawn;
  }

  function mark(root) {
    var at = Date.now() / 1000;
    if (root && root.querySelectorAll) {
      root.querySelectorAll(".elapsed[data-sent]").forEach(function (elt) {
        drawn(elt, at);
      });
    }
  }

  function tick() {
    if (document.hidden) {
      return;
    }
    var at = Date.now() / 1000;
    document.querySelectorAll(".elapsed[data-sent]").forEach(function (elt) {
      var sent = parseFloat(elt.dataset.sent);
      var deadline = parseFloat(elt.dataset.deadline);
      var now = parseFloat(elt.dataset.now) + (at - drawn(elt, at));
      if (isNaN(sent) || isNaN(deadline) || isNaN(now)) {
        return;
      }
      var allowed = Math.floor(deadline - sent);
      var ran = Math.min(Math.max(Math.floor(now - sent), 0), allowed);
      var text = ran + " s of " + allowed + " s";
      if (elt.textContent !== text) {
        elt.textContent = text;
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    mark(document);
  });
  document.addEventListener("htmx:load", function (event) {
    mark(event.detail && event.detail.elt);
  });
  window.setInterval(tick, 1000);
})();
