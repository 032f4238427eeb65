/* agent-eval report page: the case table (rendered once) and a case's detail (rendered on demand). */
"use strict";
(function () {
  var A = window.AE, el = A.el, CASES = A.CASES;

  function meanLatency(c) {
    var v = (c.runs || []).map(function (r) { return r.metrics && r.metrics.latency_s; })
      .filter(function (x) { return typeof x === "number"; });
    return v.length ? v.reduce(function (a, b) { return a + b; }, 0) / v.length : null;
  }

  /* ---- the case table, built once; filters hide rows, sorting moves them ---- */
  var tbody = document.querySelector("#case-table tbody"), rows = [];
  var REASONS = A.page.reasons || [];  /* each case's reason, computed by agent-eval (report/reasons.py) */
  var NOTES = A.page.status_notes || [];  /* " (judge off)" beside a status, as in the terminal (reasons.py) */
  CASES.forEach(function (c, index) {
    var runs = c.runs || [], ok = runs.filter(function (r) { return r.success; }).length;
    var counted = runs.filter(function (r) { return r.status !== "error"; }).length;
    var key = {id: c.id, status: c.status, pass_rate: c.pass_rate == null ? -1 : c.pass_rate, runs: runs.length,
      latency: meanLatency(c), tags: (c.tags || []).join(" "), reason: String(REASONS[index] || "")};
    var tags = el("td");
    (c.tags || []).forEach(function (t) { tags.appendChild(el("span", {cls: "tag", text: t})); });
    var tr = el("tr", {"data-id": c.id}, [el("td", null, [A.caseLink(c.id)]),
      el("td", null, [el("span", {cls: "status " + c.status, text: c.status}),
        NOTES[index] ? el("span", {cls: "muted judge-off", text: String(NOTES[index])}) : null,
        c.flaky === true ? el("span", {cls: "tag flaky", title: "both passing and failing runs", text: "flaky"}) : null]),
      el("td", {text: c.pass_rate == null || !counted ? "n/a" : A.passRate(ok, counted)}),
      el("td", {text: String(runs.length)}), el("td", {text: A.secs(key.latency)}), tags,
      el("td", {cls: "reason", text: key.reason, title: key.reason})]);  /* whole, as in every output */
    rows.push({c: c, tr: tr, key: key});
    tbody.appendChild(tr);
  });

  function fillSelect(id, values) {
    var s = document.getElementById(id);
    values.forEach(function (v) { s.appendChild(el("option", {value: v, text: v})); });
    return s;
  }
  var statusSel = fillSelect("status-filter", ["passed", "failed", "error", "skipped", "not_run"].filter(function (s) {
    return CASES.some(function (c) { return c.status === s; }); }));
  var tagSet = {};
  CASES.forEach(function (c) { (c.tags || []).forEach(function (t) { tagSet[t] = 1; }); });
  var tagSel = fillSelect("tag-filter", Object.keys(tagSet).sort());
  var search = document.getElementById("search");
  function applyFilters() {
    var st = statusSel.value, tag = tagSel.value, q = search.value.trim().toLowerCase(), shown = 0;
    rows.forEach(function (r) {
      var vis = (!st || r.c.status === st) && (!tag || (r.c.tags || []).indexOf(tag) >= 0) &&
        (!q || r.c.id.toLowerCase().indexOf(q) >= 0);
      r.tr.hidden = !vis;
      if (vis) shown++;
    });
    document.getElementById("case-count").textContent = shown + " of " + rows.length + " cases";
  }
  [statusSel, tagSel].forEach(function (s) { s.addEventListener("change", applyFilters); });
  search.addEventListener("input", applyFilters);
  applyFilters();

  var sortKey = null, sortDir = 1;
  document.querySelectorAll("#case-table th").forEach(function (th) {
    th.addEventListener("click", function () {
      var k = th.getAttribute("data-key");
      sortDir = sortKey === k ? -sortDir : 1;
      sortKey = k;
      document.querySelectorAll("#case-table th").forEach(function (h) { h.className = ""; });
      th.className = sortDir > 0 ? "sorted-asc" : "sorted-desc";
      rows.sort(function (a, b) {
        var x = a.key[k], y = b.key[k];
        if (x == null) x = -Infinity; if (y == null) y = -Infinity;
        return (x < y ? -1 : x > y ? 1 : 0) * sortDir;
      });
      var frag = document.createDocumentFragment();
      rows.forEach(function (r) { frag.appendChild(r.tr); });
      tbody.appendChild(frag);
    });
  });

  /* ---- a case's detail: each run as a timeline ---- */
  function pre(text, cls) { return el("pre", {cls: cls || "", text: text}); }
  function stepEvent(s) {
    var errored = s.error != null;
    var ev = el("div", {cls: "ev step" + (errored ? " errored" : ""), "data-step": String(s.step)}, [
      el("div", {cls: "who", text: "tool call #" + s.step + " · " + A.secs(s.latency_s) +
        (s.t_start_s != null ? " · at " + A.secs(s.t_start_s) : "")}),
      el("div", null, [el("b", {text: s.name})]),
      el("div", {cls: "muted", text: "args"}), pre(A.json(s.args), "args")]);
    if (s.invalid_args != null) ev.appendChild(el("div", {cls: "bad", text: "invalid call: " + s.invalid_args}));
    if (errored) { ev.appendChild(el("div", {cls: "bad", text: "error"})); ev.appendChild(pre(s.error, "error")); }
    if (s.error_traceback) ev.appendChild(pre(s.error_traceback, "error traceback"));
    if (s.output != null) { ev.appendChild(el("div", {cls: "muted", text: "output"})); ev.appendChild(pre(A.json(s.output), "output")); }
    return ev;
  }
  function message(kind, label, text) {
    return el("div", {cls: "ev " + kind}, [el("div", {cls: "who", text: label}), pre(text == null ? "" : String(text))]);
  }
  function timeline(t) {
    var box = el("div", {cls: "timeline"}), users = t.user_messages || [], replies = t.replies || [];
    var steps = t.steps || [];
    if (users.length <= 1) {
      users.forEach(function (u) { box.appendChild(message("user", "user", u)); });
      steps.forEach(function (s) { box.appendChild(stepEvent(s)); });
      replies.forEach(function (r) { box.appendChild(message("reply", "agent reply", r)); });
    } else {
      // Steps carry no turn index, so a multi-turn run shows the dialogue and then the calls in order.
      users.forEach(function (u, i) {
        box.appendChild(message("user", "user · turn " + (i + 1), u));
        if (i < replies.length) box.appendChild(message("reply", "agent reply · turn " + (i + 1), replies[i]));
      });
      if (steps.length) box.appendChild(el("div", {cls: "who", text: "tool calls of the conversation, in order"}));
      steps.forEach(function (s) { box.appendChild(stepEvent(s)); });
    }
    if ((t.cards || []).length) box.appendChild(message("reply", "cards", A.json(t.cards)));
    var end = "stop: " + (t.stop_reason || "n/a") + " · latency " + A.secs(t.latency_s) +
      " · first action " + A.secs(t.ttfa_s) + (t.final_agent ? " · final agent " + t.final_agent : "");
    box.appendChild(el("div", {cls: "ev"}, [el("div", {cls: "who", text: end})]));
    if (t.agent_error) box.appendChild(pre("agent error: " + t.agent_error, "error"));
    if (t.agent_error_traceback) box.appendChild(pre(t.agent_error_traceback, "error traceback"));
    return box;
  }
  function sub(title, kids) { return el("div", {cls: "sub"}, [el("h4", {text: title})].concat(kids)); }
  function envDiff(diff) {
    var t = el("table", {cls: "data env-diff"}, [el("thead", null, [el("tr", null, [el("th", {text: "path"}),
      el("th", {text: "old"}), el("th", {text: "new"})])])]), tb = el("tbody");
    diff.forEach(function (d) {
      tb.appendChild(el("tr", null, [el("td", {text: (d.path || []).join(".")}),
        el("td", null, ["old" in d ? pre(A.json(d.old)) : el("span", {cls: "muted", text: "(added)"})]),
        el("td", null, ["new" in d ? pre(A.json(d.new)) : el("span", {cls: "muted", text: "(removed)"})])]));
    });
    t.appendChild(tb);
    return t;
  }
  function verdict(label, j) {
    return el("div", null, [el("b", {text: label + ": "}),
      el("span", {cls: /^pass/i.test(j.verdict || "") ? "ok" : "bad", text: j.verdict || "error"}),
      " — " + (j.reason || "") + (j.model ? " (" + j.model + ")" : "")]);
  }
  function runBlock(r, c) {
    var box = el("div", {cls: "run", "data-trial": String(r.trial)});
    box.appendChild(el("h3", null, ["Run " + r.trial + " · ", el("span", {cls: "status " + r.status, text: r.status}),
      r.escalated ? " · escalated" : ""]));
    if (r.error) box.appendChild(pre("infrastructure error: " + r.error, "error"));
    if (r.trace) box.appendChild(timeline(r.trace));
    else box.appendChild(el("p", {cls: "muted", text: "trace left out of this page (report over the size limit)"}));
    var checks = el("ul", {cls: "checks"});
    (r.checks || []).forEach(function (k) {
      checks.appendChild(el("li", {cls: k.passed ? "check passed" : "check failed"}, [
        el("span", {cls: k.passed ? "ok" : "bad", text: k.passed ? "✓ " : "✗ "}), el("b", {text: k.name}), " — " + k.detail]));
    });
    box.appendChild(sub("Checks", [(r.checks || []).length ? checks : el("p", {cls: "muted", text: "none"})]));
    if (r.judge) box.appendChild(sub("Judge", [verdict("rubric", r.judge), A.labelControls(c, r, "rubric", r.judge)]));
    if (r.judge_expected_outcome) box.appendChild(sub("Judge (expected outcome)", [verdict("expected_outcome",
      r.judge_expected_outcome), A.labelControls(c, r, "expected_outcome", r.judge_expected_outcome)]));
    var sc = r.scorers || {}, se = r.scorer_errors || {};
    if (Object.keys(sc).length || Object.keys(se).length) {
      var kids = Object.keys(sc).map(function (n) {
        return el("div", null, [el("b", {text: n + ": "}), sc[n] == null ? el("span", {cls: "muted", text: "(raised)"})
          : el("code", {text: JSON.stringify(sc[n])})]);
      });
      Object.keys(se).forEach(function (n) { kids.push(pre("scorer " + n + " raised: " + se[n], "error")); });
      box.appendChild(sub("Scorers", kids));
    }
    var me = r.metric_errors || {};
    if (Object.keys(me).length) box.appendChild(sub("Metric errors", Object.keys(me).map(function (n) {
      return pre(me[n], "error"); })));
    if (r.trace) box.appendChild(sub("Env diff", [(r.trace.final_env_diff || []).length ? envDiff(r.trace.final_env_diff)
      : el("p", {cls: "muted", text: "no change"})]));
    var m = r.metrics || {}, kv = el("div", {cls: "kv"});
    Object.keys(m).forEach(function (k) { kv.appendChild(el("span", {cls: "muted", text: k}));
      kv.appendChild(el("span", {text: A.num(m[k])})); });
    box.appendChild(el("details", {cls: "sub"}, [el("summary", {text: "metrics"}), kv]));
    return box;
  }
  var detail = document.getElementById("detail");
  function showCase(id) {
    var c = A.BY_ID[id];
    if (!c) return;
    detail.textContent = "";
    detail.hidden = false;
    detail.setAttribute("data-case", id);
    detail.appendChild(el("h2", null, ["Case ", el("code", {text: c.id}), " · ",
      el("span", {cls: "status " + c.status, text: c.status})]));
    detail.appendChild(el("p", {cls: "muted", text: "tags: " + ((c.tags || []).join(", ") || "none") +
      " · pass rate " + (c.pass_rate == null ? "n/a" : A.rate(c.pass_rate)) +
      (c.skip_reason ? " · skipped: " + c.skip_reason : "")}));
    (c.runs || []).forEach(function (r) { detail.appendChild(runBlock(r, c)); });
    rows.forEach(function (r) { r.tr.classList.toggle("selected", r.c.id === id); });
    detail.scrollIntoView();
  }
  function fromHash() {
    var m = /^#case=(.*)$/.exec(location.hash);
    if (m) showCase(decodeURIComponent(m[1]));
  }
  document.addEventListener("click", function (e) {
    var a = e.target.closest && e.target.closest("a.case-link");
    if (!a) return;
    e.preventDefault();
    var id = a.getAttribute("data-case");
    // Keep the case in the URL so a reload reopens it; some browsers refuse this on file://.
    try { history.replaceState(null, "", "#case=" + encodeURIComponent(id)); } catch (err) { /* ignore */ }
    showCase(id);
  });
  window.addEventListener("hashchange", fromHash);
  fromHash();
  // Opened as page.html#case=<id>: the charts above the detail may still move it while the page settles,
  // so bring it into view again once everything is laid out.
  if (/^#case=/.test(location.hash)) {
    window.addEventListener("load", function () { if (!detail.hidden) detail.scrollIntoView(); });
    requestAnimationFrame(function () { if (!detail.hidden) detail.scrollIntoView(); });
  }
})();
