// crowdqa Syllabus HIT: on the shared viewer (doc_viewer.js), search, text selection -> answer spans with
// exact character offsets into Document.text, one-card-at-a-time QA cards, and client-side checks that
// mirror the server's (annotation/hits/syllabus_qa.py + annotation/qc/syllabusqa.py). Autosave is hit.js's:
// after changing hidden inputs we dispatch "crowdqa:changed" on the form. Worker text is only ever put
// into the page with .value / .textContent.
(function () {
  "use strict";

  var form = document.getElementById("hit-form");
  var layout = document.getElementById("syl-layout");
  if (!form || !layout) return;
  document.body.classList.add("js");

  var fieldset = form.querySelector("fieldset.task-fields");
  var readOnly = !!(fieldset && fieldset.disabled);
  var textView = document.getElementById("text-view");
  var statusEl = document.getElementById("viewer-status");
  var floatAdd = document.getElementById("float-add");
  var cards = Array.prototype.slice.call(form.querySelectorAll(".qa-card"));
  var stepBtns = Array.prototype.slice.call(form.querySelectorAll(".step-btn"));
  var pageEls = Array.prototype.slice.call(textView.querySelectorAll(".page-text"));
  var storeKey = "crowdqa-syllabus:" + (form.dataset.draftUrl || location.pathname);
  var minWords = parseInt(form.dataset.minQuestionWords || "3", 10);
  var current = 0, attempted = false;

  function changed() { form.dispatchEvent(new Event("crowdqa:changed")); }
  function say(text) { if (statusEl) { statusEl.textContent = ""; statusEl.textContent = text; } toast(text); }
  var toastEl = null, toastTimer = null;
  function toast(text) {
    if (!toastEl) { toastEl = document.createElement("div"); toastEl.className = "syl-toast"; toastEl.setAttribute("aria-hidden", "true"); document.body.appendChild(toastEl); }
    toastEl.textContent = text; toastEl.classList.add("show");
    clearTimeout(toastTimer); toastTimer = setTimeout(function () { toastEl.classList.remove("show"); }, 2600);
  }

  // ---- the viewer (doc_viewer.js): pages, text/PDF tabs ----------------------------------------
  var viewer = window.crowdqaDocViewer(layout, { onPage: function () { remember(); }, onScroll: function () { placeFloat(); } });
  var showPage = viewer.showPage;

  // ---- offsets: page texts are document.text[start:end]; JS strings count UTF-16 units ---------
  // Python offsets count code points; convert when a page holds astral characters.
  var pages = pageEls.map(function (el) {
    var text = el.textContent;
    return { el: el, page: +el.dataset.page, start: +el.dataset.start, end: +el.dataset.end, text: text,
             astral: /[\uD800-\uDFFF]/.test(text) };
  });
  function cpLen(s) { var n = 0; for (var i = 0; i < s.length; i++) { var c = s.charCodeAt(i); if (c < 0xDC00 || c > 0xDFFF) n++; } return n; }
  var offsetsTrusted = pages.every(function (p) { return cpLen(p.text) === p.end - p.start; });
  if (!offsetsTrusted && window.console) console.warn("crowdqa: page texts do not match their offsets; spans will be located by the server");

  function pointIn(p, node, offset) {
    var r = document.createRange();
    r.selectNodeContents(p.el);
    r.setEnd(node, offset);
    return r.toString().length; // UTF-16 units from the page start (works across <mark> elements)
  }
  function rangeOfPage(p) { var r = document.createRange(); r.selectNodeContents(p.el); return r; }
  // Map a DOM point to (page index, UTF-16 offset in that page), clamped into page texts.
  function mapPoint(node, offset, isEnd) {
    if (isEnd) {
      for (var i = pages.length - 1; i >= 0; i--) {
        var cmp = rangeOfPage(pages[i]).comparePoint(node, offset);
        if (cmp === 0) return [i, pointIn(pages[i], node, offset)];
        if (cmp > 0) return [i, pages[i].text.length];
      }
      return null;
    }
    for (var k = 0; k < pages.length; k++) {
      var c = rangeOfPage(pages[k]).comparePoint(node, offset);
      if (c === 0) return [k, pointIn(pages[k], node, offset)];
      if (c < 0) return [k, 0];
    }
    return null;
  }
  function toDoc(pi, u16) { var p = pages[pi]; return p.start + (p.astral ? cpLen(p.text.slice(0, u16)) : u16); }

  // The current selection in the syllabus text as {text, start, end, page} (offsets in Document.text).
  function selectionInfo() {
    var sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
    return rangeInfo(sel.getRangeAt(0));
  }
  // A DOM range in the syllabus text as {text, start, end, page}, or null.
  function rangeInfo(range) {
    if (!textView.contains(range.commonAncestorContainer)) return null;
    var a = mapPoint(range.startContainer, range.startOffset, false);
    var b = mapPoint(range.endContainer, range.endOffset, true);
    if (!a || !b || b[0] < a[0] || (a[0] === b[0] && b[1] <= a[1])) return null;
    // Trim whitespace at both ends (moving the offsets with it).
    var ai = a[0], as = a[1], bi = b[0], be = b[1];
    while (true) {
      if (as >= pages[ai].text.length) { if (ai < bi) { ai++; as = 0; continue; } break; }
      if (/\s/.test(pages[ai].text.charAt(as)) && !(ai === bi && as >= be)) { as++; continue; }
      break;
    }
    while (true) {
      if (be <= 0) { if (bi > ai) { bi--; be = pages[bi].text.length; continue; } break; }
      if (/\s/.test(pages[bi].text.charAt(be - 1)) && !(ai === bi && be <= as)) { be--; continue; }
      break;
    }
    if (ai > bi || (ai === bi && be <= as)) return null;
    var text = "";
    for (var i = ai; i <= bi; i++) text += pages[i].text.slice(i === ai ? as : 0, i === bi ? be : pages[i].text.length);
    return { text: text, start: toDoc(ai, as), end: toDoc(bi, be), page: pages[ai].page };
  }

  // ---- search: all matches across pages, count, next/previous, highlighted ---------------------
  var searchBox = document.getElementById("doc-search");
  var countEl = document.getElementById("search-count");
  var marks = [], markIndex = -1, searchTimer = null;
  function clearMarks() {
    pages.forEach(function (p) {
      var ms = p.el.querySelectorAll("mark");
      if (!ms.length) return;
      ms.forEach(function (m) { m.replaceWith(document.createTextNode(m.textContent)); });
      p.el.normalize();
    });
    marks = []; markIndex = -1;
  }
  function runSearch() {
    clearMarks();
    var q = searchBox.value.trim().toLowerCase();
    if (q.length < 2) { countEl.textContent = q ? "type 2+ letters" : ""; return; }
    pages.forEach(function (p) {
      var hay = p.text.toLowerCase(), found = [], at = hay.indexOf(q);
      while (at >= 0) { found.push(at); at = hay.indexOf(q, at + q.length); }
      var node = p.el.firstChild;
      var pageMarks = [];
      for (var i = found.length - 1; i >= 0 && node; i--) {
        var r = document.createRange();
        r.setStart(node, found[i]); r.setEnd(node, found[i] + q.length);
        var mark = document.createElement("mark");
        mark.dataset.page = p.page;
        r.surroundContents(mark);
        pageMarks.unshift(mark);
      }
      marks = marks.concat(pageMarks);
    });
    countEl.textContent = marks.length ? marks.length + " match" + (marks.length === 1 ? "" : "es") : "no match";
    if (marks.length) jump(0);
  }
  function jump(i) {
    if (!marks.length) return;
    if (markIndex >= 0 && marks[markIndex]) marks[markIndex].classList.remove("current");
    markIndex = (i + marks.length) % marks.length;
    var m = marks[markIndex];
    m.classList.add("current");
    countEl.textContent = (markIndex + 1) + " of " + marks.length;
    // The current match is what Alt+S / "Add selected text" adds when nothing is selected.
    var r = document.createRange(); r.selectNodeContents(m);
    lastSel = rangeInfo(r);
    if (viewer.mode() === "pdf") { showPage(+m.dataset.page); return; }
    textView.scrollTop = Math.max(0, m.offsetTop - textView.clientHeight / 3);
  }
  searchBox.addEventListener("input", function () { clearTimeout(searchTimer); searchTimer = setTimeout(runSearch, 200); });
  searchBox.addEventListener("keydown", function (e) {
    if (e.key === "Enter") { e.preventDefault(); clearTimeout(searchTimer); if (!marks.length) runSearch(); else jump(markIndex + (e.shiftKey ? -1 : 1)); }
    if (e.key === "Escape") { searchBox.value = ""; clearMarks(); countEl.textContent = ""; }
  });
  document.getElementById("search-next").addEventListener("click", function () { jump(markIndex + 1); });
  document.getElementById("search-prev").addEventListener("click", function () { jump(markIndex - 1); });

  // ---- cards ---------------------------------------------------------------------------------
  function remember() {
    try { localStorage.setItem(storeKey, JSON.stringify({ card: current, page: viewer.page() })); } catch (e) { /* private mode */ }
  }
  function goto(i, focus) {
    if (i < 0 || i >= cards.length) return;
    current = i;
    cards.forEach(function (c, k) { c.classList.toggle("current", k === i); });
    stepBtns.forEach(function (b, k) {
      b.classList.toggle("current", k === i);
      if (k === i) b.setAttribute("aria-current", "step"); else b.removeAttribute("aria-current");
    });
    var right = form.closest(".syl-cards");
    if (right) right.scrollTop = 0;
    if (focus) { var q = cards[i].querySelector("textarea, input[type=text]"); if (q) q.focus(); }
    remember();
  }
  form.addEventListener("click", function (e) {
    var t = e.target.closest("[data-goto]");
    if (t) { goto(parseInt(t.dataset.goto, 10), !t.classList.contains("step-btn")); if (t.classList.contains("step-btn")) t.focus(); }
  });
  document.querySelectorAll("[data-guide]").forEach(function (b) {
    b.addEventListener("click", function () {
      var g = document.getElementById("guide-" + b.dataset.guide);
      if (g) setTimeout(function () { g.scrollIntoView({ block: "start" }); }, 30);
    });
  });

  // ---- spans ---------------------------------------------------------------------------------
  function slotParts(slot) {
    return { text: slot.querySelector(".span-text"), start: slot.querySelector(".span-start"),
             end: slot.querySelector(".span-end"), page: slot.querySelector(".span-pageno"),
             label: slot.querySelector(".span-page"), status: slot.querySelector(".span-status") };
  }
  function setSlot(slot, v) {
    var p = slotParts(slot);
    p.text.value = v.text; p.start.value = v.start; p.end.value = v.end; p.page.value = v.page;
    p.label.textContent = v.page !== "" && v.page != null ? " · page " + v.page : "";
    slot.dataset.orig = v.text; slot.dataset.origStart = v.start; slot.dataset.origEnd = v.end; slot.dataset.origPage = v.page;
    slot.classList.toggle("empty", !v.text);
  }
  function getSlot(slot) {
    var p = slotParts(slot);
    return { text: p.text.value, start: p.start.value, end: p.end.value, page: p.page.value };
  }
  function refreshSpans(card) {
    var block = card.querySelector(".spans-block");
    if (!block) return;
    // Empty slots stay hidden except the first, so a span can always be typed or pasted.
    var slots = Array.prototype.slice.call(card.querySelectorAll(".span-slot"));
    slots.forEach(function (s) { s.classList.toggle("empty", !slotParts(s).text.value.trim()); s.classList.remove("next"); });
    var n = card.querySelectorAll(".span-slot:not(.empty)").length;
    block.classList.toggle("has-spans", n > 0);
    var next = slots.filter(function (s) { return s.classList.contains("empty"); })[0];
    if (next && n < +card.dataset.spanMax) next.classList.add("next");
    var add = block.querySelector(".add-span");
    if (add) add.disabled = readOnly || n >= +card.dataset.spanMax;
  }
  function addSpan(info) {
    if (readOnly) return;
    var card = cards[current];
    var max = +card.dataset.spanMax;
    var label = card.querySelector(".type-badge").textContent;
    if (!info) { say("Select some text in the syllabus (Text view) first."); return; }
    if (!max) { say("Card " + (current + 1) + " (" + label + ") takes no answer spans."); return; }
    var slots = Array.prototype.slice.call(card.querySelectorAll(".span-slot"));
    var dup = slots.some(function (s) { var v = getSlot(s); return v.text === info.text && String(v.start) === String(info.start); });
    if (dup) { say("That span is already on this card."); return; }
    var free = slots.filter(function (s) { return !slotParts(s).text.value.trim(); })[0];
    if (!free) { say("Card " + (current + 1) + " already has the maximum of " + max + " span" + (max > 1 ? "s" : "") + "."); return; }
    setSlot(free, offsetsTrusted ? info : { text: info.text, start: "", end: "", page: "" });
    clearServerMsgs(free.closest(".field"));
    slotParts(free).status.textContent = "";
    refreshSpans(card); recheck();
    var sel = window.getSelection(); if (sel) sel.removeAllRanges();
    lastSel = null; placeFloat();
    say("Added span " + (slots.indexOf(free) + 1) + " (page " + info.page + ") to card " + (current + 1) + ".");
    changed();
  }
  function removeSpan(slot) {
    var card = slot.closest(".qa-card");
    var slots = Array.prototype.slice.call(card.querySelectorAll(".span-slot"));
    var k = slots.indexOf(slot);
    for (var j = k; j < slots.length - 1; j++) {
      var next = slots[j + 1];
      setSlot(slots[j], getSlot(next));
      slots[j].dataset.orig = next.dataset.orig || ""; slots[j].dataset.origStart = next.dataset.origStart || "";
      slots[j].dataset.origEnd = next.dataset.origEnd || ""; slots[j].dataset.origPage = next.dataset.origPage || "";
    }
    setSlot(slots[slots.length - 1], { text: "", start: "", end: "", page: "" });
    slots.forEach(function (s) { slotParts(s).status.textContent = ""; });
    refreshSpans(card); recheck(); changed();
    var add = card.querySelector(".add-span"); if (add && !add.disabled) add.focus();
    say("Removed span " + (k + 1) + ".");
  }
  cards.forEach(function (card) {
    card.querySelectorAll(".span-slot").forEach(function (slot) {
      var v = getSlot(slot);
      slot.dataset.orig = v.start !== "" ? v.text : ""; slot.dataset.origStart = v.start;
      slot.dataset.origEnd = v.end; slot.dataset.origPage = v.page;
      slotParts(slot).label.textContent = v.page !== "" ? " · page " + v.page : v.text.trim() ? " · not located yet" : "";
      slotParts(slot).text.addEventListener("input", function () {
        // Edited by hand: the offsets no longer hold; the server locates the text again.
        var p = slotParts(slot);
        if (p.text.value === slot.dataset.orig && slot.dataset.origStart !== "") {
          p.start.value = slot.dataset.origStart; p.end.value = slot.dataset.origEnd; p.page.value = slot.dataset.origPage;
          p.label.textContent = " · page " + slot.dataset.origPage;
        } else { p.start.value = ""; p.end.value = ""; p.page.value = ""; p.label.textContent = p.text.value.trim() ? " · not located yet" : ""; }
        refreshSpans(card);
        clearTimeout(slot._locate);
        slot._locate = setTimeout(function () { locateSlot(slot); }, 450);
      });
      slot.querySelector(".span-remove").addEventListener("click", function () { removeSpan(slot); });
    });
    var add = card.querySelector(".add-span");
    if (add) {
      add.addEventListener("mousedown", function (e) { e.preventDefault(); }); // keep the selection
      add.addEventListener("click", function () { goto(cards.indexOf(card)); addSpan(selectionInfo() || lastSel); });
    }
    refreshSpans(card);
    // ---- reasoning steps ----
    var stepSlots = Array.prototype.slice.call(card.querySelectorAll(".step-slot"));
    var addStep = card.querySelector(".add-step");
    function refreshSteps() {
      if (addStep) addStep.disabled = readOnly || !card.querySelector(".step-slot.empty");
    }
    if (addStep) addStep.addEventListener("click", function () {
      var free = card.querySelector(".step-slot.empty");
      if (!free) return;
      free.classList.remove("empty"); free.querySelector("textarea").focus(); refreshSteps();
    });
    stepSlots.forEach(function (slot, k) {
      var rm = slot.querySelector(".step-remove");
      if (!rm) return;
      rm.addEventListener("click", function () {
        var visible = stepSlots.filter(function (s) { return !s.classList.contains("empty"); });
        for (var j = k; j < stepSlots.length - 1; j++) stepSlots[j].querySelector("textarea").value = stepSlots[j + 1].querySelector("textarea").value;
        stepSlots[stepSlots.length - 1].querySelector("textarea").value = "";
        var last = visible[visible.length - 1];
        if (last && last.querySelector(".step-remove")) last.classList.add("empty");
        refreshSteps(); updateStates(); changed();
        if (addStep) addStep.focus();
      });
    });
    refreshSteps();
  });

  // ---- typed or pasted spans: the server's span locator (the one QC uses) finds them ---------------
  function showLocated(slot, r) {
    var p = slotParts(slot);
    p.status.textContent = "";
    var use = function (hit, label) {
      var b = document.createElement("button");
      b.type = "button"; b.className = "btn small ghost span-use"; b.textContent = label;
      b.addEventListener("click", function () {
        setSlot(slot, { text: hit.text, start: hit.start, end: hit.end, page: hit.page });
        p.status.textContent = "Span " + (+slot.dataset.j + 1) + " now holds the syllabus text from page " + hit.page + ".";
        refreshSpans(slot.closest(".qa-card")); recheck(); changed();
        p.text.focus();
      });
      return b;
    };
    var quote = function (t) { return "“" + (t.length > 160 ? t.slice(0, 157) + "…" : t) + "”"; };
    if (r.status === "exact" && r.text === p.text.value.trim()) {
      p.start.value = r.start; p.end.value = r.end; p.page.value = r.page;
      slot.dataset.orig = p.text.value; slot.dataset.origStart = r.start; slot.dataset.origEnd = r.end; slot.dataset.origPage = r.page;
      p.label.textContent = " · page " + r.page;
      p.status.textContent = "Found in the syllabus on page " + r.page + ".";
      changed();
    } else if (r.status === "exact" || r.status === "normalized" || r.status === "repaired") {
      p.status.appendChild(document.createTextNode("Found on page " + r.page + " as " + quote(r.text) + " "));
      p.status.appendChild(use(r, "Use the syllabus text"));
    } else if (r.status === "not_found") {
      p.status.appendChild(document.createTextNode("Not found in the syllabus." + (r.nearest ? " Nearest match (page " + r.nearest.page + "): " + quote(r.nearest.text) + " " : " Copy the text exactly as the syllabus has it.")));
      if (r.nearest) p.status.appendChild(use(r.nearest, "Use the nearest match"));
    }
  }
  function locateSlot(slot) {
    var url = form.dataset.locateUrl, p = slotParts(slot), text = p.text.value.trim();
    if (!url || readOnly) return;
    if (!text) { p.status.textContent = ""; return; }
    if (p.start.value !== "") return; // offsets already hold (selected, or located before)
    var body = new URLSearchParams(); body.set("text", text);
    fetch(url, { method: "POST", body: body, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (r) { if (r && p.text.value.trim() === text) showLocated(slot, r); })
      .catch(function () { p.status.textContent = "Could not look the span up (offline); it is checked again when you submit."; });
  }
  function recheck() {
    updateStates();
    cards.forEach(yesNoNote);
    if (attempted && !showProblems().total && summary) summary.hidden = true;
  }

  // Selection: remember the last selection in the syllabus and offer a button next to it.
  var lastSel = null;
  function placeFloat() {
    if (!floatAdd) return;
    var info = readOnly ? null : selectionInfo();
    if (!info || viewer.mode() !== "text") { floatAdd.hidden = true; return; }
    var sel = window.getSelection();
    var rects = sel.getRangeAt(0).getClientRects();
    var rect = rects[rects.length - 1] || sel.getRangeAt(0).getBoundingClientRect();
    var box = floatAdd.parentElement.getBoundingClientRect();
    var vBox = textView.getBoundingClientRect();
    if (rect.bottom < vBox.top || rect.top > vBox.bottom) { floatAdd.hidden = true; return; }
    floatAdd.hidden = false;
    floatAdd.style.top = Math.min(vBox.bottom - box.top - 34, rect.bottom - box.top + 6) + "px";
    floatAdd.style.left = Math.max(8, Math.min(box.width - floatAdd.offsetWidth - 8, rect.right - box.left - floatAdd.offsetWidth / 2)) + "px";
    floatAdd.textContent = "+ Add as span to card " + (current + 1);
  }
  document.addEventListener("selectionchange", function () {
    var info = selectionInfo();
    if (info) lastSel = info;
    placeFloat();
  });
  if (floatAdd) {
    floatAdd.addEventListener("mousedown", function (e) { e.preventDefault(); });
    floatAdd.addEventListener("click", function () { addSpan(selectionInfo() || lastSel); });
  }

  // ---- checks (mirror the server; the server checks again) -----------------------------------
  var YES = ["yes", "yeah", "yep", "yup", "y", "correct", "true", "sure", "absolutely", "definitely"];
  var NO = ["no", "nope", "nah", "n", "false", "incorrect", "not"];
  function fold(s) { return s.toLowerCase().replace(/[^\p{L}\p{N}_\s]/gu, " ").replace(/\s+/g, " ").trim(); }
  function words(s) { return s.split(/\s+/).filter(function (w) { return /[\p{L}\p{N}]/u.test(w); }).length; }
  function ratio(a, b) { // rapidfuzz fuzz.ratio: normalised InDel similarity, 0-100
    if (!a.length && !b.length) return 100;
    var prev = new Array(b.length + 1).fill(0), cur = new Array(b.length + 1).fill(0);
    for (var i = 1; i <= a.length; i++) {
      for (var j = 1; j <= b.length; j++) cur[j] = a[i - 1] === b[j - 1] ? prev[j - 1] + 1 : Math.max(prev[j], cur[j - 1]);
      var t = prev; prev = cur; cur = t;
    }
    return 100 * (2 * prev[b.length]) / (a.length + b.length);
  }
  function countText(min, max, noun) { return min === max ? "exactly " + min + " " + noun : min + " to " + max + " " + noun + "s"; }
  function cardProblems(card) {
    var i = +card.dataset.card, type = card.dataset.type, out = [];
    var q = form.elements["qa-" + i + "-question"].value.trim();
    if (!q) out.push(["question", "Write a question."]);
    else if (words(q) < minWords) out.push(["question", "The question is too short: write a full question of at least " + minWords + " words."]);
    if (type !== "no answer") {
      var a = form.elements["qa-" + i + "-answer"].value.trim();
      if (!a) out.push(["answer", "Write an answer."]);
      else if (type === "yes/no") {
        var first = fold(a).split(" ")[0];
        if (YES.indexOf(first) < 0 && NO.indexOf(first) < 0) out.push(["answer", "Start the answer with \"Yes\" or \"No\"."]);
      }
    }
    var smin = +card.dataset.spanMin, smax = +card.dataset.spanMax;
    if (smax) {
      var ns = Array.prototype.filter.call(card.querySelectorAll(".span-text"), function (t) { return t.value.trim(); }).length;
      if (ns < smin || ns > smax) out.push(["span-0", "Add " + countText(smin, smax, "answer span") + " copied from the syllabus (select text on the left, then press Add selected text)."]);
    }
    var tmin = +card.dataset.stepMin, tmax = +card.dataset.stepMax;
    if (tmax) {
      var nt = Array.prototype.filter.call(card.querySelectorAll(".step-slot textarea"), function (t) { return t.value.trim(); }).length;
      if (nt < tmin || nt > tmax) out.push(["step-0", "Write " + countText(tmin, tmax, "reasoning step") + "."]);
    }
    return out;
  }
  function duplicateProblems() {
    var folded = cards.map(function (c) { return fold(form.elements["qa-" + c.dataset.card + "-question"].value); });
    var dup = {};
    for (var a = 0; a < folded.length; a++) {
      if (!folded[a]) continue;
      for (var b = 0; b < a; b++) if (folded[b] && ratio(folded[a], folded[b]) >= 90) { dup[a] = b; break; }
    }
    return dup;
  }
  // What QC will store for a yes/no answer, shown before submit: the dataset keeps one word (the paper
  // post-processes yes/no answers to a single word); the worker's explanation stays on the pair.
  function yesNoNote(card) {
    if (card.dataset.type !== "yes/no") return;
    var i = +card.dataset.card, a = form.elements["qa-" + i + "-answer"].value.trim();
    var box = msgBox(i, "answer"), note = box && box.querySelector(".field-note");
    if (!box) return;
    var first = fold(a).split(" ")[0], yes = YES.indexOf(first) >= 0, no = NO.indexOf(first) >= 0;
    var text = (yes || no) && words(a) > 1 ? "Stored in the dataset as “" + (yes ? "Yes" : "No") + "”; your explanation is kept with it." : "";
    if (!text) { if (note) note.remove(); return; }
    if (!note) { note = document.createElement("p"); note.className = "field-note small muted"; box.appendChild(note); }
    note.textContent = text;
  }
  function cardTouched(card) {
    return Array.prototype.some.call(card.querySelectorAll("textarea"), function (t) { return t.value.trim(); });
  }
  function updateStates() {
    var dup = duplicateProblems();
    cards.forEach(function (card, k) {
      var problems = cardProblems(card).length + (k in dup ? 1 : 0);
      var serverErr = !!card.querySelector(".field-error:not(.client)");
      var state = !problems && !serverErr ? "done" : (attempted || serverErr) ? "error" : cardTouched(card) ? "partial" : "";
      var btn = stepBtns[k];
      btn.dataset.state = state;
      btn.querySelector(".step-state").textContent = state === "done" ? "✓" : state === "error" ? "!" : state === "partial" ? "…" : "";
      btn.setAttribute("aria-label", "Card " + (k + 1) + ", " + card.querySelector(".type-badge").textContent +
        (state === "done" ? ", complete" : state === "error" ? ", has problems" : state === "partial" ? ", started" : ", not started"));
    });
  }
  function msgBox(i, fieldName) { return document.getElementById("qa-" + i + "-" + fieldName + "-msg"); }
  function clearServerMsgs(field) {
    if (!field) return;
    field.querySelectorAll(".field-error:not(.client), .field-warning").forEach(function (p) { p.remove(); });
    if (!field.querySelector(".field-error")) field.classList.remove("has-error");
  }
  function showProblems() {
    form.querySelectorAll(".field-error.client").forEach(function (p) {
      var f = p.closest(".field"); p.remove();
      if (f && !f.querySelector(".field-error")) f.classList.remove("has-error");
    });
    var dup = duplicateProblems(), bad = [], total = 0;
    cards.forEach(function (card, k) {
      var problems = cardProblems(card);
      if (k in dup) problems.push(["question", "This question repeats card " + (dup[k] + 1) + ": write a different question."]);
      problems.forEach(function (pr) {
        var box = msgBox(k, pr[0]);
        if (!box) return;
        var p = document.createElement("p");
        p.className = "field-error client"; p.textContent = pr[1];
        box.appendChild(p);
        box.closest(".field").classList.add("has-error");
      });
      if (problems.length) { bad.push(k); total += problems.length; }
    });
    return { cards: bad, total: total };
  }
  form.addEventListener("input", function (e) {
    var f = e.target.closest(".field");
    if (f) clearServerMsgs(f);
    clearTimeout(form._stateTimer);
    form._stateTimer = setTimeout(recheck, 250);
  });
  var summary = document.getElementById("client-summary");
  form.addEventListener("submit", function (e) {
    attempted = true;
    var result = showProblems();
    updateStates();
    var serverBad = cards.filter(function (c) { return c.querySelector(".field-error:not(.client)"); }).map(function (c) { return +c.dataset.card; });
    var bad = result.cards.concat(serverBad.filter(function (k) { return result.cards.indexOf(k) < 0; })).sort(function (a, b) { return a - b; });
    if (!result.cards.length) { summary.hidden = true; return; }
    e.preventDefault();
    summary.hidden = false;
    var listed = bad.slice(0, 5).map(function (k) { return k + 1; }).join(", ") + (bad.length > 5 ? "…" : "");
    summary.textContent = "Please fix " + result.total + " problem" + (result.total === 1 ? "" : "s") + " (card" +
      (bad.length === 1 ? " " : "s ") + listed + "). Nothing you typed is lost.";
    goto(bad[0]);
    var field = cards[bad[0]].querySelector(".has-error textarea, .has-error input:not([type=hidden]), .has-error button");
    if (field) field.focus();
    var button = form.querySelector("[type=submit]"), label = button.textContent;
    // hit.js disables the button on every submit event; undo that since nothing was sent.
    setTimeout(function () { button.disabled = false; button.textContent = label; changed(); }, 0);
  });

  // ---- keyboard shortcuts ----------------------------------------------------------------------
  document.addEventListener("keydown", function (e) {
    if (!e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.code === "KeyS") { e.preventDefault(); addSpan(selectionInfo() || lastSel); }
    else if (e.code === "KeyN") { e.preventDefault(); goto(Math.min(cards.length - 1, current + 1), true); }
    else if (e.code === "KeyP") { e.preventDefault(); goto(Math.max(0, current - 1), true); }
    else if (e.key === "PageDown") { e.preventDefault(); showPage(viewer.page() + 1); }
    else if (e.key === "PageUp") { e.preventDefault(); showPage(viewer.page() - 1); }
  });

  // ---- start where the worker was (or at the first card with a server error) ------------------
  var saved = {};
  try { saved = JSON.parse(localStorage.getItem(storeKey) || "{}") || {}; } catch (e) { saved = {}; }
  var firstError = cards.filter(function (c) { return c.querySelector(".field-error"); })[0];
  goto(firstError ? +firstError.dataset.card : Math.min(cards.length - 1, +saved.card || 0));
  if (saved.page) showPage(+saved.page);
  recheck();
})();
