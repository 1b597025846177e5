// crowdqa expert answer HIT: the syllabus viewer (pages, text/PDF) and "type first, then answer": the
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
  var textView = document.getElementById("text-view");
  var pdfView = document.getElementById("pdf-view");
  var pageInput = document.getElementById("page-input");
  var nPages = textView.querySelectorAll(".doc-page").length;
  var currentPage = 1, mode = "text";

  // ---- layout: both columns scroll inside the viewport (syllabus.css reads --syl-top) ----------
  function fit() {
    var top = layout.getBoundingClientRect().top + window.scrollY;
    layout.style.setProperty("--syl-top", Math.max(0, top) + "px");
  }
  fit(); window.addEventListener("resize", fit);

  // ---- pages ----------------------------------------------------------------------------------
  function showPage(n) {
    n = Math.max(1, Math.min(nPages, n || 1));
    currentPage = n;
    pageInput.value = n;
    if (mode === "pdf" && pdfView) {
      pdfView.querySelectorAll(".pdf-page").forEach(function (img) {
        var on = +img.dataset.page === n;
        if (on && !img.getAttribute("src")) img.setAttribute("src", img.dataset.src);
        img.hidden = !on;
      });
    } else {
      var section = document.getElementById("doc-page-" + n);
      if (section) textView.scrollTop = section.offsetTop;
    }
  }
  textView.addEventListener("scroll", function () {
    var top = textView.scrollTop + 40, n = 1;
    textView.querySelectorAll(".doc-page").forEach(function (s) { if (s.offsetTop <= top) n = +s.dataset.page; });
    if (n !== currentPage) { currentPage = n; pageInput.value = n; }
  });
  document.getElementById("page-prev").addEventListener("click", function () { showPage(currentPage - 1); });
  document.getElementById("page-next").addEventListener("click", function () { showPage(currentPage + 1); });
  pageInput.addEventListener("change", function () { showPage(parseInt(pageInput.value, 10)); });
  pageInput.addEventListener("keydown", function (e) { if (e.key === "Enter") { e.preventDefault(); showPage(parseInt(pageInput.value, 10)); } });
  function setMode(m) {
    if (!pdfView) m = "text";
    mode = m;
    document.getElementById("tab-text").setAttribute("aria-selected", String(m === "text"));
    var tPdf = document.getElementById("tab-pdf");
    if (tPdf) tPdf.setAttribute("aria-selected", String(m === "pdf"));
    textView.hidden = m !== "text";
    if (pdfView) pdfView.hidden = m !== "pdf";
    showPage(currentPage);
  }
  document.getElementById("tab-text").addEventListener("click", function () { setMode("text"); });
  if (document.getElementById("tab-pdf")) document.getElementById("tab-pdf").addEventListener("click", function () { setMode("pdf"); });

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
