// crowdqa Syllabus HIT: the model in the loop. Once a card's question and answer are written (when the
// worker leaves the field, or with the card's "Ask the model" button; never on every keystroke), the
// card's question goes to the batch's model (worker/model_check_views.py): a POST queues the job, then a
// GET polls for its result under the card's key until data-model-wait-ms runs out. Anything but an
// answer (a slow model, a broker or network that is down) shows "No model answer" and nothing else
// changes: saving and submitting never wait for this. Model and worker text go in with .textContent.
(function () {
  "use strict";

  var form = document.getElementById("hit-form");
  if (!form || !form.dataset.modelUrl) return;
  var url = form.dataset.modelUrl, mode = form.dataset.modelMode || "show";
  var waitMs = parseInt(form.dataset.modelWaitMs || "10000", 10);
  var NO_ANSWER = "no answer", LEAVE_DELAY_MS = 400;
  var asked = {}; // card index -> the question+answer last asked, so an unchanged card is not asked again

  function fields(card) {
    var i = card.dataset.card;
    var q = form.querySelector("[name='qa-" + i + "-question']");
    var a = form.querySelector("[name='qa-" + i + "-answer']");
    return { question: q ? q.value.trim() : "", answer: a ? a.value.trim() : "" };
  }
  function complete(card, f) {
    return f.question.split(/\s+/).length >= 2 && (card.dataset.type === NO_ANSWER || f.answer !== "");
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function show(card, parts) {
    var box = card.querySelector(".model-result");
    // The box never shrinks, so what is below it (the Submit button) does not jump up under a pointer.
    box.style.minHeight = box.offsetHeight + "px";
    box.textContent = "";
    parts.forEach(function (p) { box.appendChild(p); });
    card.querySelector(".model-check").dataset.state = parts.state || "";
  }
  function noAnswer(card, why) {
    var parts = [el("p", "model-verdict none", "No model answer"), el("p", "", why + " Your work is saved as usual: go on.")];
    parts.state = "none";
    show(card, parts);
  }
  function render(card, r) {
    var noAnswerCard = card.dataset.type === NO_ANSWER, parts = [];
    if (noAnswerCard) {
      if (r.verdict === "matched") {
        parts.push(el("p", "model-verdict matched", "The model also found no answer in the syllabus."));
      } else {
        parts.push(el("p", "model-verdict fooled", "The model answered from the syllabus:"));
        parts.push(el("q", "model-answer", r.model_answer));
        parts.push(el("p", "model-invite", "Check that the syllabus really does not answer your question."));
      }
    } else if (r.abstained) {
      parts.push(el("p", "model-verdict fooled", "The model found no answer in the syllabus: it did not match yours."));
    } else {
      parts.push(el("p", "model-verdict " + r.verdict,
        r.verdict === "matched" ? "The model's answer matches yours." : "The model's answer does not match yours."));
      parts.push(el("q", "model-answer", r.model_answer));
    }
    if (mode === "ask" && !noAnswerCard) {
      parts.push(el("p", "model-invite", r.verdict === "matched"
        ? "The model already answers this question. Try a harder one: a question whose answer needs several parts of the syllabus, or reasoning about a student's situation."
        : "Well done: this question is hard for the model."));
    }
    parts.state = r.verdict;
    show(card, parts);
  }

  function ask(card, force) {
    var f = fields(card), i = card.dataset.card, sig = f.question + "\u0000" + f.answer;
    if (!complete(card, f)) {
      if (force) show(card, [el("p", "", card.dataset.type === NO_ANSWER ? "Write the question first." : "Write the question and its answer first.")]);
      return;
    }
    if (!force && asked[i] === sig) return;
    asked[i] = sig;
    var deadline = Date.now() + waitMs;
    show(card, [el("p", "model-verdict none", "Asking the model…")]);
    var body = new FormData();
    body.set("card", i); body.set("question", f.question); body.set("answer", f.answer);
    function stale() { return asked[i] !== sig; }
    function fail(why) { if (!stale()) noAnswer(card, why); }
    function poll(key) {
      if (stale()) return;
      if (Date.now() > deadline) { fail("The model did not answer in time."); return; }
      fetch(url + "?card=" + encodeURIComponent(i) + "&key=" + encodeURIComponent(key), { credentials: "same-origin" })
        .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
        .then(function (r) {
          if (stale()) return;
          if (r.status === "answered") render(card, r);
          else setTimeout(function () { poll(key); }, 500);
        })
        .catch(function () { fail("The model could not be reached."); });
    }
    fetch(url, { method: "POST", body: body, credentials: "same-origin" })
      .then(function (r) { if (!r.ok && r.status !== 202) throw new Error(r.status); return r.json(); })
      .then(function (r) {
        if (r.status === "pending" && r.key) poll(r.key);
        else fail("The model is not available now.");
      })
      .catch(function () { fail("The model could not be reached."); });
  }

  Array.prototype.forEach.call(form.querySelectorAll(".qa-card"), function (card) {
    if (!card.querySelector(".model-check")) return;
    var i = card.dataset.card;
    ["question", "answer"].forEach(function (name) {
      var input = form.querySelector("[name='qa-" + i + "-" + name + "']");
      // "change" fires when the worker leaves a field they edited: the card is saved, not being typed.
      // The ask waits a moment: leaving the field by pressing a button (Submit, Next card) finishes
      // that click before this card's box changes size.
      if (input) input.addEventListener("change", function () { setTimeout(function () { ask(card, false); }, LEAVE_DELAY_MS); });
    });
    card.querySelector(".ask-model").addEventListener("click", function () { ask(card, true); });
  });
})();
