"""The HTML report's inline style sheet and script: the page needs nothing from elsewhere."""

CSS = """
body { font-family: "DejaVu Sans", "Liberation Sans", system-ui, sans-serif; font-size: 14px;
       margin: 0.8em 1.2em 1.5em; color: #111; background: #fff; overflow-wrap: anywhere; }
h1 { font-size: 1.35em; margin: 0 0 0.2em; } h2 { border-bottom: 2px solid #0072b2;
     padding-bottom: 0.2em; margin: 1.6em 0 0.6em; font-size: 1.3em; }
h3 { font-size: 1.05em; margin: 1.4em 0 0.4em; }
table { border-collapse: separate; border-spacing: 0; margin: 0.3em 0; }
th, td { border: solid #ccc; border-width: 0 1px 1px 0; padding: 0.2em 0.5em;
         vertical-align: top; overflow-wrap: normal; }
tr > :first-child { border-left-width: 1px; } thead tr:first-child > *,
table.facts tbody tr:first-child > * { border-top-width: 1px; }
div.table table { font-size: 13px; } div.table th, td.label { white-space: nowrap; }
thead th { background: #eef3f8; text-align: left; position: sticky; top: 0; z-index: 2; }
tbody th { text-align: left; font-weight: normal; position: sticky; left: 0; z-index: 1;
           background: #fff; }
thead th:first-child { left: 0; z-index: 3; }
tbody tr:nth-child(even), tbody tr:nth-child(even) th { background: #f6f6f6; }
td.value { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.value a { color: inherit; text-decoration: none; border-bottom: 1px dotted #0072b2; }
td.value a:hover, td.value a:focus { background: #fff3c4; }
a.mark { color: #a33; text-decoration: none; margin-left: 0.2em; }
/* a box shorter than a 900 px screen, and the same on any screen: the page's height does not
   depend on the window's */
.scroll { overflow: auto; max-width: 100%; max-height: 40em; }
div.table .scroll { width: max-content; }
p.note { color: #444; max-width: 75em; margin: 0.3em 0; font-size: 0.92em; }
ul.footnotes { list-style: none; padding-left: 0; font-size: 0.92em; max-width: 75em; }
ul.footnotes li:target, section.cell:target { background: #fff3c4; }
.warnings { border-left: 4px solid #d55e00; background: #fff4ec; padding: 0.1em 1em;
            margin: 0.8em 0; font-size: 0.92em; }
.warnings ul { margin: 0.2em 0 0.4em; }
.quiet { border-left: 4px solid #009e73; background: #effaf5; padding: 0.4em 1em; }
dl.campaign { display: flex; flex-wrap: wrap; gap: 0 1.4em; margin: 0 0 0.4em; color: #333; }
dl.campaign div { display: flex; gap: 0.35em; } dl.campaign dt { font-weight: bold; }
dl.campaign dd { margin: 0; }
pre { background: #f6f6f6; padding: 0.5em; overflow-x: auto; font-size: 0.9em; }
figure { margin: 1em 0 1.5em; } figcaption { font-weight: bold; margin-bottom: 0.3em; }
svg { max-width: 100%; height: auto; } svg text { font-family: inherit; }
div.plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 560px), 1fr));
            gap: 0 1.5em; }
div.plots figure { margin: 0.5em 0 1em; min-width: 0; }
nav ul { list-style: none; padding: 0; margin: 0.2em 0 0.6em; display: flex; flex-wrap: wrap;
         gap: 0.2em 1.2em; }
ul.parts { list-style: none; padding: 0; margin: 0.2em 0 0.6em; font-size: 0.92em; }
ul.parts li { display: inline; } ul.parts li + li::before { content: " \\00b7  "; }
details > summary { cursor: pointer; } details > summary h3 { display: inline; }
summary span.rows { color: #555; font-size: 0.9em; margin-left: 0.6em; }
div.table details { margin: 1.4em 0 0.4em; }
#runs-list > summary, #host summary { font-size: 1.05em; padding: 0.3em 0; }
.status-ok { color: #006b4f; } .status-bad { color: #a33; font-weight: bold; }
.missing { color: #a33; }
th.sort { cursor: pointer; user-select: none; padding-right: 1.4em; }
th.sort::before { content: "\\2195"; position: absolute; right: 0.35em; top: 0.2em; color: #999;
                 font-weight: normal; }
th[aria-sort="ascending"]::before { content: "\\25b2"; color: #0072b2; }
th[aria-sort="descending"]::before { content: "\\25bc"; color: #0072b2; }
"""

# Sorting by a click on a header (numbers first, then words, in either direction; a row of
# class "keep" stays where it is), and opening the folded section an anchor points into.
# Without scripts the page reads the same, unsorted; nothing is fetched from anywhere.
SCRIPT = """
(function () {
  "use strict";
  var SCALE = {"": 1, k: 1e3, M: 1e6, G: 1e9};
  function sortKey(cell) {
    if (!cell) return [2, 0, ""];
    var text = cell.textContent.trim();
    var given = cell.getAttribute("data-sort");
    if (given !== null) return [0, parseFloat(given), text];
    var number = /^([+-]?[0-9]+(?:[.][0-9]+)?)([kMG]?)/.exec(text);
    return number ? [0, parseFloat(number[1]) * SCALE[number[2]], text] : [1, 0, text];
  }
  function sortBy(table, column, header) {
    var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(header.parentNode.cells, function (cell) {
      cell.removeAttribute("aria-sort");
    });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var first = rows.findIndex(function (row) { return !row.classList.contains("keep"); });
    var leading = first < 0 ? rows : rows.slice(0, first);
    var moving = rows.filter(function (row, index) {
      return index >= first && first >= 0 && !row.classList.contains("keep"); });
    var trailing = rows.filter(function (row, index) {
      return index >= first && first >= 0 && row.classList.contains("keep"); });
    moving.sort(function (a, b) {
      var x = sortKey(a.cells[column]), y = sortKey(b.cells[column]);
      if (x[0] !== y[0]) return x[0] - y[0];
      var order = x[1] - y[1] || x[2].localeCompare(y[2]);
      return ascending ? order : -order;
    });
    leading.concat(moving, trailing).forEach(function (row) { body.appendChild(row); });
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    if (!table.tHead || !table.tBodies.length) return;
    var heads = table.tHead.rows[table.tHead.rows.length - 1].cells;
    Array.prototype.forEach.call(heads, function (header, column) {
      header.classList.add("sort");
      header.tabIndex = 0;
      header.title = "sort the rows by this column";
      header.addEventListener("click", function () { sortBy(table, column, header); });
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault(); sortBy(table, column, header);
        }
      });
    });
  });
  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (!target) return;
    for (var node = target.parentElement; node; node = node.parentElement) {
      if (node.tagName === "DETAILS" && !node.open) node.open = true;
    }
    target.scrollIntoView();
  }
  window.addEventListener("hashchange", reveal);
  reveal();
})();
"""
