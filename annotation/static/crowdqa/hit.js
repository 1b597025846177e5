// crowdqa HIT pages: autosave, time left, dialogs and confirmations. The forms work without this
// script (plain HTML posts); it only adds comfort and safety for the worker.
(function () {
  "use strict";

  var form = document.getElementById("hit-form");
  var status = document.getElementById("autosave-status");
  var AUTOSAVE_MS = 4000;

  function say(text, cls) {
    if (!status) return;
    status.textContent = text;
    status.className = "autosave" + (cls ? " " + cls : "");
  }

  // ---- autosave ---------------------------------------------------------------------------
  if (form && form.dataset.draftUrl) {
    // "Draft saved" is only shown when nothing was typed since that save started, and a save asked
    // for while another is in flight runs right after it, so the status never vouches for old text.
    var dirty = false, saving = false, again = false, lastBody = null;
    var body = function () { return new URLSearchParams(new FormData(form)); };
    var save = function () {
      if (!dirty) return;
      if (saving) { again = true; return; }
      var data = body();
      var text = data.toString();
      if (text === lastBody) { dirty = false; say("Draft saved", "ok"); return; }
      saving = true; dirty = false;
      say("Saving draft…");
      fetch(form.dataset.draftUrl, { method: "POST", body: data, credentials: "same-origin" })
        .then(function (r) { return r.json().then(function (j) { return [r, j]; }); })
        .then(function (rj) {
          if (rj[0].ok) {
            lastBody = text;
            var t = new Date(rj[1].saved_at);
            if (dirty) say("Unsaved changes");
            else say("Draft saved " + t.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" }), "ok");
          } else {
            say("This HIT no longer accepts answers (" + (rj[1].status || rj[0].status) + ")", "bad");
          }
        })
        .catch(function () { dirty = true; say("Offline: draft not saved yet, retrying", "warn"); })
        .then(function () {
          saving = false;
          if (again) { again = false; save(); }
        });
    };
    form.addEventListener("input", function () {
      dirty = true;
      if (!saving) say("Unsaved changes");
    });
    form.addEventListener("change", function () { dirty = true; save(); });
    form.addEventListener("focusout", function () { if (dirty) save(); });
    form.addEventListener("crowdqa:changed", function () { dirty = true; save(); });
    setInterval(save, AUTOSAVE_MS);
    var beacon = function () {
      if (!dirty || !navigator.sendBeacon) return;
      navigator.sendBeacon(form.dataset.draftUrl, body());
      dirty = false;
    };
    window.addEventListener("pagehide", beacon);
    document.addEventListener("visibilitychange", function () { if (document.visibilityState === "hidden") beacon(); });
    form.addEventListener("submit", function (event) {
      // Runs after every other submit listener: only a submit nobody cancelled disables the button.
      setTimeout(function () {
        if (event.defaultPrevented) return;
        dirty = false;
        var button = form.querySelector("[type=submit]");
        if (button) { button.disabled = true; button.textContent = "Submitting…"; }
      }, 0);
    });
  }

  // ---- time left --------------------------------------------------------------------------
  var timer = document.getElementById("timer");
  if (timer && timer.dataset.expiresAt) {
    var end = new Date(timer.dataset.expiresAt).getTime();
    var tick = function () {
      var left = Math.max(0, Math.floor((end - Date.now()) / 1000));
      var h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
      timer.textContent = (h ? h + ":" + String(m).padStart(2, "0") : m) + ":" + String(s).padStart(2, "0") + " left";
      timer.classList.toggle("warn", left < 300);
      if (left === 0) { timer.textContent = "Time is up"; clearInterval(handle); }
    };
    var handle = setInterval(tick, 1000);
    tick();
  }

  // ---- dialogs and confirmations ----------------------------------------------------------
  document.querySelectorAll("[data-open-dialog]").forEach(function (button) {
    button.addEventListener("click", function () {
      var dialog = document.getElementById(button.dataset.openDialog);
      if (dialog && dialog.showModal) dialog.showModal();
    });
  });
  if (/[?&]tutorial=1\b/.test(window.location.search)) {
    var help = document.getElementById("help-dialog");
    if (help && help.showModal) help.showModal();
    if (window.history.replaceState) window.history.replaceState(null, "", window.location.pathname);
  }
  document.querySelectorAll("form[data-confirm]").forEach(function (f) {
    f.addEventListener("submit", function (event) {
      if (!window.confirm(f.dataset.confirm)) event.preventDefault();
    });
  });
  var summary = document.getElementById("error-summary");
  if (summary && window.history.replaceState) {
    // This page answers a POST: make a reload a plain GET, which shows the newest autosaved draft
    // instead of re-sending the older fields.
    window.history.replaceState(null, "", window.location.pathname);
  }
  if (summary) {
    var first = document.querySelector(".field-error");
    if (first && first.scrollIntoView) first.scrollIntoView({ block: "center" });
    summary.focus({ preventScroll: !!first });
  }
})();
