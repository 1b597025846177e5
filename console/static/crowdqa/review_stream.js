// Review stream shortcuts: a approve, r reject (focus the reason), b bonus, n / p next and previous.
// Keys typed into a field are left alone, and no modifier combination is taken over.
(function () {
  "use strict";
  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }
  function follow(id) {
    var link = document.getElementById(id);
    if (link) window.location.href = link.href;
  }
  function focus(id) {
    var field = document.getElementById(id);
    if (field) {
      field.scrollIntoView({ block: "center" });
      field.focus();
    }
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    var handled = true;
    switch (event.key) {
      case "a": {
        var form = document.getElementById("approve-form");
        if (form) form.requestSubmit(); else handled = false;
        break;
      }
      case "r": focus("reason"); break;
      case "b": focus("bonus-cents"); break;
      case "n": case "j": follow("stream-next"); break;
      case "p": case "k": follow("stream-previous"); break;
      default: handled = false;
    }
    if (handled) event.preventDefault();
  });
})();
