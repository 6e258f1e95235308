// The leaderboard at a hundred RMs and more: a strategy to filter by, part of an RM's name to search for, the
// null baselines folded into one summary row per strategy or listed (#board-nulls, where there are any), and the matching rows a page at a time (table data-page-size) or all at once. Works on the rows in their current
// order, so a column sort (sort.js, which fires "sorted") starts again at the first page of the new order.
(function () {
  var table = document.getElementById("leaderboard-table");
  if (!table) return;
  var pick = document.getElementById("board-strategy"), search = document.getElementById("board-search"),
      prev = document.getElementById("board-prev"), next = document.getElementById("board-next"),
      all = document.getElementById("board-all"), shown = document.getElementById("board-shown"),
      nulls = document.getElementById("board-nulls");
  var size = Number(table.getAttribute("data-page-size")) || 25, page = 0, everything = false;
  function apply() {
    var strategy = pick.value, q = search.value.trim().toLowerCase();
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var match = rows.filter(function (r) {
      return (!strategy || r.getAttribute("data-strategy") === strategy) &&
             (!nulls || nulls.checked || r.getAttribute("data-role") !== "null baseline") &&
             (!q || r.getAttribute("data-rm").toLowerCase().indexOf(q) !== -1);
    });
    var pages = Math.max(1, Math.ceil(match.length / size));
    page = Math.min(page, pages - 1);
    var lo = everything ? 0 : page * size, hi = everything ? match.length : Math.min(match.length, lo + size);
    rows.forEach(function (r) { r.hidden = true; });
    match.slice(lo, hi).forEach(function (r) { r.hidden = false; });
    var of = match.length < rows.length ? " (of " + rows.length + ")" : "";
    shown.textContent = !match.length ? "no row matches" + of :
      (lo === 0 && hi === match.length ? (match.length === 1 ? "1 row" : "all " + match.length + " rows") : "rows " + (lo + 1) + "–" + hi + " of " + match.length) + of;
    Array.prototype.forEach.call(table.querySelectorAll("tr.null-summary"), function (r) {   // the folded nulls
      r.hidden = !nulls || nulls.checked || (strategy && r.getAttribute("data-strategy") !== strategy);
    });
    prev.disabled = everything || page === 0;
    next.disabled = everything || page >= pages - 1;
    all.textContent = everything ? size + " per page" : "show all";
    all.disabled = !everything && match.length <= size;
  }
  function restart() { page = 0; apply(); }
  pick.addEventListener("change", restart);
  search.addEventListener("input", restart);
  if (nulls) nulls.addEventListener("change", restart);
  table.addEventListener("sorted", restart);
  prev.addEventListener("click", function () { page -= 1; apply(); });
  next.addEventListener("click", function () { page += 1; apply(); });
  all.addEventListener("click", function () { everything = !everything; restart(); });
  apply();
})();
