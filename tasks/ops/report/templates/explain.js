// "Why RMs fail": one strategy's table and chart at a time (#explain-strategy).
(function () {
  var pick = document.getElementById("explain-strategy");
  if (!pick) return;
  function show() {
    Array.prototype.forEach.call(document.querySelectorAll(".explain-block"), function (b) {
      b.hidden = b.getAttribute("data-strategy") !== pick.value;
    });
  }
  pick.addEventListener("change", show);
  show();
})();
