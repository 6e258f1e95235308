// The pair explorer (report/pairs.html): filters by domain, RM, strategy and outcome and a search by user or
// question over the pairs in #explorer-data; the matching pairs a page at a time; a click opens a pair. The
// outcome rules are tasks/stages/explain/cells.py `pair_outcomes`, letter for letter (a test holds them equal).
(function () {
  var holder = document.getElementById("explorer-data");
  var D = holder ? JSON.parse(holder.textContent) : null;
  if (!D) return;
  var $ = function (id) { return document.getElementById(id); };
  var domain = $("pairs-domain"), rmPick = $("pairs-rm"), stPick = $("pairs-strategy"), outPick = $("pairs-outcome"),
      search = $("pairs-search"), shown = $("pairs-shown"), prev = $("pairs-prev"), next = $("pairs-next"),
      all = $("pairs-all"), body = $("pairs-table").tBodies[0], panel = $("pairs-analysis");
  var EVERY_WRONG = D.outcomes[0], DISAGREE = D.outcomes[1], ONLY_WITH = D.outcomes[2], ONLY_WITHOUT = D.outcomes[3],
      LONGER_REJECTED = D.outcomes[4];
  var size = D.page_size, page = 0, everything = false, opened = {};
  var sIndex = {}, rIndex = {}, contestants = [], every = [];
  D.strategies.forEach(function (s, i) { sIndex[s.name] = i; });
  D.rms.forEach(function (r, i) { rIndex[r.name] = i; every.push(i); if (r.role === "contestant") contestants.push(i); });
  var NONE = sIndex["none"];

  function h(tag, attrs, kids) {   // an element; text only ever as text nodes
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { if (attrs[k] !== null && attrs[k] !== undefined) e.setAttribute(k, attrs[k]); });
    (kids || []).forEach(function (k) { if (k !== null && k !== undefined) e.appendChild(typeof k === "string" ? document.createTextNode(k) : k); });
    return e;
  }
  function pct(v) { return v === null || v === undefined ? "–" : (100 * v).toFixed(1) + "%"; }
  function pp(v) { return v === null || v === undefined ? "–" : (v >= 0 ? "+" : "") + (100 * v).toFixed(1) + " pp"; }
  function fig(e, signed) {   // [value, ci low, ci high, n] (explorer.py `compact`): "66.7% [41.2, 88.9] (n = 24)", or
    if (!e) return "–";         // its value and that there is no CI below explain.min_n pairs
    var n = e[3], two = Array.isArray(n);
    if (e[0] === null) return "– (" + (two ? "no pairs in one group" : "no pairs") + ")";
    var v = signed ? pp(e[0]) : pct(e[0]), shown = two ? n.join(" vs ") : n;
    if (e[1] !== null) return v + " [" + (signed && e[1] >= 0 ? "+" : "") + (100 * e[1]).toFixed(1) + ", " + (signed && e[2] >= 0 ? "+" : "") + (100 * e[2]).toFixed(1) + "] (n = " + shown + ")";
    return v + " (n = " + shown + ": too few pairs for a CI)";
  }
  function scopeRms() {
    if (rmPick.value === "*") return every;
    if (rmPick.value === "") return contestants.length ? contestants : every;
    return rIndex[rmPick.value] === undefined ? [] : [rIndex[rmPick.value]];
  }
  function scopeStrategies() {
    return stPick.value ? [sIndex[stPick.value]] : D.strategies.map(function (_, i) { return i; });
  }
  function outcomes(p, rms, sts) {   // the outcome filters the pair passes for the RMs and strategies in scope
    var out = {}, any = false, anyRight = false;
    if (p.rel === "chosen shorter") out[LONGER_REJECTED] = true;
    sts.forEach(function (s) {
      var seen = {};
      rms.forEach(function (i) {
        var c = p.o[s].charAt(i);
        if (c === "-") return;
        any = true; if (c === "r") anyRight = true; seen[c === "r"] = true;
      });
      if (seen["true"] && seen["false"]) out[DISAGREE] = true;
    });
    if (any && !anyRight) out[EVERY_WRONG] = true;
    if (NONE !== undefined) rms.forEach(function (i) {
      var w = p.o[NONE].charAt(i);
      if (w === "-") return;
      var mine = sts.filter(function (s) { return s !== NONE && p.o[s].charAt(i) !== "-"; })
                    .map(function (s) { return p.o[s].charAt(i) === "r"; });
      if (w !== "r" && mine.some(Boolean)) out[ONLY_WITH] = true;
      if (w === "r" && !mine.every(Boolean)) out[ONLY_WITHOUT] = true;
    });
    return out;
  }
  function tally(p, rms, sts) {   // right of scored, over the cells in scope
    var right = 0, scored = 0;
    sts.forEach(function (s) { rms.forEach(function (i) { var c = p.o[s].charAt(i); if (c !== "-") { scored++; if (c === "r") right++; } }); });
    return [right, scored];
  }
  function matches() {
    var rms = scopeRms(), sts = scopeStrategies(), q = search.value.trim().toLowerCase();
    return D.pairs.filter(function (p) {
      if (domain.value && p.domain !== domain.value) return false;
      if (q && p.id.toLowerCase().indexOf(q) === -1 && p.question.toLowerCase().indexOf(q) === -1) return false;
      if (tally(p, rms, sts)[1] === 0) return false;   // no RM in scope scored it
      return !outPick.value || outcomes(p, rms, sts)[outPick.value] === true;
    });
  }
  function answer(runs, side, words) {
    return h("div", {"class": "side " + side}, [h("h4", {}, [side + " (" + words + " words)"]),
      h("p", {}, runs.map(function (r, i) { return i % 2 ? h("mark", {title: "only in the " + side + " answer"}, [r]) : document.createTextNode(r); }))]);
  }
  function margins(p, rms, sts) {
    var head = h("tr", {}, [h("th", {}, ["RM"])].concat(sts.map(function (s) { return h("th", {"class": "num"}, [D.strategies[s].label]); })));
    var rows = rms.map(function (i) {
      return h("tr", {"data-rm": D.rms[i].name}, [h("td", {}, [D.rms[i].name + (D.rms[i].role === "contestant" ? "" : " (" + D.rms[i].role + ")")])]
        .concat(sts.map(function (s) {
          var c = p.o[s].charAt(i), m = p.m[s][i];
          var text = c === "-" ? "–" : c === "i" ? "invalid" : (m === null ? "–" : (m > 0 ? "+" : "") + Number(m.toPrecision(3))) + (c === "t" ? " (tie)" : "");
          return h("td", {"class": "num margin " + c, "data-strategy": D.strategies[s].name,
                          title: {r: "right", w: "wrong", t: "tie", i: "invalid", "-": "not scored"}[c]}, [text]);
        })));
    });
    return h("table", {"class": "margins"}, [h("thead", {}, [head]), h("tbody", {}, rows)]);
  }
  function detail(p) {
    var rms = scopeRms(), sts = scopeStrategies(), kids = [h("h3", {}, [p.question])];
    kids.push(h("p", {"class": "note"}, ["user " + p.id + " · " + p.domain + " · " + p.category + " · " + p.posts + " past posts (" + p.bin + ")"]));
    kids.push(h("h4", {}, ["the user's rubric (gold aspects: evaluation only; an RM sees them under oracle alone)"]),
              h("ul", {"class": "aspects"}, p.aspects.map(function (a) { return h("li", {}, [a]); })));
    kids.push(h("h4", {}, ["what the RMs were shown besides the question"]));
    sts.forEach(function (s) {
      var name = D.strategies[s].name, ctx = p.ctx[name] || "", cut = Array.isArray(ctx), text = cut ? ctx[0] : ctx;
      var note = p.failed.indexOf(name) !== -1 ? "the planner's reply never parsed: the RM saw the question only" : !text ? "nothing: the question only" : null;
      kids.push(h("details", {"class": "context", "data-strategy": name, open: sts.length === 1 ? "" : null},
        [h("summary", {}, [D.strategies[s].label]), note ? h("p", {"class": "note"}, [note]) : h("pre", {}, [text]),
         cut ? h("p", {"class": "note more"}, ["… and " + ctx[1] + " more characters (the whole text: prbench explain RM --pair " + p.id + ")"]) : null]));
    });
    kids.push(h("div", {"class": "answers"}, [answer(p.chosen, "chosen", p.cw), answer(p.rejected, "rejected", p.rw)]));
    kids.push(h("h4", {}, ["margin: score(chosen) − score(rejected), per RM and strategy (green right, red wrong)"]), margins(p, rms, sts));
    kids.push(h("p", {"class": "validity"}, [p.judge ? "validity judge (gold rubric): chosen " + p.judge[0].toFixed(2) + ", rejected " +
      p.judge[1].toFixed(2) + " — " + (p.judge[2] ? "valid" : "not valid: the judge prefers the rejected answer or neither") : "validity judge: no verdict"]));
    if (p.human.length) {
      kids.push(h("table", {"class": "human"}, [h("thead", {}, [h("tr", {}, ["ratings by", "dimension", "chosen", "rejected", "annotators"].map(function (t) { return h("th", {}, [t]); }))]),
        h("tbody", {}, p.human.map(function (r) { return h("tr", {}, [r[0], r[1], r[2] === null ? "–" : r[2].toFixed(2), r[3] === null ? "–" : r[3].toFixed(2), String(r[4])].map(function (t) { return h("td", {}, [t]); })); }))]));
    } else kids.push(h("p", {"class": "note human"}, ["human evaluation: not rated"]));
    return h("tr", {"class": "detail", "data-id": p.id}, [h("td", {colspan: "7"}, kids)]);
  }
  function row(p, rms, sts) {
    var t = tally(p, rms, sts), o = outcomes(p, rms, sts);
    var badges = D.outcomes.filter(function (k) { return o[k]; }).map(function (k) { return h("span", {"class": "badge"}, [k]); });
    var tr = h("tr", {"class": "pair", "data-id": p.id, tabindex: "0"}, [h("td", {}, [p.id]), h("td", {}, [p.domain]), h("td", {}, [p.category]),
      h("td", {}, [p.question]), h("td", {"class": "num"}, [p.cw + " / " + p.rw]), h("td", {"class": "num right"}, [t[0] + " of " + t[1]]), h("td", {}, badges)]);
    function toggle() { opened[p.id] = !opened[p.id]; render(); }
    tr.addEventListener("click", toggle);
    tr.addEventListener("keydown", function (e) { if (e.key === "Enter") toggle(); });
    return tr;
  }
  function analysis() {   // the selected RM's error analysis (metrics/explain.json)
    panel.textContent = "";
    var rm = rmPick.value, figs = D.analysis[rm];
    if (!rm || rm === "*" || !figs) { panel.appendChild(h("p", {"class": "note"}, ["Pick one RM to see its error analysis beside its pairs."])); return; }
    var sts = scopeStrategies().map(function (s) { return D.strategies[s].name; }).filter(function (s) { return figs[s]; });
    var lines = [["accuracy", function (f) { return fig(f.accuracy); }],
                 ["picked the longer answer", function (f) { return fig(f.picked_longer); }],
                 ["accuracy, chosen longer", function (f) { return fig(f.accuracy_by_length["chosen longer"]); }],
                 ["accuracy, chosen shorter", function (f) { return fig(f.accuracy_by_length["chosen shorter"]); }],
                 ["length gap (longer − shorter)", function (f) { return fig(f.length_gap, true); }],
                 ["vs none: right only with / only without", function (f) { var g = f.profile_gain; return g ? g.right_only_with + " / " + g.right_only_without + " of " + g.n + "; net " + fig(g.net, true) : "–"; }]];
    var keys = {}, bins = D.profile_bins;
    sts.forEach(function (s) { ["accuracy_by_position", "accuracy_by_category", "accuracy_by_profile_length"].forEach(function (k) { Object.keys(figs[s][k] || {}).forEach(function (g) { keys[k + "\u0000" + g] = [k, g]; }); }); });
    Object.keys(keys).sort(function (a, b) {
      var x = keys[a], y = keys[b];
      if (x[0] !== y[0]) return x[0] < y[0] ? -1 : 1;
      if (x[0] === "accuracy_by_profile_length") return bins.indexOf(x[1]) - bins.indexOf(y[1]);
      return x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0;
    }).forEach(function (k) {
      var what = keys[k], title = {accuracy_by_position: "chosen shown at ", accuracy_by_category: "category ", accuracy_by_profile_length: "profile "}[what[0]] + what[1];
      lines.push([title, function (f) { return f[what[0]] && f[what[0]][what[1]] ? fig(f[what[0]][what[1]]) : "–"; }]);
    });
    var head = h("tr", {}, [h("th", {}, [rm])].concat(sts.map(function (s) { return h("th", {}, [D.strategies[sIndex[s]].label]); })));
    var rows = lines.map(function (l) { return h("tr", {}, [h("th", {}, [l[0]])].concat(sts.map(function (s) { return h("td", {"data-strategy": s}, [l[1](figs[s])]); }))); });
    panel.appendChild(h("table", {"class": "analysis"}, [h("thead", {}, [head]), h("tbody", {}, rows)]));
  }
  function render() {
    var match = matches(), rms = scopeRms(), sts = scopeStrategies();
    var pages = Math.max(1, Math.ceil(match.length / size));
    page = Math.min(page, pages - 1);
    var lo = everything ? 0 : page * size, hi = everything ? match.length : Math.min(match.length, lo + size);
    body.textContent = "";
    match.slice(lo, hi).forEach(function (p) { body.appendChild(row(p, rms, sts)); if (opened[p.id]) body.appendChild(detail(p)); });
    var of = match.length < D.pairs.length ? " (of " + D.pairs.length + ")" : "";
    shown.textContent = !match.length ? "no pair matches" + of : (lo === 0 && hi === match.length ? (match.length === 1 ? "1 pair" : "all " + match.length + " pairs")
      : "pairs " + (lo + 1) + "–" + hi + " of " + match.length) + of;
    prev.disabled = everything || page === 0;
    next.disabled = everything || page >= pages - 1;
    all.textContent = everything ? size + " per page" : "show all";
    all.disabled = !everything && match.length <= size;
  }
  function restart() { page = 0; analysis(); render(); }
  (location.hash.slice(1).split("&")).forEach(function (kv) {   // pairs.html#rm=NAME&strategy=S: the report's links
    var at = kv.indexOf("="), k = kv.slice(0, at), v = decodeURIComponent(kv.slice(at + 1));
    if (k === "rm" && rIndex[v] !== undefined) rmPick.value = v;
    if (k === "strategy" && sIndex[v] !== undefined) stPick.value = v;
  });
  [domain, rmPick, stPick, outPick].forEach(function (e) { e.addEventListener("change", restart); });
  search.addEventListener("input", restart);
  prev.addEventListener("click", function () { page -= 1; render(); });
  next.addEventListener("click", function () { page += 1; render(); });
  all.addEventListener("click", function () { everything = !everything; render(); });
  restart();
})();
