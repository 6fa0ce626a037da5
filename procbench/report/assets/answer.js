// procbench answer sheet: one question at a time, answers kept in this browser, downloaded as JSON.
// No libraries, no network. The page holds the questions and their neutral ids only, never the answers.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("sheet-data").textContent);
  var storageKey = "procbench-answers-" + data.sheet_id;
  var answers = {};
  try { answers = JSON.parse(window.localStorage.getItem(storageKey) || "{}") || {}; } catch (e) { answers = {}; }
  var state = { i: 0 };
  var sheet = document.getElementById("sheet");

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function save() {
    try { window.localStorage.setItem(storageKey, JSON.stringify(answers)); } catch (e) { /* private mode: kept in memory */ }
  }

  function fill(node, it, alt) {
    if (it.blank) { node.className += " blank"; node.textContent = "____"; return node; }
    if (it.image) { var img = el("img"); img.src = it.image; img.alt = alt; node.appendChild(img); }
    if (it.title) node.appendChild(el("div", "title", it.title));
    if (it.text) node.appendChild(el("div", "text", it.text));
    return node;
  }

  function answered() {
    return data.questions.filter(function (q) { return answers[q.id] && answers[q.id].answer; }).length;
  }

  function render() {
    var q = data.questions[state.i];
    sheet.textContent = "";
    var box = el("section", "sheet-question");
    box.dataset.id = q.id;
    box.appendChild(el("h2", null, q.id));
    box.appendChild(el("p", null, q.instruction));
    if (q.context && q.context.length) {
      // a context without step numbers is a part of the procedure: a list, not numbered from 1
      var whole = q.context.every(function (step) { return step.step; });
      box.appendChild(el("div", "label", whole ? "Context (the procedure's steps)" : "Context (some of the procedure's steps)"));
      var ol = el(whole ? "ol" : "ul", "context");
      q.context.forEach(function (step) {
        var li = el("li");
        if (step.step) li.value = step.step;
        if (step.title) li.appendChild(el("strong", null, step.title + " "));
        if (step.text) li.appendChild(document.createTextNode(step.text));
        ol.appendChild(li);
      });
      box.appendChild(ol);
    }
    if (q.question.length) {
      box.appendChild(el("div", "label", q.choices_are ? "Items (numbered; each choice lists them from first to last)" : "Question"));
      var items = el("div", "sheet-items");
      q.question.forEach(function (it, k) {
        var node = el("div", "item");
        node.appendChild(el("div", "label", String(k + 1)));
        items.appendChild(fill(node, it, q.id + " item " + (k + 1)));
      });
      box.appendChild(items);
    }
    box.appendChild(el("div", "label", "Choices"));
    var mine = answers[q.id] || {};
    q.choices.forEach(function (c) {
      var b = el("button", "choice-button" + (mine.answer === c.letter ? " chosen" : ""));
      b.type = "button";
      b.dataset.letter = c.letter;
      b.appendChild(el("span", "letter", c.letter));
      var body = el("span");
      if (c.order) body.textContent = c.order.join(", ");
      else fill(body, c, q.id + " choice " + c.letter);
      b.appendChild(body);
      b.addEventListener("click", function () {
        var entry = answers[q.id] || {};
        entry.answer = c.letter;
        answers[q.id] = entry;
        save();
        render();
      });
      box.appendChild(b);
    });
    var flag = el("label");
    var box2 = el("input");
    box2.type = "checkbox";
    box2.id = "ambiguous";
    box2.checked = !!mine.ambiguous;
    box2.addEventListener("change", function () {
      var entry = answers[q.id] || {};
      entry.ambiguous = box2.checked;
      answers[q.id] = entry;
      save();
      status();
    });
    flag.appendChild(box2);
    flag.appendChild(document.createTextNode(" ambiguous: no choice, or more than one, seems right"));
    box.appendChild(flag);
    sheet.appendChild(box);
    document.getElementById("position").textContent = "question " + (state.i + 1) + " of " + data.questions.length;
    document.getElementById("prev").disabled = state.i === 0;
    document.getElementById("next").disabled = state.i >= data.questions.length - 1;
    document.body.dataset.current = q.id;
    status();
  }

  function status() {
    var n = answered();
    var s = document.getElementById("status");
    s.textContent = n + " of " + data.questions.length + " answered";
    s.className = n === data.questions.length ? "done" : "muted";
    document.body.dataset.answered = String(n);
  }

  function payload() {
    var out = {};
    data.questions.forEach(function (q) {
      var a = answers[q.id];
      if (!a || !a.answer) return;
      out[q.id] = a.ambiguous ? { answer: a.answer, ambiguous: true } : a.answer;
    });
    var reader = document.getElementById("reader").value.trim();
    var wrapped = { packet_id: data.packet_id };  // score-packet refuses answers carrying another packet's id
    if (reader) wrapped.reader = reader;
    wrapped.answers = out;
    return wrapped;
  }

  document.getElementById("prev").addEventListener("click", function () { state.i -= 1; render(); window.scrollTo(0, 0); });
  document.getElementById("next").addEventListener("click", function () { state.i += 1; render(); window.scrollTo(0, 0); });
  document.getElementById("download").addEventListener("click", function () {
    var text = JSON.stringify(payload(), null, 1) + "\n";
    var blob = new Blob([text], { type: "application/json" });
    var a = el("a");
    var reader = document.getElementById("reader").value.trim().replace(/[^A-Za-z0-9_.-]+/g, "_");
    a.href = URL.createObjectURL(blob);
    a.download = reader ? "answers-" + reader + ".json" : "answers.json";
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
    document.body.dataset.downloaded = String(Number(document.body.dataset.downloaded || 0) + 1);
  });
  render();
  document.body.dataset.ready = "1";
})();
