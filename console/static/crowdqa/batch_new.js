// New batch: show only the options of the chosen HIT kind (the others are hidden and disabled, so
// they are not sent), and bring the estimate into view when the page comes back with one.
(function () {
  "use strict";
  var data = document.getElementById("field-kinds");
  var select = document.getElementById("id_kind");
  if (!data || !select) return;
  var kinds = JSON.parse(data.textContent);
  var expert = document.getElementById("expert-fields");
  var gold = document.getElementById("gold-fields");
  var note = document.getElementById("kind-note");

  function show(element, visible) {
    element.hidden = !visible;
    element.querySelectorAll("input, select, textarea").forEach(function (input) {
      input.disabled = !visible;
    });
  }

  function apply() {
    var kind = select.value;
    var hiddenCount = 0;
    Object.keys(kinds).forEach(function (name) {
      var field = document.getElementById("field-" + name);
      if (!field) return;
      var visible = kinds[name].indexOf(kind) !== -1;
      show(field, visible);
      if (!visible) hiddenCount += 1;
    });
    if (expert) {
      var isExpert = (kinds.release || []).indexOf(kind) !== -1;
      show(expert, isExpert);
      if (isExpert) expert.open = true;
    }
    if (gold) {
      show(gold, (kinds.gold_rate || []).indexOf(kind) !== -1);
    }
    if (note) {
      var label = select.options[select.selectedIndex].text;
      note.textContent = "Showing the options of " + label + " (" + hiddenCount + " options of other kinds hidden).";
      note.hidden = false;
    }
  }

  select.addEventListener("change", apply);
  apply();
  var estimate = document.getElementById("estimate");
  if (estimate) {
    estimate.scrollIntoView({ block: "start" });
    estimate.focus({ preventScroll: true });
  }
})();
