// crowdqa SciQ HIT pages: live word counters and warnings (stage 1), live limits on suggestions and
// own distractors (stage 2). The server checks everything again (annotation/qc/sciq.py); this script only
// tells the worker early. Text is only ever written with textContent, never innerHTML.
(function () {
  "use strict";

  var form = document.getElementById("hit-form");
  if (!form || !form.dataset.sciq) return;
  var preview = document.body.classList.contains("is-preview");

  // Same word rule as annotation.qc.common.word_count: whitespace tokens holding a letter or digit.
  function words(text) {
    return text.split(/\s+/).filter(function (w) { return /[\p{L}\p{N}]/u.test(w); }).length;
  }
  // Same comparison as annotation.qc.sciq._squash: lowercase letters and digits only.
  function squash(text) { return text.toLowerCase().replace(/[^0-9a-z]/g, ""); }
  function setCounter(el, text, bad, empty) {
    el.textContent = text;
    el.classList.toggle("bad", !empty && !!bad);
    el.classList.toggle("good", !empty && !bad);
  }
  // The server's messages describe the values as submitted: once the worker changes that part of the
  // form (a field, the passage choice, the kept suggestions), its messages go; the next submit checks again.
  function fresh(id) { return !!document.getElementById(id); }
  function clearMessages(event) {
    var box = event.target.closest(".field, .own-row, .sciq-passages, .has-error, .card");
    if (!box) return;
    box.querySelectorAll(".server-msg").forEach(function (m) {
      var owner = m.parentElement && m.parentElement.closest(".has-error");
      m.remove();
      if (owner && !owner.querySelector(".server-msg")) owner.classList.remove("has-error");
    });
    if (box.classList.contains("has-error") && !box.querySelector(".server-msg")) box.classList.remove("has-error");
  }
  form.addEventListener("input", clearMessages);
  form.addEventListener("change", clearMessages);

  // ---- stage 1: question from one of three passages ------------------------------------------
  function initQuestion() {
    var qMin = +form.dataset.questionMin, qMax = +form.dataset.questionMax, aMax = +form.dataset.answerMax;
    var noneValue = form.dataset.noneValue;
    var question = document.getElementById("id_question");
    var answer = document.getElementById("id_answer");
    var qCount = document.getElementById("question-count");
    var aCount = document.getElementById("answer-count");
    var yesNo = document.getElementById("question-live");
    var notIn = document.getElementById("answer-live");
    var note = document.getElementById("chosen-note");
    var writeFields = document.getElementById("write-fields");
    var rejectFields = document.getElementById("reject-fields");
    var radios = Array.prototype.slice.call(form.querySelectorAll("input[name=passage]"));
    var AUX = ("is are was were am be do does did have has had can could will would shall should may might must " +
      "isn't aren't wasn't weren't don't doesn't didn't haven't hasn't hadn't can't couldn't won't wouldn't " +
      "shouldn't").split(" ");

    function chosen() {
      for (var i = 0; i < radios.length; i++) if (radios[i].checked) return radios[i];
      return null;
    }
    function passageText() {
      var r = chosen();
      if (!r || r.value === noneValue) return "";
      var el = r.closest("[data-passage-card]").querySelector("[data-passage-text]");
      return el ? el.textContent : "";
    }
    function update() {
      var r = chosen();
      var rejecting = r && r.value === noneValue;
      writeFields.hidden = !!rejecting;
      rejectFields.hidden = !rejecting;
      radios.forEach(function (x) {
        x.closest("[data-passage-card]").classList.toggle("is-chosen", x.checked);
      });
      if (r && !rejecting) {
        var n = radios.indexOf(r) + 1;
        note.textContent = "Your question is about passage " + n + ".";
      } else if (!r) {
        note.textContent = "Select a passage first.";
      }
      var nq = words(question.value), na = words(answer.value);
      setCounter(qCount, nq + " / " + qMin + "-" + qMax + " words", nq < qMin || nq > qMax, nq === 0);
      setCounter(aCount, na + " / max " + aMax + " words", na > aMax, na === 0);
      var first = question.value.trim().toLowerCase().replace(/\u2019/g, "'").split(/\s+/)[0] || "";
      var polar = AUX.indexOf(first) >= 0 && !/\bor\b/i.test(question.value);
      yesNo.hidden = !polar || fresh("question-error");
      var p = passageText(), a = squash(answer.value);
      notIn.hidden = !(p && a && squash(p).indexOf(a) < 0) || fresh("answer-warning");
    }
    form.addEventListener("input", update);
    form.addEventListener("change", update);
    update();
  }

  // ---- stage 2: validation and distractors ---------------------------------------------------
  function initDistractor() {
    var total = +form.dataset.total, maxSuggested = +form.dataset.maxSuggested;
    var boxes = Array.prototype.slice.call(form.querySelectorAll("input[name=suggested]"));
    var flags = Array.prototype.slice.call(form.querySelectorAll("input[name=flag]"));
    var rows = Array.prototype.slice.call(form.querySelectorAll("[data-own-row]"));
    var suggestedCount = document.getElementById("suggested-count");
    var ownNeeded = document.getElementById("own-needed");
    var flagsNone = document.getElementById("flags-none");
    var totalNote = document.getElementById("total-note");

    function update() {
      var kept = boxes.filter(function (b) { return b.checked; }).length;
      boxes.forEach(function (b) {
        // Disabled boxes are not posted, so only unchecked ones are ever disabled.
        if (!preview) b.disabled = !b.checked && kept >= maxSuggested;
        b.closest(".suggestion").classList.toggle("is-chosen", b.checked);
        b.closest(".suggestion").classList.toggle("is-locked", b.disabled && !b.checked);
      });
      setCounter(suggestedCount, kept + " / " + maxSuggested + " kept", kept > maxSuggested, kept === 0);
      var needed = Math.max(1, total - kept);
      var written = 0;
      rows.forEach(function (row) {
        var k = +row.dataset.ownRow;
        var input = row.querySelector("input");
        var filled = input.value.trim() !== "";
        if (filled) written++;
        var extra = k >= needed;
        row.classList.toggle("is-extra", extra);
        row.hidden = extra && !filled;
        row.querySelector(".extra-note").hidden = !(extra && filled);
      });
      setCounter(ownNeeded, written + " / " + needed + " written", written !== needed);
      totalNote.textContent = kept + " kept + " + written + " written = " + (kept + written) + " of " + total + " wrong answers";
      totalNote.classList.toggle("bad", kept + written !== total);
      var anyFlag = flags.some(function (f) { return f.checked; });
      flagsNone.textContent = anyFlag ? "" : "No problem ticked: the question is exam-worthy.";
    }
    form.addEventListener("input", update);
    form.addEventListener("change", update);
    update();
  }

  if (form.dataset.sciq === "question") initQuestion();
  if (form.dataset.sciq === "distractor") initDistractor();
})();
