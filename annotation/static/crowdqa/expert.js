// crowdqa expert answer HIT: on the shared syllabus viewer (doc_viewer.js), "type first, then answer": the
// answer box stays disabled until a question type is chosen (SyllabusQA 2.3). The server checks the
// same rules (annotation/hits/expert_answer.py). Autosave is hit.js's. Text is set with .value only.
(function () {
  "use strict";

  var form = document.getElementById("hit-form");
  var layout = document.getElementById("syl-layout");
  if (!form || !layout) return;
  document.body.classList.add("js");

  var fieldset = form.querySelector("fieldset.task-fields");
  var readOnly = !!(fieldset && fieldset.disabled);
  window.crowdqaDocViewer(layout);

  // ---- type first, then the answer ------------------------------------------------------------
  var answer = form.elements.answer;
  var hint = document.getElementById("answer-hint");
  var noAnswerType = form.dataset.noAnswerType, noAnswerText = form.dataset.noAnswerText;
  var typedAnswer = answer.value;
  function chosen() { var r = form.querySelector("input[name=question_type]:checked"); return r ? r : null; }
  function sync() {
    var radio = chosen();
    answer.disabled = readOnly || !radio;
    if (!radio) { hint.textContent = "Choose the question type first; the answer box opens after."; return; }
    hint.textContent = radio.dataset.answerHint;
    if (radio.value === noAnswerType) {
      if (answer.value !== noAnswerText) typedAnswer = answer.value;
      answer.value = noAnswerText; answer.readOnly = true;
    } else if (answer.readOnly) {
      answer.readOnly = false; answer.value = typedAnswer === noAnswerText ? "" : typedAnswer;
    }
  }
  form.querySelectorAll("input[name=question_type]").forEach(function (r) {
    r.addEventListener("change", function () {
      sync();
      var msg = document.getElementById("question_type-msg");
      if (msg) { msg.textContent = ""; msg.closest(".field").classList.remove("has-error"); }
      if (!answer.readOnly) answer.focus();
    });
  });
  sync();

  // ---- checks (mirror the server; the server checks again) -----------------------------------
  var summary = document.getElementById("client-summary");
  form.addEventListener("input", function () { summary.hidden = true; });
  function show(id, text) {
    var box = document.getElementById(id);
    box.textContent = "";
    if (!text) { box.closest(".field").classList.remove("has-error"); return; }
    var p = document.createElement("p"); p.className = "field-error client"; p.textContent = text;
    box.appendChild(p); box.closest(".field").classList.add("has-error");
  }
  answer.addEventListener("input", function () { typedAnswer = answer.value; show("answer-msg", ""); });
  form.addEventListener("submit", function (e) {
    var radio = chosen(), problems = 0;
    show("question_type-msg", radio ? "" : "Choose the question type first.");
    problems += radio ? 0 : 1;
    var empty = radio && radio.value !== noAnswerType && !answer.value.trim();
    show("answer-msg", empty ? "Write an answer." : "");
    problems += empty ? 1 : 0;
    if (!problems) { summary.hidden = true; return; }
    e.preventDefault();
    summary.hidden = false;
    summary.textContent = "Please fix " + problems + " problem" + (problems === 1 ? "" : "s") + ". Nothing you typed is lost.";
    (radio ? answer : form.querySelector("input[name=question_type]")).focus();
    var button = form.querySelector("[type=submit]"), label = button.textContent;
    // hit.js disables the button on every submit event; undo that since nothing was sent.
    setTimeout(function () { button.disabled = false; button.textContent = label; }, 0);
  });
})();
