/* agent-eval report page: human labels of judged runs (Pass / Fail and a note), kept in localStorage under
   the report's run id, and "Download labels" saving them as the JSON Lines file `agent-eval calibrate` reads. */
"use strict";
(function () {
  var A = window.AE, el = A.el, R = A.R;
  var STORE = "agent-eval-labels:" + String(R.run_id);
  var memory = {};  // used when the browser refuses localStorage (some file:// settings do)

  function load() {
    try {
      var raw = window.localStorage.getItem(STORE);
      var parsed = raw ? JSON.parse(raw) : {};
      return parsed && typeof parsed === "object" ? parsed : {};
    } catch (e) { return memory; }
  }
  function save(all) {
    memory = all;
    try { window.localStorage.setItem(STORE, JSON.stringify(all)); } catch (e) { /* kept in memory */ }
    refreshPanel();
  }
  function keyOf(caseId, trial, criterion) { return JSON.stringify([caseId, trial, criterion]); }
  function isUsable(j) { return j && (j.verdict === "PASS" || j.verdict === "FAIL"); }

  function labelled() {
    var all = load();
    // The file's order: cases as in the report, trials ascending, rubric before expected_outcome.
    var out = [];
    A.CASES.forEach(function (c) {
      (c.runs || []).slice().sort(function (a, b) { return a.trial - b.trial; }).forEach(function (r) {
        ["rubric", "expected_outcome"].forEach(function (crit) {
          var rec = all[keyOf(c.id, r.trial, crit)];
          if (rec && (rec.label === "pass" || rec.label === "fail")) out.push(rec);
        });
      });
    });
    return out;
  }
  function jsonl() {
    return labelled().map(function (rec) {
      var line = {run_id: R.run_id, case_id: rec.case_id, trial: rec.trial, label: rec.label, criterion: rec.criterion};
      if (rec.note) line.note = rec.note;
      return JSON.stringify(line);
    }).join("\n") + (labelled().length ? "\n" : "");
  }
  function download() {
    var blob = new Blob([jsonl()], {type: "application/x-ndjson"});
    var a = el("a", {href: URL.createObjectURL(blob), download: String(R.run_id) + ".labels.jsonl"});
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 0);
  }

  var panel = null;
  function refreshPanel() {
    if (!panel) return;
    var n = labelled().length;
    panel.querySelector(".label-count").textContent = n + " label" + (n === 1 ? "" : "s") + " in this page";
  }
  function judgedRuns() {
    var n = 0;
    A.CASES.forEach(function (c) { (c.runs || []).forEach(function (r) {
      if (isUsable(r.judge) || isUsable(r.judge_expected_outcome)) n++; }); });
    return n;
  }
  function renderPanel() {
    if (!judgedRuns()) return;
    var button = el("button", {type: "button", id: "download-labels", text: "Download labels"});
    button.addEventListener("click", download);
    panel = el("div", {cls: "labels-panel", id: "labels-panel"}, [el("b", {text: "Human labels "}),
      el("span", {cls: "label-count muted"}), " ", button,
      el("span", {cls: "muted", text: " · open a case and mark each judged run Pass or Fail; then run " +
        "agent-eval calibrate REPORT --labels FILE"})]);
    var cases = document.getElementById("cases");
    cases.insertBefore(panel, cases.querySelector(".controls"));
    refreshPanel();
  }

  /* The Pass / Fail buttons and note of one judged criterion of one run; null when it has no usable verdict. */
  function labelControls(c, r, criterion, judged) {
    if (!isUsable(judged)) return null;
    var key = keyOf(c.id, r.trial, criterion);
    var note = el("input", {type: "text", cls: "label-note", placeholder: "note (optional)",
      "aria-label": "note for " + criterion});
    var pass = el("button", {type: "button", cls: "label-pass", text: "Pass"});
    var fail = el("button", {type: "button", cls: "label-fail", text: "Fail"});
    var state = el("span", {cls: "label-state muted"});
    function show() {
      var rec = load()[key];
      pass.classList.toggle("chosen", !!rec && rec.label === "pass");
      fail.classList.toggle("chosen", !!rec && rec.label === "fail");
      state.textContent = rec ? "labelled " + rec.label : "not labelled";
      if (rec && rec.note && document.activeElement !== note) note.value = rec.note;
    }
    function choose(value) {
      var all = load();
      all[key] = {case_id: c.id, trial: r.trial, criterion: criterion, label: value, note: note.value.trim() || null};
      save(all);
      show();
    }
    pass.addEventListener("click", function () { choose("pass"); });
    fail.addEventListener("click", function () { choose("fail"); });
    note.addEventListener("input", function () {
      var all = load();
      if (!all[key]) return;
      all[key].note = note.value.trim() || null;
      save(all);
    });
    show();
    return el("div", {cls: "labeler", "data-criterion": criterion}, [el("span", {text: "your label: "}), pass, " ",
      fail, " ", note, " ", state]);
  }

  A.labelControls = labelControls;
  A.labelsJsonl = jsonl;
  renderPanel();
})();
