// Click (or Enter on) a column header of a table.sortable: rows reorder by that column's data-v
// (numbers as numbers, text as text, empty cells last); a second click reverses the order.
(function () {
  function value(cell) {
    var v = cell ? cell.getAttribute("data-v") : null;
    if (v === null || v === "") return null;
    var n = Number(v);
    return isNaN(n) ? v.toLowerCase() : n;
  }
  function compare(x, y) {
    if (typeof x !== typeof y) return typeof x === "number" ? -1 : 1;
    return x < y ? -1 : x > y ? 1 : 0;
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, i) {
      th.tabIndex = 0;
      function sort() {
        var first = th.getAttribute("data-first") || "descending";
        var current = th.getAttribute("aria-sort");
        var dir = current ? (current === "ascending" ? "descending" : "ascending") : first;
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir);
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = value(a.cells[i]), y = value(b.cells[i]);
          if (x === null || y === null) return x === null ? (y === null ? 0 : 1) : -1;
          var c = compare(x, y);
          return dir === "ascending" ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
        table.dispatchEvent(new Event("sorted"));   // a paged table (board.js) shows the new order's first page
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
      });
    });
  });
})();
