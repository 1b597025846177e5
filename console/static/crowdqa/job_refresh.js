// A running job's page keeps itself current: every 2 s, while the tab is visible, it fetches itself
// and swaps in the fresh #job-live region; once the job has ended it reloads once to show the outcome.
// (A <meta http-equiv="refresh"> would do the same but moves the page under a screen reader's feet.)
(function () {
  "use strict";
  const live = document.getElementById("job-live");
  if (!live || live.dataset.running !== "true") return;
  async function tick() {
    if (document.hidden) { setTimeout(tick, 2000); return; }
    try {
      const response = await fetch(window.location.href, { headers: { "X-Requested-With": "fetch" } });
      const doc = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = doc.getElementById("job-live");
      if (fresh && fresh.dataset.running !== "true") { window.location.reload(); return; }
      if (fresh) live.innerHTML = fresh.innerHTML;
    } catch (error) {
      // a dropped connection: try again at the next tick
    }
    setTimeout(tick, 2000);
  }
  setTimeout(tick, 2000);
})();
