// Live parts of a page (web/live.py) do not ask while the tab is hidden, and ask at once
// when it is shown again. Loaded as a file: the page policy refuses inline scripts.
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
  });
})();
