// crowdqa HIT pages: autosave, time left, dialogs and confirmations. The forms work without this
// script (plain HTML posts); it only adds comfort and safety for the worker.
(function () {
  "use strict";

  var form = document.getElementById("hit-form");
  var status = document.getElementById("autosave-status");

  function say(text, cls) {
    if (!status) return;
    status.textContent = text;
    status.className = "autosave" + (cls ? " " + cls : "");
  }

  // ---- active time -----------------------------------------------------------------------
  // Counts the time this page is visible and in use: an input (key, pointer, scroll, focus) within the
  // last IDLE_MS. The running total goes with every autosave, in a beacon when the page is hidden or
  // left, and with the submission; the server keeps the largest total per page load
  // (annotation/active_time.py), so a reload or a late beacon never counts twice.
  var active = null;
  if (form && form.dataset.activeUrl) {
    active = (function () {
      var IDLE_MS = 90000;
      var page = Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 10);
      var total = 0, last = Date.now(), lastInput = Date.now();
      var visible = function () { return document.visibilityState !== "hidden"; };
      var tick = function () {
        var now = Date.now();
        if (visible()) total += Math.max(0, Math.min(now, lastInput + IDLE_MS) - Math.max(last, 0));
        last = now;
      };
      var poke = function () { tick(); lastInput = Date.now(); };
      ["keydown", "input", "pointerdown", "pointermove", "wheel", "scroll", "focusin", "touchstart"].forEach(function (name) {
        document.addEventListener(name, poke, { capture: true, passive: true });
      });
      var fields = function (data) {
        tick();
        data.set("active_page", page);
        data.set("active_ms", String(Math.round(total)));
        return data;
      };
      var send = function () {
        var data = fields(new URLSearchParams());
        if (navigator.sendBeacon && navigator.sendBeacon(form.dataset.activeUrl, data)) return;
        fetch(form.dataset.activeUrl, { method: "POST", body: data, credentials: "same-origin", keepalive: true }).catch(function () {});
      };
      document.addEventListener("visibilitychange", function () {
        if (!visible()) {
          // Count up to the moment the page was hidden, then nothing until it is shown again.
          var now = Date.now();
          total += Math.max(0, Math.min(now, lastInput + IDLE_MS) - last);
          last = now;
          send();
        } else {
          last = Date.now();
          lastInput = last; // coming back to the page is an input
        }
      });
      window.addEventListener("pagehide", send);
      setInterval(tick, 5000);
      form.addEventListener("submit", function () {
        var body = fields(new URLSearchParams());
        ["active_page", "active_ms"].forEach(function (name) {
          var input = form.querySelector("input[name=" + name + "]");
          if (!input) { input = document.createElement("input"); input.type = "hidden"; input.name = name; form.appendChild(input); }
          input.value = body.get(name);
        });
      });
      return { fields: fields, total: function () { tick(); return total; } };
    })();
    window.crowdqaActiveTime = active;
  }

  // ---- autosave --------------------------------------------------------------------------
  // Every field carries a revision: when this page last changed it (ms on this computer's clock), or
  // the revision the server rendered it with. Saves send the whole form with the revisions and the
  // server keeps, per field, the newer one (annotation/drafts.py), so late saves, a second tab or a
  // reload never put older text back. Each edit is also kept in localStorage at once, so text typed
  // just before a reload or a crash is restored from there when it is newer than the server's.
  if (form && form.dataset.draftUrl) {
    var revisions = {};
    try { revisions = JSON.parse((document.getElementById("draft-revisions") || {}).textContent || "{}") || {}; } catch (e) { revisions = {}; }
    var localKey = "crowdqa-draft:" + form.dataset.draftUrl;
    var known = {}, lastRev = 0, dirty = false, saving = false, again = false, lastBody = null, debounce = null;
    var values = function () {
      var out = {};
      new FormData(form).forEach(function (v, k) {
        if (typeof v === "string" && k !== "draft_revisions" && k !== "active_page" && k !== "active_ms" && !(k in out)) out[k] = v;
      });
      return out;
    };
    var readLocal = function () { try { return JSON.parse(localStorage.getItem(localKey) || "{}") || {}; } catch (e) { return {}; } };
    var writeLocal = function (edits) {
      try {
        var local = readLocal();
        Object.keys(edits).forEach(function (k) { local[k] = edits[k]; });
        localStorage.setItem(localKey, JSON.stringify(local));
      } catch (e) { /* storage full or disabled: the server copy still works */ }
    };
    // Restore edits kept locally that are newer than the server's copy (typed just before a reload).
    var restored = 0, local = readLocal();
    Object.keys(local).forEach(function (name) {
      // A name is one field, or a group of radio buttons (a RadioNodeList, whose value picks one).
      var entry = local[name], el = form.elements.namedItem(name);
      if (!entry || !el || typeof entry.v !== "string") return;
      if (el.tagName && (el.readOnly || el.disabled || el.type === "checkbox" || el.type === "radio")) return;
      if (+entry.r > (+revisions[name] || 0)) {
        if (el.value !== entry.v) { el.value = entry.v; restored++; }
        revisions[name] = +entry.r;
        dirty = true;
      }
    });
    known = values();
    Object.keys(revisions).forEach(function (k) { lastRev = Math.max(lastRev, +revisions[k] || 0); });
    // Stamp every field whose value changed since the last look (typed, or set by the page's script).
    var stamp = function () {
      var now = values(), edits = {}, any = false;
      Object.keys(now).forEach(function (k) {
        if (now[k] !== known[k]) {
          lastRev = Math.max(Date.now(), lastRev + 1);
          revisions[k] = lastRev; edits[k] = { v: now[k], r: lastRev }; any = true;
        }
      });
      known = now;
      if (any) { dirty = true; writeLocal(edits); }
      return any;
    };
    var body = function () {
      var data = new URLSearchParams(new FormData(form));
      data.set("draft_revisions", JSON.stringify(revisions));
      if (active) active.fields(data);
      return data;
    };
    // Once the server holds an edit, the browser's copy of it is dropped (nothing lingers on a shared computer).
    var pruneLocal = function (sent) {
      try {
        var local = readLocal(), left = {};
        Object.keys(local).forEach(function (k) { if (local[k] && +local[k].r > (+sent[k] || 0)) left[k] = local[k]; });
        if (Object.keys(left).length) localStorage.setItem(localKey, JSON.stringify(left));
        else localStorage.removeItem(localKey);
      } catch (e) { /* storage disabled */ }
    };
    var fmt = function (d) { return String(d.getHours()).padStart(2, "0") + ":" + String(d.getMinutes()).padStart(2, "0"); };
    var save = function () {
      clearTimeout(debounce);
      stamp();
      if (!dirty) return;
      if (saving) { again = true; return; }
      var data = body(), sent = JSON.parse(data.get("draft_revisions"));
      var text = data.toString();
      if (text === lastBody) { dirty = false; say("Draft saved", "ok"); return; }
      saving = true; dirty = false;
      say("Saving draft…");
      fetch(form.dataset.draftUrl, { method: "POST", body: data, credentials: "same-origin", keepalive: text.length < 60000 })
        .then(function (r) { return r.json().then(function (j) { return [r, j]; }); })
        .then(function (rj) {
          if (rj[0].ok) {
            lastBody = text;
            pruneLocal(sent);
            if (dirty) say("Unsaved changes");
            else say("Draft saved " + fmt(new Date(rj[1].saved_at)), "ok");
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
    var soon = function (ms) { clearTimeout(debounce); debounce = setTimeout(save, ms); };
    form.addEventListener("input", function () {
      if (stamp() && !saving) say("Unsaved changes");
      soon(700);
    });
    form.addEventListener("change", function () { soon(50); });
    form.addEventListener("focusout", function () { soon(50); });
    form.addEventListener("crowdqa:changed", function () { soon(50); });
    setInterval(save, 15000);
    var leave = function () {
      stamp();
      if (!dirty) return;
      var data = body();
      if (navigator.sendBeacon && navigator.sendBeacon(form.dataset.draftUrl, data)) { dirty = false; return; }
      fetch(form.dataset.draftUrl, { method: "POST", body: data, credentials: "same-origin", keepalive: true }).catch(function () {});
      dirty = false;
    };
    window.addEventListener("pagehide", leave);
    document.addEventListener("visibilitychange", function () { if (document.visibilityState === "hidden") leave(); });
    if (restored) say("Restored " + restored + " unsaved change" + (restored === 1 ? "" : "s") + " from this browser", "warn");
    if (dirty) soon(50);
    form.addEventListener("submit", function (event) {
      stamp();
      var rev = form.querySelector("input[name=draft_revisions]");
      if (!rev) { rev = document.createElement("input"); rev.type = "hidden"; rev.name = "draft_revisions"; form.appendChild(rev); }
      rev.value = JSON.stringify(revisions);
      // Runs after every other submit listener: only a submit nobody cancelled disables the button.
      setTimeout(function () {
        if (event.defaultPrevented) return;
        dirty = false;
        pruneLocal(revisions); // the submission carries every field; an invalid one is kept as the draft
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
  // The tutorial is the same for every HIT of a kind: the dialog fetches it (the browser caches it)
  // the first time it opens; until then, and if the fetch fails, it holds a link to the same text.
  var tutorialBody = document.getElementById("tutorial-body");
  var loadTutorial = function () {
    if (!tutorialBody || tutorialBody.dataset.loaded || !window.fetch) return;
    tutorialBody.dataset.loaded = "1";
    fetch(tutorialBody.dataset.src, { credentials: "omit" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(function (html) { tutorialBody.innerHTML = html; })
      .catch(function () { delete tutorialBody.dataset.loaded; });
  };
  var openDialog = function (dialog) {
    if (!dialog || !dialog.showModal) return;
    if (dialog.id === "help-dialog") loadTutorial();
    dialog.showModal();
  };
  document.querySelectorAll("[data-open-dialog]").forEach(function (button) {
    button.addEventListener("click", function () {
      openDialog(document.getElementById(button.dataset.openDialog));
    });
  });
  if (/[?&]tutorial=1\b/.test(window.location.search)) {
    openDialog(document.getElementById("help-dialog"));
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
