// The batch page's "Live progress" card polls its JSON endpoint and swaps in the fresh card.
// Polling pauses while the tab is hidden and stops once the batch is no longer live; an open
// "Progress per HIT" section stays open across refreshes.
(function () {
  "use strict";
  var card = document.getElementById("live-progress");
  if (!card || !card.dataset.progressUrl) return;
  var body = card.querySelector("[data-progress-body]");
  var state = card.querySelector("[data-progress-state]");
  var every = parseInt(card.dataset.every || "5000", 10);
  var timer = null;

  function schedule() {
    clearTimeout(timer);
    if (!document.hidden) timer = setTimeout(poll, every);
  }

  function poll() {
    fetch(card.dataset.progressUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (data) {
        var details = body.querySelector("details.hit-progress");
        var wasOpen = details ? details.open : null;
        body.innerHTML = data.html;
        if (wasOpen !== null) {
          var fresh = body.querySelector("details.hit-progress");
          if (fresh) fresh.open = wasOpen;
        }
        if (data.live) {
          state.textContent = "Refreshes every " + Math.round(every / 1000) + " s.";
          schedule();
        } else {
          state.textContent = "The batch is " + data.status_label.toLowerCase() + ": no more updates.";
        }
      })
      .catch(function () {
        state.textContent = "Could not refresh; trying again shortly.";
        schedule();
      });
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) poll();
  });
  schedule();
})();
