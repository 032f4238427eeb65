/* agent-eval report page: renders the embedded report JSON. All data goes in through textContent. */
"use strict";
(function () {
  var page = JSON.parse(document.getElementById("report-data").textContent);
  var R = page.report, S = R.summary || {}, CASES = R.cases || [];
  var BY_ID = {};
  CASES.forEach(function (c) { BY_ID[c.id] = c; });

  function el(tag, attrs, kids) {
    var n = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) {
      if (k === "text") n.textContent = attrs[k]; else if (k === "cls") n.className = attrs[k];
      else n.setAttribute(k, attrs[k]);
    });
    (kids || []).forEach(function (k) { if (k != null) n.appendChild(typeof k === "string" ? document.createTextNode(k) : k); });
    return n;
  }
  function isNum(v) { return typeof v === "number" && isFinite(v); }
  // Numbers as the terminal shows them (agent_eval/report/fmt.py is the twin of each).
  function rate(v) { return isNum(v) ? v.toFixed(3) : "n/a"; }  // format_rate: 0.875
  // A suite rate with its 95% interval from summary.ci: "0.700 [0.550, 0.850]" (format_interval).
  function rci(key) {
    var ci = (S.ci || {})[key], text = rate(S[key]);
    if (text === "n/a" || !Array.isArray(ci) || ci.length !== 2 || !isNum(ci[0]) || !isNum(ci[1])) return text;
    return text + " [" + rate(ci[0]) + ", " + rate(ci[1]) + "]";
  }
  function secs(v) {  // format_seconds: 0.123s, 1.23s, 12.3s, 123s
    if (!isNum(v)) return "n/a";
    return v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : v >= 1 ? 2 : 3) + "s";
  }
  function thousands(text) { return text.replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
  function count(v) { return isNum(v) ? thousands(Math.round(v).toFixed(0)) : "n/a"; }  // format_count: 2,460
  function passRate(c, n) {  // format_pass_rate: 2/3 (67%), the percent rounded half to even as Python does
    var v = 100 * c / n, f = Math.floor(v), d = v - f;
    return c + "/" + n + " (" + (d > 0.5 || (d === 0.5 && f % 2 === 1) ? f + 1 : f) + "%)";
  }
  // Money, as the terminal, Markdown and JUnit show it (agent_eval/report/fmt.py format_cost is the twin):
  // "$" and 4 decimals below $10, 2 decimals with thousands separators from $10, "<$0.0001" below that.
  function usd(v) {
    if (!isNum(v)) return "n/a";
    if (v < 0) return "-" + usd(-v);
    if (v > 0 && v < 0.0001) return "<$0.0001";
    if (Number(v.toFixed(4)) < 10) return "$" + v.toFixed(4);
    // From 1e21 toFixed writes an exponent; such a float is an integer, and BigInt has its exact digits.
    if (v >= 1e21) return "$" + BigInt(v).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",") + ".00";
    return "$" + v.toFixed(2).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }
  function num(v) { return isNum(v) ? (Number.isInteger(v) ? String(v) : v.toFixed(3)) : (v == null ? "n/a" : String(v)); }
  function json(v) { return typeof v === "string" ? v : JSON.stringify(v, null, 2); }
  function caseLink(id) {
    return el("a", {cls: "case-link", href: "#case=" + encodeURIComponent(id), "data-case": id, text: id});
  }
  function valueSpan(text) { return el("span", {cls: "v" + (text === "n/a" ? " na" : ""), text: text}); }

  /* ---- header and banners ---- */
  function renderHeader() {
    var h = document.getElementById("header"), st = R.settings || {};
    h.appendChild(el("h1", {text: "agent-eval · " + (R.suite || "suite")}));
    var meta = el("div", {cls: "meta"});
    [["agent", R.agent], ["model", R.model], ["run", R.run_id], ["date", R.created_at], ["cases", R.cases_file],
     ["repeat", st.repeat], ["threshold", st.threshold], ["judge", st.judge ? (st.judge_model || "on") : "off"],
     ["exit code", R.exit_code]].forEach(function (p) {
      meta.appendChild(el("span", null, [p[0] + " ", el("b", {text: p[1] == null ? "n/a" : String(p[1])})]));
    });
    if (page.pricing) meta.appendChild(el("span", {cls: "pricing", text: String(page.pricing)}));  /* price_source.py */
    if (page.tape) meta.appendChild(el("span", {cls: "tape", text: String(page.tape)}));  /* terminal.py tape_line */
    h.appendChild(meta);
    /* The terminal's verdict line (report/verdict.py): [word, exit code, what caused it]. */
    var v = page.verdict || ["EXIT", R.exit_code, "unexpected exit code"];
    h.appendChild(el("p", {cls: "verdict", id: "verdict"}, [
      el("b", {cls: v[0] === "PASS" ? "ok" : "bad", text: v[0] + " (exit " + v[1] + ")"}), ": " + v[2]]));
    var d = el("details", null, [el("summary", {text: "all settings"})]);
    Object.keys(st).forEach(function (k) { d.appendChild(el("div", null, [k + ": ", el("code", {text: JSON.stringify(st[k])})])); });
    h.appendChild(d);
    var b = document.getElementById("banners");
    if (R.interrupted) b.appendChild(el("div", {cls: "banner", text: "This run was interrupted: the report is partial."}));
    var budget = (R.summary || {}).budget;
    if (R.stopped_at_budget && budget) b.appendChild(el("div", {cls: "banner", text: "This run stopped at its --max-cost " +
      "budget (" + usd(budget.spent_usd) + " of " + usd(budget.limit_usd) +
      "): the report is partial."}));
    if (page.traces_left_out > 0) b.appendChild(el("div", {cls: "banner", id: "trim-banner",
      text: "The report passed " + page.max_bytes + " bytes: " + page.traces_left_out +
        " traces of passed runs were left out of this page; failed and errored runs keep theirs."}));
  }

  /* ---- headline figures: a card per section of the metric table ---- */
  function card(title, rows) {
    var c = el("div", {cls: "card"}, [el("h3", {text: title})]);
    rows.forEach(function (r, i) {
      c.appendChild(el("div", {cls: "figure" + (i === 0 ? " big" : "")}, [el("span", {text: r[0]}), valueSpan(r[1])]));
    });
    return c;
  }
  // The metric rows of the page, card by card, lead first (agent_eval/report/metrics_section.py page_rows).
  var ROWS = page.metric_rows || [];
  // Any other figure, with its 95% interval when summary.ci holds one (a plugin's row): "16.400 [13.350, 19.700]".
  function nci(key) {
    var ci = (S.ci || {})[key], text = num(S[key]);
    if (text === "n/a" || !Array.isArray(ci) || ci.length !== 2 || !isNum(ci[0]) || !isNum(ci[1])) return text;
    return text + " [" + ci[0].toFixed(3) + ", " + ci[1].toFixed(3) + "]";
  }
  function cci(key) {  // a count with its interval: "2,460 [2,100, 2,900]"
    var ci = (S.ci || {})[key], text = count(S[key]);
    if (text === "n/a" || !Array.isArray(ci) || ci.length !== 2 || !isNum(ci[0]) || !isNum(ci[1])) return text;
    return text + " [" + count(ci[0]) + ", " + count(ci[1]) + "]";
  }
  var SHOWN = {rate: rci, seconds: function (k) { return secs(S[k]); }, usd: function (k) { return usd(S[k]); },
               count: cci, number: nci};
  function renderHeadline() {
    var box = el("div", {cls: "cards"}), titles = [], cards = {};
    ROWS.forEach(function (m) {
      if (!cards[m.card]) { cards[m.card] = []; titles.push(m.card); }
      cards[m.card].push([m.label, (SHOWN[m.fmt] || SHOWN.number)(m.name)]);
    });
    var counts = {"Outcome": [["cases passed / failed", num(S.cases_passed) + " / " + num(S.cases_failed)],
      ["cases errored / skipped", num(S.cases_errored) + " / " + num(S.cases_skipped)],
      ["runs (errored)", num(S.runs) + " (" + num(S.runs_errored) + ")"]]};
    titles.forEach(function (t) { box.appendChild(card(t, cards[t].concat(counts[t] || []))); });
    document.getElementById("headline").appendChild(box);
  }

  /* ---- the suite-level judge, custom scorers and user simulator ---- */
  function helperCard(title, id, rows) {
    var c = el("div", {cls: "card", id: id}, [el("h3", {text: title})]);
    rows.forEach(function (r) { c.appendChild(el("div", {cls: "figure"}, [el("span", {text: r[0]}), valueSpan(r[1])])); });
    return c;
  }
  function tokens(u) { return num((u.prompt_tokens || 0) + (u.completion_tokens || 0)); }
  function scorerRows(entry, path, rows) {
    var leaves = Object.keys(entry).filter(function (k) {
      return k !== "errors" && k !== "summarize_error" && (entry[k] === null || typeof entry[k] !== "object"); });
    if (leaves.length) rows.push([path || "value", leaves.map(function (k) { return k + " " + num(entry[k]); }).join(" · ")]);
    Object.keys(entry).forEach(function (k) {
      if (entry[k] && typeof entry[k] === "object") scorerRows(entry[k], path ? path + "." + k : k, rows);
    });
    return rows;
  }
  function renderHelpers() {
    var st = R.settings || {}, j = S.judge || {}, u = S.user_sim || {}, sc = S.scorers || {};
    var box = el("div", {cls: "cards"});
    if (j.calls || j.cache_hits || j.errors || j.agreement != null) {
      var rows = [["model", st.judge_model || "n/a"], ["API calls", num(j.calls)], ["cache hits", num(j.cache_hits)],
        ["tokens", tokens(j)], ["cost", usd(j.cost_usd)], ["errors", num(j.errors)]];
      if (j.agreement !== undefined) rows.push(["agreement after rescore (" + num(j.agreement_runs) + " runs)",
        rate(j.agreement)]);
      box.appendChild(helperCard("Judge", "judge-summary", rows));
    }
    var cal = page.calibration;
    if (cal && typeof cal === "object" && cal.overall && typeof cal.overall === "object") {
      var o = cal.overall, m = o.confusion || {}, ci = Array.isArray(o.kappa_ci) && o.kappa_ci.length === 2 &&
        isNum(o.kappa_ci[0]) && isNum(o.kappa_ci[1]) ? " [" + o.kappa_ci[0].toFixed(2) + ", " + o.kappa_ci[1].toFixed(2) + "]" : "";
      box.appendChild(helperCard("Judge vs human labels", "calibration-summary", [["labelled runs", num(o.n)],
        ["agreement", rate(o.agreement)], ["Cohen's kappa", isNum(o.kappa) ? o.kappa.toFixed(3) + ci : "n/a"],
        ["TPR (judge pass among human pass)", rate(o.tpr)], ["TNR (judge fail among human fail)", rate(o.tnr)],
        ["tp / fn / fp / tn", [m.tp, m.fn, m.fp, m.tn].map(num).join(" / ")],
        ["disagreements", num(Array.isArray(cal.disagreements) ? cal.disagreements.length : null)]]));
    }
    if (u.calls || u.errors) {
      box.appendChild(helperCard("User simulator", "user-sim-summary", [["simulator", st.user || "n/a"],
        ["API calls", num(u.calls)], ["tokens", tokens(u)], ["cost", usd(u.cost_usd)], ["errors", num(u.errors)]]));
    }
    var names = Object.keys(sc);
    if (names.length) {
      var srows = [];
      names.forEach(function (n) {
        var entry = sc[n] || {};
        scorerRows(entry, "", []).forEach(function (r) { srows.push([n + (r[0] === "value" ? "" : "." + r[0]), r[1]]); });
        srows.push([n + " errors", num(entry.errors || 0)]);
      });
      box.appendChild(helperCard("Scorers", "scorer-summary", srows));
    }
    if (box.children.length) document.getElementById("helpers").appendChild(box);
  }

  /* ---- charts: hand-written SVG ---- */
  // 1-2-5 steps, so an axis reads 0.5 1.0 1.5 s rather than 0.37 0.91 s.
  function niceTicks(lo, hi, want) {
    var raw = (hi - lo) / Math.max(1, want), mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 5, 10].map(function (f) { return f * mag; }).filter(function (x) { return x >= raw; })[0] || 10 * mag;
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.round(v / step) * step);
    return {ticks: out, step: step};
  }
  function tickLabel(v, step) {
    if (step >= 1) return v.toFixed(0) + "s";
    if (step >= 0.1) return v.toFixed(1) + "s";
    if (step >= 0.001) return (v * 1000).toFixed(0) + "ms";
    return (v * 1000).toFixed(2) + "ms";
  }
  var NS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, text) {
    var n = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { n.setAttribute(k, attrs[k]); });
    if (text != null) n.textContent = text;
    return n;
  }
  var W = 420, H = 200, L = 40, B = 28, T = 12, RP = 12;
  function axes(s, yLabel, xLabel) {
    s.appendChild(svg("line", {x1: L, y1: H - B, x2: W - RP, y2: H - B, stroke: "#98a2b3"}));
    s.appendChild(svg("line", {x1: L, y1: T, x2: L, y2: H - B, stroke: "#98a2b3"}));
    s.appendChild(svg("text", {x: 4, y: T + 4}, yLabel));
    s.appendChild(svg("text", {x: W - RP, y: H - 4, "text-anchor": "end"}, xLabel));
  }
  function passHatChart() {
    var ph = S.pass_hat || {}, ks = Object.keys(ph).map(Number).sort(function (a, b) { return a - b; });
    var s = svg("svg", {viewBox: "0 0 " + W + " " + H, id: "pass-hat-chart", role: "img"});
    s.appendChild(svg("title", {}, "pass^k for k = 1.." + (ks[ks.length - 1] || 1)));
    axes(s, "100%", "k");
    var pts = [], n = Math.max(ks.length - 1, 1);
    ks.forEach(function (k, i) {
      var v = ph[String(k)], x = L + 20 + i * (W - L - RP - 40) / n;
      s.appendChild(svg("text", {x: x, y: H - B + 14, "text-anchor": "middle"}, String(k)));
      if (!isNum(v)) return;
      var y = H - B - v * (H - B - T);
      pts.push(x + "," + y);
      s.appendChild(svg("circle", {cx: x, cy: y, r: 4, fill: "#2d5bd7"}));
      s.appendChild(svg("text", {x: x, y: y - 8, "text-anchor": "middle"}, rate(v)));
    });
    if (pts.length > 1) s.insertBefore(svg("polyline", {points: pts.join(" "), fill: "none", stroke: "#2d5bd7",
      "stroke-width": 2}), s.children[1]);
    return el("div", {cls: "card"}, [el("h3", {text: "pass^k (all k runs of a case succeed)"}), s]);
  }
  function latencyChart() {
    var lat = [];
    CASES.forEach(function (c) { (c.runs || []).forEach(function (r) {
      var v = r.metrics && r.metrics.latency_s;
      if (r.status !== "error" && isNum(v)) lat.push(v);
    }); });
    var s = svg("svg", {viewBox: "0 0 " + W + " " + H, id: "latency-chart", role: "img"});
    s.appendChild(svg("title", {}, "latency histogram of " + lat.length + " runs"));
    axes(s, "runs", "");
    if (!lat.length) return el("div", {cls: "card"}, [el("h3", {text: "Latency"}), el("p", {cls: "muted", text: "no runs"})]);
    var lo = Math.min.apply(null, lat), hi = Math.max.apply(null, lat);
    // The percentile rows of latency_s mark the chart; the highest one also bounds its axis.
    var marks = ROWS.filter(function (m) { return m.of === "latency_s"; });
    marks.slice(-1).forEach(function (m) { if (isNum(S[m.name])) hi = Math.max(hi, S[m.name]); });
    if (hi === lo) hi = lo + 1;
    var nb = Math.min(30, Math.max(5, Math.ceil(Math.sqrt(lat.length)))), bins = new Array(nb).fill(0);
    lat.forEach(function (v) { bins[Math.min(nb - 1, Math.floor((v - lo) / (hi - lo) * nb))]++; });
    var top = Math.max.apply(null, bins), pw = W - L - RP, ph = H - B - T;
    var xOf = function (v) { return L + (v - lo) / (hi - lo) * pw; };
    bins.forEach(function (cnt, i) {
      var h = cnt / top * ph;
      s.appendChild(svg("rect", {x: L + i * pw / nb + 1, y: H - B - h, width: Math.max(1, pw / nb - 2), height: h,
        fill: "#b6c6f2"}));
    });
    var xt = niceTicks(lo, hi, 5);
    xt.ticks.forEach(function (v) {
      var x = xOf(v);
      s.appendChild(svg("line", {x1: x, y1: H - B, x2: x, y2: H - B + 4, stroke: "#98a2b3"}));
      s.appendChild(svg("text", {x: x, y: H - B + 15, "text-anchor": "middle", "class": "tick"}, tickLabel(v, xt.step)));
    });
    niceTicks(0, top, 3).ticks.filter(function (c) { return c > 0 && Number.isInteger(c); }).forEach(function (c) {
      var y = H - B - c / top * ph;
      s.appendChild(svg("line", {x1: L - 4, y1: y, x2: L, y2: y, stroke: "#98a2b3"}));
      s.appendChild(svg("text", {x: L - 6, y: y + 4, "text-anchor": "end", "class": "tick"}, String(c)));
    });
    var COLORS = ["#157f3d", "#b54708", "#c0262d"];
    marks.map(function (m, i) { return ["P" + m.q, S[m.name], COLORS[i % COLORS.length]]; })
      .forEach(function (m, i) {
        if (!isNum(m[1])) return;
        var x = xOf(m[1]);
        s.appendChild(svg("line", {x1: x, y1: T, x2: x, y2: H - B, stroke: m[2], "stroke-dasharray": "4 3",
          "stroke-width": 1.5}));
        var right = x > L + pw * 0.7;  // labels near the right edge go left of their line
        s.appendChild(svg("text", {x: right ? x - 3 : x + 3, y: T + 10 + i * 12, "text-anchor": right ? "end" : "start",
          style: "fill:" + m[2]},
          m[0] + " " + m[1].toFixed(2) + "s"));
      });
    return el("div", {cls: "card"}, [el("h3", {text: "Latency per run (P50 / P95 / P99 marked)"}), s]);
  }

  /* ---- gate table ---- */
  function renderGate() {
    var g = R.gate;
    if (!g) return;
    var box = document.getElementById("gate");
    var base = g.base_run_id || g.baseline;
    box.appendChild(el("h2", {text: "Regression gate" + (base ? " vs " + base : "")}));
    if (g.cases_common != null) box.appendChild(el("p", {cls: "muted", text: g.cases_common + " common cases, " +
      (g.m != null ? g.m + " gated metrics (Holm's step-down procedure), " : "") + (g.resamples || "") + " paired bootstrap resamples"}));
    var rows = g.metrics || g.rows || [];
    var t = el("table", {cls: "data", id: "gate-table"}), hr = el("tr");
    ["metric", "base", "new", "delta", "CI", "verdict"].forEach(function (h) { hr.appendChild(el("th", {text: h})); });
    t.appendChild(el("thead", null, [hr]));
    var tb = el("tbody");
    rows.forEach(function (m) {
      var ci = Array.isArray(m.ci) ? "[" + num(m.ci[0]) + ", " + num(m.ci[1]) + "]" :
        (isNum(m.ci_low) ? "[" + num(m.ci_low) + ", " + num(m.ci_high) + "]" : "n/a");
      var cls = m.verdict === "regressed" ? "bad" : (m.verdict === "improved" ? "ok" : "");
      tb.appendChild(el("tr", null, [el("td", {text: m.metric}), el("td", {text: num(m.base)}),
        el("td", {text: num(m.new)}), el("td", {text: num(m.delta)}), el("td", {text: ci}),
        el("td", {cls: cls, text: m.verdict || "n/a"})]));
    });
    t.appendChild(tb);
    box.appendChild(t);
    var reg = g.regressed_cases || [];
    if (reg.length) {
      var p = el("p", null, ["Regressed cases: "]);
      reg.forEach(function (c, i) { var id = typeof c === "string" ? c : c.id;
        if (i) p.appendChild(document.createTextNode(", "));
        p.appendChild(BY_ID[id] ? caseLink(id) : el("code", {text: id}));
        if (c.base_runs != null) p.appendChild(document.createTextNode(" (" + c.base_successes + "/" + c.base_runs +
          " → " + c.new_successes + "/" + c.new_runs + ", p = " + num(c.p_value) + ")")); });
      box.appendChild(p);
    }
    if (g.note) box.appendChild(el("p", {cls: "muted", text: g.note}));
    [["only_in_base", "Only in the baseline"], ["only_in_new", "Only in this run"],
     ["excluded_cases", "Not gated (skipped or errored)"]].forEach(function (k) {
      if ((g[k[0]] || []).length) box.appendChild(el("p", {cls: "muted", text: k[1] + ": " + g[k[0]].join(", ")}));
    });
  }

  window.AE = {page: page, R: R, S: S, CASES: CASES, BY_ID: BY_ID, el: el, json: json, num: num, secs: secs,
    usd: usd, rate: rate, passRate: passRate, caseLink: caseLink};
  renderHeader();
  renderHeadline();
  renderHelpers();
  var charts = document.getElementById("charts");
  charts.appendChild(passHatChart());
  charts.appendChild(latencyChart());
  renderGate();
})();
