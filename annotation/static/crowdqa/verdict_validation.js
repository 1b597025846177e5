// crowdqa model verdict validation HIT: the shared syllabus viewer (doc_viewer.js) and a check that a
// choice was made before the form is sent. The server checks the same rule
// (annotation/hits/verdict_validation.py). Autosave is hit.js's. Text is set with .textContent only.
(function () {
  "use strict";

  var form = document.getElementById("hit-form");
  var layout = document.getElementById("syl-layout");
  if (!form || !layout) return;
  document.body.classList.add("js");
  window.crowdqaDocViewer(layout);

  var summary = document.getElementById("client-summary");
  var msg = document.getElementById("verdict-msg");
  function show(text) {
    msg.textContent = "";
    if (!text) { msg.closest(".field").classList.remove("has-error"); return; }
    var p = document.createElement("p"); p.className = "field-error client"; p.textContent = text;
    msg.appendChild(p); msg.closest(".field").classList.add("has-error");
  }
  form.querySelectorAll("input[name=verdict]").forEach(function (r) {
    r.addEventListener("change", function () { show(""); summary.hidden = true; });
  });
  form.addEventListener("submit", function (e) {
    if (form.querySelector("input[name=verdict]:checked")) { summary.hidden = true; return; }
    e.preventDefault();
    show("Say whether the model's answer is wrong.");
    summary.hidden = false;
    summary.textContent = "Please fix 1 problem. Nothing you typed is lost.";
    form.querySelector("input[name=verdict]").focus();
    var button = form.querySelector("[type=submit]"), label = button.textContent;
    // hit.js disables the button on every submit event; undo that since nothing was sent.
    setTimeout(function () { button.disabled = false; button.textContent = label; }, 0);
  });
})();
