// toolq's own script: only what htmx cannot say in attributes. Pages work without it.
(function () {
  "use strict";

  // Close codes of a websocket whose credential ended (internal/server/hub.go). htmx-ext-ws does
  // not reconnect after them, and the page says why it stopped.
  var closeSignedOut = 4001;
  var closeLinkEnded = 4002;

  // Mark the document while the live connection is down, so the stylesheet can say so.
  function setLive(up) {
    document.documentElement.classList.toggle("ws-down", !up);
  }
  document.addEventListener("htmx:wsOpen", function () { setLive(true); });
  document.addEventListener("htmx:wsClose", function (e) {
    setLive(false);
    var code = e.detail && e.detail.event ? e.detail.event.code : 0;
    if (code === closeSignedOut || code === closeLinkEnded) {
      credentialEnded(code);
    }
  });
  document.addEventListener("htmx:wsError", function () { setLive(false); });

  // credentialEnded says, in the page's alert area, that live updates stopped for good: the
  // session was signed out or expired, or the embed link expired or was withdrawn.
  function credentialEnded(code) {
    document.documentElement.classList.add("ws-ended");
    var flash = document.getElementById("flash");
    if (!flash || flash.querySelector(".ws-ended-note")) {
      return;
    }
    var p = document.createElement("p");
    p.className = "error ws-ended-note";
    if (code === closeLinkEnded) {
      p.textContent = "This link has expired or was withdrawn: the view no longer updates. Ask for a new link.";
    } else {
      p.textContent = "You are signed out: this page no longer updates. ";
      var again = document.createElement("a");
      again.href = location.pathname + location.search; // the page itself leads to the sign-in
      again.textContent = "Sign in again";
      p.appendChild(again);
    }
    flash.appendChild(p);
  }

  // Freshness: between the pushes that replace the line, count its age up every second from the
  // age it was rendered with (data-age, in seconds) and mark it stale past the server's threshold
  // (data-stale-after), also when no push comes any more because the websocket is down. The
  // browser's own clock only measures the time since the line arrived: no clock skew counts.
  function duration(s) {
    // As web/templates.Duration writes it.
    s = Math.round(s);
    if (s < 60) { return s + " s"; }
    if (s < 3600) { return Math.floor(s / 60) + " min"; }
    if (s < 86400) {
      var m = Math.floor((s % 3600) / 60);
      return Math.floor(s / 3600) + " h" + (m > 0 ? " " + m + " min" : "");
    }
    var h = Math.floor((s % 86400) / 3600);
    return Math.floor(s / 86400) + " d" + (h > 0 ? " " + h + " h" : "");
  }

  function countFreshness() {
    var line = document.getElementById("freshness");
    if (!line) {
      return;
    }
    var age0 = parseFloat(line.getAttribute("data-age"));
    var staleAfter = parseFloat(line.getAttribute("data-stale-after"));
    var shown = line.querySelector("time.age");
    if (!shown || isNaN(age0) || isNaN(staleAfter)) {
      return;
    }
    if (line.toolqSince === undefined) {
      line.toolqSince = performance.now(); // a new line: pushes replace the element
    }
    var age = age0 + (performance.now() - line.toolqSince) / 1000;
    var text = duration(age);
    if (shown.textContent !== text) {
      shown.textContent = text;
    }
    if (age > staleAfter && !line.classList.contains("stale")) {
      line.classList.add("stale");
      if (!line.querySelector(".stale-note")) {
        var note = document.createElement("strong");
        note.className = "stale-note";
        note.textContent = "(stale: no update for over " + duration(staleAfter) + ")";
        line.appendChild(note);
      }
    }
  }
  setInterval(countFreshness, 1000);
  document.addEventListener("DOMContentLoaded", countFreshness);

  // Focus across pushes: a push replaces whole sections by id (the overview's table body, say),
  // and the browser moves focus to <body> when the focused element goes with them. Remember the
  // focused element's id (and an input's caret and selection) before each push and give focus
  // back to the element with that id after it. htmx's own swaps do the same for elements with
  // an id.
  var focused = null;
  document.addEventListener("htmx:wsBeforeMessage", function () {
    var el = document.activeElement;
    focused = null;
    if (!el || el === document.body || !el.id) {
      return;
    }
    focused = { id: el.id, start: null, end: null, direction: null };
    try {
      if (typeof el.selectionStart === "number") {
        focused.start = el.selectionStart;
        focused.end = el.selectionEnd;
        focused.direction = el.selectionDirection;
      }
    } catch (err) {
      // inputs without a selection (type=number, checkbox) throw here: nothing to keep.
    }
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    var was = focused;
    focused = null;
    if (!was) {
      return;
    }
    var el = document.getElementById(was.id);
    if (!el || el === document.activeElement) {
      return;
    }
    var active = document.activeElement;
    if (active && active !== document.body && document.body.contains(active)) {
      return; // focus moved somewhere on purpose meanwhile
    }
    el.focus({ preventScroll: true });
    if (was.start !== null && typeof el.setSelectionRange === "function") {
      try {
        el.setSelectionRange(was.start, was.end, was.direction || "none");
      } catch (err) {
        // the element that came back takes no selection
      }
    }
  });

  // Charts: a bucket's value in the chart's readout, on hover and on keyboard focus (the SVG
  // takes focus; ← → Home End move between its buckets). The values are the buckets' <title>s,
  // which the browser also shows as tooltips. Listeners sit on the document, since pushes
  // replace the charts.
  function chartShow(svg, hit) {
    var hits = svg.querySelectorAll("rect.hit");
    for (var i = 0; i < hits.length; i++) {
      hits[i].classList.toggle("active", hits[i] === hit);
    }
    var figure = svg.closest("figure");
    var readout = figure ? figure.querySelector(".readout") : null;
    var title = hit ? hit.querySelector("title") : null;
    if (readout && title) {
      readout.textContent = title.textContent;
      readout.classList.add("live");
    }
  }
  function chartOf(target) {
    return target && target.closest ? target.closest("svg.chart-svg") : null;
  }
  document.addEventListener("mouseover", function (e) {
    var svg = chartOf(e.target);
    if (svg && e.target.matches("rect.hit")) {
      chartShow(svg, e.target);
    }
  });
  document.addEventListener("focusin", function (e) {
    var svg = chartOf(e.target);
    if (svg && !svg.querySelector("rect.hit.active")) {
      var hits = svg.querySelectorAll("rect.hit");
      if (hits.length) {
        chartShow(svg, hits[hits.length - 1]);
      }
    }
  });
  document.addEventListener("keydown", function (e) {
    var svg = chartOf(e.target);
    if (!svg) {
      return;
    }
    var hits = Array.prototype.slice.call(svg.querySelectorAll("rect.hit"));
    if (!hits.length) {
      return;
    }
    var at = hits.indexOf(svg.querySelector("rect.hit.active"));
    var next = at;
    switch (e.key) {
      case "ArrowLeft": next = Math.max(at - 1, 0); break;
      case "ArrowRight": next = at < 0 ? hits.length - 1 : Math.min(at + 1, hits.length - 1); break;
      case "Home": next = 0; break;
      case "End": next = hits.length - 1; break;
      default: return;
    }
    e.preventDefault();
    chartShow(svg, hits[next]);
  });

  // A push redraws the charts (each new snapshot does): the bucket a reader points at or has
  // stepped to stays shown. Before each push remember each chart's active bucket by its time
  // (data-from, data-to: unix milliseconds); after it, show the new chart's bucket that shares
  // the most of that time. The buckets may be laid out anew (a young queue's chart widens each
  // minute), so the same time may fall in a bucket of another width or start. When none
  // shares any of it (it rolled off), show the newest.
  var activeBuckets = null;
  function bucketTime(hit) {
    return { from: Number(hit.getAttribute("data-from")), to: Number(hit.getAttribute("data-to")) };
  }
  function sharedTime(a, b) {
    return Math.min(a.to, b.to) - Math.max(a.from, b.from);
  }
  document.addEventListener("htmx:wsBeforeMessage", function () {
    activeBuckets = {};
    var active = document.querySelectorAll("svg.chart-svg rect.hit.active");
    for (var i = 0; i < active.length; i++) {
      var chart = active[i].closest("svg.chart-svg");
      activeBuckets[chart.id] = { svg: chart, time: bucketTime(active[i]) };
    }
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    var was = activeBuckets;
    activeBuckets = null;
    for (var id in was) {
      var svg = document.getElementById(id);
      if (!svg || svg === was[id].svg) {
        continue; // gone, or not redrawn
      }
      var hits = svg.querySelectorAll("rect.hit");
      if (!hits.length) {
        continue;
      }
      var hit = hits[hits.length - 1];
      var most = 0;
      for (var i = 0; i < hits.length; i++) {
        var shared = sharedTime(bucketTime(hits[i]), was[id].time);
        if (shared > most) {
          hit = hits[i];
          most = shared;
        }
      }
      chartShow(svg, hit);
    }
  });

  // Sparklines: a push sends the new points of the sparklines that moved on (a minute's turn
  // moves them all) instead of their cells: #spark-points carries "ID DROP CUT POINT…" per row,
  // ";" between rows. Each row's sparkline drops its first DROP values and its last CUT, takes
  // the points, and is drawn again exactly as the server draws it (web/templates: SparklineTo,
  // SparklineLabel, SparkRange), so that the row reads as a page rendered now.
  function number(f) {
    // As web/templates.Number writes it: integers grouped by narrow spaces, else one decimal.
    if (!isFinite(f)) { return "–"; }
    if (f !== Math.trunc(f)) { return f.toFixed(1); }
    var neg = f < 0;
    var digits = String(Math.abs(f));
    var out = "";
    for (var i = 0; i < digits.length; i++) {
      if (i > 0 && (digits.length - i) % 3 === 0) { out += "\u202f"; }
      out += digits[i];
    }
    return (neg ? "-" : "") + out;
  }
  function sparkPoints(values, top) {
    if (values.length < 2) { return ""; }
    values.forEach(function (v) { if (isFinite(v)) { top = Math.max(top, v); } });
    if (top <= 0) { top = 1; }
    var ys = values.map(function (v) {
      if (!isFinite(v) || v < 0) { v = 0; }
      return Math.round(23 - v / top * 22);
    });
    var step = 100 / (values.length - 1);
    var last = values.length - 1;
    var out = [];
    for (var i = 0; i < ys.length; i++) {
      if (i > 0 && i < last && ys[i - 1] === ys[i] && ys[i + 1] === ys[i]) { continue; }
      out.push(Math.round(i * step) + "," + ys[i]);
    }
    return out.join(" ");
  }
  function sparkLabel(values) {
    var top = 0;
    values.forEach(function (v) { top = Math.max(top, v); });
    return "visible messages over the last hour, at most " + number(top) + ", now " + number(values[values.length - 1]);
  }
  function sparkRange(values) {
    var lo = Infinity, hi = -Infinity;
    values.forEach(function (v) { if (isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
    if (!isFinite(lo)) { return ""; }
    return lo === hi ? number(hi) : number(lo) + "–" + number(hi);
  }
  function drawSpark(cell, values) {
    var top = parseFloat(cell.getAttribute("data-top")) || 0;
    cell.setAttribute("data-v", values.join(" "));
    cell.querySelector("polyline").setAttribute("points", sparkPoints(values, top));
    cell.querySelector("svg").setAttribute("aria-label", sparkLabel(values));
    cell.querySelector(".spark-range").textContent = sparkRange(values);
  }
  function shiftSparks() {
    var carrier = document.getElementById("spark-points");
    var text = carrier ? carrier.getAttribute("data-points") : null;
    if (!text) { return; }
    carrier.removeAttribute("data-points");
    text.split(";").forEach(function (entry) {
      var f = entry.split(" ");
      var row = document.getElementById("queue-row-" + f[0]);
      var cell = row ? row.querySelector(".spark-cell") : null;
      if (!cell) { return; }
      var values = cell.getAttribute("data-v").split(" ").map(parseFloat);
      values = values.slice(parseInt(f[1], 10), values.length - parseInt(f[2], 10)).concat(f.slice(3).map(parseFloat));
      drawSpark(cell, values);
    });
  }
  document.addEventListener("htmx:wsAfterMessage", shiftSparks);
  // The browser tests compare this drawing with the server's.
  window.toolqSpark = { points: sparkPoints, label: sparkLabel, range: sparkRange };

  // Narrow screens show each table row as a card (app.css); each cell is labelled with its
  // column's header, copied here from the table's head so that the markup says it once.
  function labelCells(root) {
    var tables = (root || document).querySelectorAll(".table-scroll > table");
    for (var t = 0; t < tables.length; t++) {
      var heads = tables[t].querySelectorAll("thead th");
      if (!heads.length) {
        continue;
      }
      var rows = tables[t].querySelectorAll("tbody tr");
      for (var r = 0; r < rows.length; r++) {
        var cells = rows[r].children;
        for (var i = 0; i < cells.length && i < heads.length; i++) {
          if (cells[i].tagName === "TD" && !cells[i].hasAttribute("data-label")) {
            cells[i].setAttribute("data-label", heads[i].textContent.replace(/[\s▲▼]+/g, " ").trim());
          }
        }
      }
    }
  }
  document.addEventListener("DOMContentLoaded", function () { labelCells(document); });
  document.addEventListener("htmx:afterSettle", function () { labelCells(document); });
  document.addEventListener("htmx:wsAfterMessage", function () { labelCells(document); });

  // Embedded in a portal's iframe, the page posts its height to the portal so that it can size
  // the iframe: {type: "toolq:height", height}. Only to the origins --frame-ancestors allows
  // (data-embed-origins; "self" is this page's own), each as postMessage's targetOrigin, so the
  // browser delivers it to a parent of that origin and to no other; never "*".
  //
  // The height is the content's (the root element's box), never the viewport's: scrollHeight
  // is at least the iframe's own height, so once anything made the iframe taller (a full-page
  // capture), the page posted that height back, the portal kept it, and the iframe never shrank
  // again (it grew to 50,000 px in a portal). When the frame is resized to anything but the
  // content's height, the page says its height again, so the portal puts it back.
  function postHeight(force) {
    var list = document.documentElement.getAttribute("data-embed-origins");
    if (!list || window.parent === window) {
      return;
    }
    var height = Math.ceil(document.documentElement.getBoundingClientRect().height);
    if (height === postHeight.last && force !== true) {
      return;
    }
    postHeight.last = height;
    list.split(" ").forEach(function (origin) {
      if (origin === "self") {
        origin = location.origin;
      }
      try {
        window.parent.postMessage({ type: "toolq:height", height: height }, origin);
      } catch (err) {
        // a malformed origin: nothing to send it to
      }
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    postHeight();
    if (window.ResizeObserver) {
      new ResizeObserver(function () { postHeight(); }).observe(document.documentElement);
    }
  });
  window.addEventListener("resize", function () {
    if (Math.abs(window.innerHeight - postHeight.last) > 1) {
      postHeight(true);
    }
  });
  document.addEventListener("htmx:wsAfterMessage", function () { postHeight(); });

  // A push is rendered once for a whole group of subscribers; should it carry an element this
  // page lacks (a section that appeared since the page loaded, such as a queue's sample), htmx
  // would log an error for that out-of-band element without a target: drop those first.
  // Pages name this extension next to "ws" in hx-ext.
  htmx.defineExtension("toolq-push", {
    transformResponse: function (text) {
      if (text.indexOf("hx-swap-oob") < 0) {
        return text;
      }
      var t = document.createElement("template");
      t.innerHTML = text;
      var dropped = false;
      Array.prototype.slice.call(t.content.children).forEach(function (el) {
        if (el.id && el.hasAttribute("hx-swap-oob") && !document.getElementById(el.id)) {
          el.remove();
          dropped = true;
        }
      });
      return dropped ? t.innerHTML : text;
    }
  });
})();
