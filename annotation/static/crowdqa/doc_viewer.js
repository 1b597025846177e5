// crowdqa syllabus viewer, shared by the syllabus and expert HITs (templates/jinja2/hits/_doc_viewer.html):
// both columns fit the viewport, the text view scrolls to a page, the PDF view shows one lazily loaded
// page image, and the Text/PDF tabs switch between them. Each HIT script adds its own tools on top.
(function () {
  "use strict";

  // options.onPage(n): the page shown changed; options.onScroll(): the text view scrolled (per frame).
  window.crowdqaDocViewer = function (layout, options) {
    options = options || {};
    var textView = document.getElementById("text-view");
    var pdfView = document.getElementById("pdf-view");
    var pageInput = document.getElementById("page-input");
    var nPages = textView.querySelectorAll(".doc-page").length;
    var currentPage = 1, mode = "text";
    function pageChanged() { if (options.onPage) options.onPage(currentPage); }

    function fit() {
      var top = layout.getBoundingClientRect().top + window.scrollY;
      layout.style.setProperty("--syl-top", Math.max(0, top) + "px");
    }
    fit(); window.addEventListener("resize", fit);

    // Hide/Show syllabus (shown below 900 px only; on a wide screen the class has no effect).
    var toggle = document.getElementById("syl-toggle"), viewer = document.getElementById("syl-viewer");
    if (toggle && viewer) {
      toggle.addEventListener("click", function () {
        var open = toggle.getAttribute("aria-expanded") !== "true";
        toggle.setAttribute("aria-expanded", String(open));
        toggle.textContent = open ? "Hide syllabus" : "Show syllabus";
        viewer.classList.toggle("collapsed", !open);
        fit();
      });
    }

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
      pageChanged();
    }
    var scrollPending = false;
    textView.addEventListener("scroll", function () {
      if (scrollPending) return;
      scrollPending = true;
      requestAnimationFrame(function () {
        scrollPending = false;
        var top = textView.scrollTop + 40, n = 1;
        textView.querySelectorAll(".doc-page").forEach(function (s) { if (s.offsetTop <= top) n = +s.dataset.page; });
        if (n !== currentPage) { currentPage = n; pageInput.value = n; pageChanged(); }
        if (options.onScroll) options.onScroll();
      });
    });
    document.getElementById("page-prev").addEventListener("click", function () { showPage(currentPage - 1); });
    document.getElementById("page-next").addEventListener("click", function () { showPage(currentPage + 1); });
    pageInput.addEventListener("change", function () { showPage(parseInt(pageInput.value, 10)); });
    pageInput.addEventListener("keydown", function (e) { if (e.key === "Enter") { e.preventDefault(); showPage(parseInt(pageInput.value, 10)); } });

    function setMode(m) {
      if (!pdfView) m = "text";
      mode = m;
      var tText = document.getElementById("tab-text"), tPdf = document.getElementById("tab-pdf");
      tText.setAttribute("aria-selected", String(m === "text"));
      if (tPdf) tPdf.setAttribute("aria-selected", String(m === "pdf"));
      textView.hidden = m !== "text";
      if (pdfView) pdfView.hidden = m !== "pdf";
      showPage(currentPage);
    }
    document.getElementById("tab-text").addEventListener("click", function () { setMode("text"); });
    if (document.getElementById("tab-pdf")) document.getElementById("tab-pdf").addEventListener("click", function () { setMode("pdf"); });
    document.querySelector(".view-tabs").addEventListener("keydown", function (e) {
      if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
        e.preventDefault();
        setMode(mode === "text" ? "pdf" : "text");
        var t = document.getElementById(mode === "text" ? "tab-text" : "tab-pdf");
        if (t) t.focus();
      }
    });

    return {
      showPage: showPage,
      page: function () { return currentPage; },
      mode: function () { return mode; },
    };
  };
})();
