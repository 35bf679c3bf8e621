"use strict";
// Renders the report from the JSON embedded in the page.  Every text from a model, a tool or
// a test goes through textContent (never as markup), so it shows as text whatever it contains.
(function () {
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function data(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }
  function ms(value) {
    if (value === null || value === undefined) return null;
    return value >= 1000 ? (value / 1000).toFixed(2) + " s" : value.toFixed(1) + " ms";
  }
  function withMs(node, value) {
    var text = ms(value);
    if (text) node.appendChild(el("span", "ms", text));
    return node;
  }
  function badge(cls, text) { return el("span", "badge " + cls, text); }
  // A diff line: "- old"/"+ new" as a snapshot diff prints it, or the same behind pytest's
  // "E   " prefix; pytest's "+  where x = f()" explanations are not diff lines.
  var DIFF_LINE = /^(?:E\s+)?([-+])(?: |$)/;
  var EXPLAINED = /^(?:E\s+)?\+ {2,}(?:where|and) /;
  function diffKind(line) {
    var m = DIFF_LINE.exec(line);
    if (!m || EXPLAINED.test(line)) return null;
    return m[1] === "-" ? "del" : "add";
  }
  function pre(text, cls) {
    var node = el("pre", cls || "");
    String(text).split("\n").forEach(function (line, i) {
      if (i) node.appendChild(document.createTextNode("\n"));
      var kind = diffKind(line);
      if (kind) node.appendChild(el("span", kind, line));
      else node.appendChild(document.createTextNode(line));
    });
    return node;
  }

  function arrival(a) {
    var node = el("div", "arrival");
    node.appendChild(badge(a.kind, a.kind.replace("_", "-")));
    var where = "";
    if (a.after_reply) where = "arrived after the previous reply";
    else if (a.after_tool !== undefined)
      where = a.after_tool === null ? "arrived before any call of the previous batch ran"
                                    : "arrived after tool call " + a.after_tool + " of the previous round";
    if (where) node.appendChild(el("span", "where", where + " "));
    if (a.skipped && a.skipped.length)
      node.appendChild(el("span", "skipped-t", "skipped " + a.skipped.join(", ") + " "));
    node.appendChild(pre(a.text));
    return node;
  }

  function reply(r) {
    var node = el("div", "model" + (r.error ? " err" : ""));
    var head = el("div");
    head.appendChild(el("strong", "", "model call"));
    head.appendChild(el("span", "stop", " stop=" + r.stop));
    if (r.status) head.appendChild(badge("error", "HTTP " + r.status));
    if (r.retryable) head.appendChild(badge("note", "retryable"));
    if (r.usage) head.appendChild(el("span", "ms", "tokens " + r.usage[0] + "/" + r.usage[1]));
    node.appendChild(withMs(head, r.ms));
    if (r.thinking) { node.appendChild(el("div", "stop", "thinking")); node.appendChild(pre(r.thinking)); }
    if (r.text) node.appendChild(pre(r.text));
    if (r.error) node.appendChild(pre("error: " + r.error, "failure"));
    r.calls.forEach(function (c) {
      var d = el("details", "tool call");
      var s = el("summary");
      s.appendChild(el("span", "", "calls "));
      s.appendChild(el("strong", "tname", c.name));
      s.appendChild(el("span", "ms", c.id));
      d.appendChild(s);
      d.appendChild(pre(c.args, "args"));
      if (c.raw !== undefined) d.appendChild(pre("raw arguments (not valid JSON): " + c.raw, "failure"));
      node.appendChild(d);
    });
    return node;
  }

  function tool(t) {
    var d = el("details", "tool exec " + t.status);
    d.setAttribute("data-status", t.status);
    var s = el("summary");
    s.appendChild(badge(t.status, t.status === "skipped" ? "SKIPPED" : t.status));
    s.appendChild(el("span", "", "#" + t.index + " "));
    s.appendChild(el("strong", "tname", t.name));
    if (t.updates) s.appendChild(el("span", "ms", t.updates + " update(s)"));
    d.appendChild(withMs(s, t.ms));
    d.appendChild(el("div", "stop", "arguments"));
    d.appendChild(pre(t.args, "args"));
    d.appendChild(el("div", "stop", t.status === "ok" ? "result" : t.status));
    d.appendChild(pre(t.result, t.status === "ok" ? "" : "failure"));
    if (t.approval) {
      var a = t.approval;
      var line = "approval: " + a.outcome + (a.reason ? " (asked: " + a.reason + ")" : "") +
        (a.message ? " \u2014 " + a.message : "");
      d.appendChild(el("div", "stop", line));
      if (a.args) d.appendChild(pre(a.args, "args"));
    }
    if (t.details) { d.appendChild(el("div", "stop", "details")); d.appendChild(pre(t.details)); }
    return d;
  }

  function usageText(u) {
    if (!u) { return ""; }
    if (u.error) { return ", usage unknown (" + u.error + ")"; }
    return ", tokens " + u.input_tokens + " in / " + u.output_tokens + " out" +
      (u.cache_read_tokens || u.cache_write_tokens ?
        " (cache " + u.cache_read_tokens + " read / " + u.cache_write_tokens + " write)" : "");
  }

  function laneHead(run, tag) {
    var head = el(tag, "lane-head", run.label + " — termination " + run.termination +
                  ", " + run.model_calls + " model call(s), cap " + run.cap +
                  (run.steering_mode !== "skip" ? ", steering " + run.steering_mode : "") +
                  usageText(run.usage));
    return withMs(head, run.ms);
  }

  // A run of a test with many runs: a closed box whose timeline is built when it is opened.
  function lazyLane(run) {
    var node = el("details", "lane");
    node.appendChild(laneHead(run, "summary"));
    node.addEventListener("toggle", function () {
      if (!node.open || node.getAttribute("data-built")) return;
      node.setAttribute("data-built", "1");
      var body = drawn(function () { return laneBody(run, node); }, "this run");
      if (body !== node) node.appendChild(body);
    });
    return node;
  }

  function lane(run, nested) {
    var node = el("div", "lane" + (nested ? " nested" : ""));
    if (run.call_id) node.setAttribute("data-call", run.call_id);
    node.appendChild(laneHead(run, "div"));
    return laneBody(run, node);
  }

  function laneBody(run, node) {
    var behaviours = Object.keys(run.behaviours || {});
    if (behaviours.length) {
      var b = el("div");
      behaviours.forEach(function (name) { b.appendChild(badge("cov", name)); });
      node.appendChild(b);
    }
    if (run.system_prompt) { node.appendChild(el("div", "stop", "system prompt")); node.appendChild(pre(run.system_prompt)); }
    // A nested run is drawn where it started: right after the tool call whose body ran it;
    // one without a tool call (a choices= ask) or whose call is not in a round, after them.
    var atCall = new Map();
    var placed = new Set();
    (run.children || []).forEach(function (child) {
      if (!child.call_id) return;
      if (!atCall.has(child.call_id)) atCall.set(child.call_id, []);
      atCall.get(child.call_id).push(child);
    });
    var timeline = el("div", "timeline");
    run.rounds.forEach(function (r) {
      var box = el("div", "round");
      box.appendChild(withMs(el("div", "round-head", "round " + r.index), r.ms));
      r.arrivals.forEach(function (a) { box.appendChild(arrival(a)); });
      r.notes.forEach(function (n) {
        var line = el("div", "note");
        line.appendChild(badge("note", n.kind));
        line.appendChild(el("span", "", "at " + n.at + ": " + n.text));
        box.appendChild(line);
      });
      if (r.reply) box.appendChild(reply(r.reply));
      r.tools.forEach(function (t) {
        box.appendChild(tool(t));
        (atCall.get(t.id) || []).forEach(function (child) {
          box.appendChild(lane(child, true));
          placed.add(child);
        });
        atCall.delete(t.id);
      });
      timeline.appendChild(box);
    });
    if (!run.rounds.length) timeline.appendChild(el("div", "empty", "no rounds"));
    node.appendChild(timeline);
    (run.children || []).forEach(function (child) {
      if (!placed.has(child)) node.appendChild(lane(child, true));
    });
    var end = el("div", "end", "ended: " + run.termination);
    node.appendChild(end);
    if (run.undelivered.length) {
      node.appendChild(el("div", "undelivered", "undelivered messages (" + run.undelivered.length + "):"));
      run.undelivered.forEach(function (u) { node.appendChild(pre(u, "failure")); });
    }
    return node;
  }

  function headers(h) {
    return Object.keys(h || {}).map(function (k) { return k + ": " + h[k]; }).join("\n");
  }

  // One HTTP exchange of a client that is not openprogram (emulator or cassette traffic).
  function exchange(x) {
    var d = el("details", "http");
    var s = el("summary");
    var status = x.response ? x.response.status : null;
    s.appendChild(badge(status === null || status === undefined ? "error" : status < 400 ? "ok" : "error",
                        status === null || status === undefined ? "no answer" : "HTTP " + status));
    s.appendChild(el("span", "", "#" + x.index + " " + x.method + " " + x.url + " "));
    s.appendChild(badge("note", x.source));
    if (x.at_ms !== null && x.at_ms !== undefined) s.appendChild(el("span", "ms", "+" + ms(x.at_ms)));
    d.appendChild(s);
    d.appendChild(el("div", "stop", "request"));
    if (x.request.headers) d.appendChild(pre(headers(x.request.headers), "args"));
    if (x.request.body) d.appendChild(pre(x.request.body, "args"));
    if (x.response) {
      d.appendChild(el("div", "stop", "response"));
      if (x.response.headers) d.appendChild(pre(headers(x.response.headers)));
      if (x.response.body) d.appendChild(pre(x.response.body));
    }
    return d;
  }

  // A record the page cannot draw (hand-made, from another version) says so in its place
  // instead of breaking the rest of the page.
  function drawn(make, what) {
    try { return make(); }
    catch (e) { return pre(what + " could not be drawn: " + e, "failure"); }
  }
  function list(value) { return Array.isArray(value) ? value : []; }

  function details(test) {
    var cell = el("td", "detail");
    cell.colSpan = 7;
    var full = data("d-" + test.i) || {};
    if (full.failure) cell.appendChild(pre(full.failure, "failure"));
    var runs = list(full.runs);
    var lazy = runs.length > 3;  // many runs: each timeline built when its run is opened
    runs.forEach(function (run, k) {
      cell.appendChild(drawn(function () { return lazy ? lazyLane(run) : lane(run, false); },
                             "run " + (k + 1)));
    });
    var http = list(full.http);
    if (http.length) {
      var box = el("section", "http-log");
      box.appendChild(el("h3", "", "HTTP interactions (" + http.length + ")"));
      http.forEach(function (x, k) {
        box.appendChild(drawn(function () { return exchange(x); }, "HTTP exchange " + k));
      });
      cell.appendChild(box);
    }
    if (!runs.length && !http.length) cell.appendChild(el("div", "empty", "this test ran no loop"));
    var row = el("tr", "detail-row");
    row.appendChild(cell);
    return row;
  }

  function toggle(row, test) {
    var next = row.nextSibling;
    if (next && next.className === "detail-row") { next.parentNode.removeChild(next); row.removeAttribute("data-open"); return; }
    row.parentNode.insertBefore(details(test), row.nextSibling);
    row.setAttribute("data-open", "1");
  }

  var BADGES = {passed: "ok", failed: "error", error: "error", skipped: "skipped",
                xfailed: "xfailed", xpassed: "xpassed"};

  function summary(tests) {
    var body = document.getElementById("tests");
    var rows = document.createDocumentFragment();
    tests.forEach(function (test) {
      var failing = test.outcome === "failed" || test.outcome === "error";
      var row = el("tr", "test" + (failing ? " failing" : ""));
      row.setAttribute("data-status", test.outcome);
      row.setAttribute("data-text", (test.name + " " + test.nodeid + " " + test.behaviours.join(" ")).toLowerCase());
      var status = el("td");
      status.appendChild(badge(BADGES.hasOwnProperty(test.outcome) ? BADGES[test.outcome] : "note", test.outcome));
      row.appendChild(status);
      row.appendChild(el("td", "name", test.name + (test.repeat ? " — " + test.repeat : "")));
      row.appendChild(el("td", "", test.termination || "–"));
      row.appendChild(el("td", "", String(test.runs) + (test.http ? " + " + test.http + " HTTP" : "")));
      row.appendChild(el("td", "", ms(test.ms) || "–"));
      var used = test.usage || {};
      row.appendChild(el("td", "usage", used.error ? "unknown" :
        (used.input_tokens || 0) + " in / " + (used.output_tokens || 0) + " out" +
        (used.cost !== undefined ? ", cost " + used.cost : "")));
      var beh = el("td");
      test.behaviours.forEach(function (n) { beh.appendChild(badge("cov", n)); });
      row.appendChild(beh);
      row.addEventListener("click", function () { toggle(row, test); });
      rows.appendChild(row);
    });
    body.appendChild(rows);
  }

  function filter() {
    var words = document.getElementById("filter").value.toLowerCase().split(/\s+/).filter(Boolean);
    var status = document.getElementById("status").value;
    var rows = document.querySelectorAll("tr.test");
    var shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      var text = row.getAttribute("data-text");
      var ok = (status === "all" || row.getAttribute("data-status") === status ||
                (status === "failed" && row.getAttribute("data-status") === "error")) &&
               words.every(function (w) { return text.indexOf(w) >= 0; });
      row.classList.toggle("hidden", !ok);
      var next = row.nextSibling;
      if (next && next.className === "detail-row") next.style.display = ok ? "" : "none";
      if (ok) shown++;
    }
    document.getElementById("shown").textContent = shown + " shown";
  }

  function coverage(cov) {
    var body = document.getElementById("coverage-rows");
    if (!cov || !body) return;
    cov.rows.forEach(function (r) {
      var row = el("tr", r.runs ? "" : "never");
      row.appendChild(el("td", "name", r.name));
      row.appendChild(el("td", "", r.title));
      row.appendChild(el("td", "", String(r.runs)));
      row.appendChild(el("td", "", String(r.occurrences)));
      row.appendChild(el("td", "", r.runs ? r.definition : "never exercised: " + r.definition));
      body.appendChild(row);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    summary(data("summary") || []);
    coverage(data("coverage"));
    document.getElementById("filter").addEventListener("input", filter);
    document.getElementById("status").addEventListener("change", filter);
    filter();
  });
})();
