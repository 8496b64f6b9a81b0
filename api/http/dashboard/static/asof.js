// The group page's "as of position" slider (issue 34): show the position while it moves, load the
// page as of it when released. A file of its own, not inline handlers: the Content Security
// Policy allows scripts from this origin only.
(function () {
  "use strict";
  var slider = document.getElementById("at-slider");
  if (!slider || !slider.form) return;
  var shown = slider.form.querySelector("output");
  slider.addEventListener("input", function () {
    if (shown) shown.value = slider.value;
  });
  slider.addEventListener("change", function () {
    slider.form.submit();
  });
})();
