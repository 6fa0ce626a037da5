// procbench report: renders one question set from the JSON embedded in the page. No libraries, no network.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("qset-data").textContent);
  var state = { split: "all", minScore: 0, page: 0, pageSize: 20 };
  var list = document.getElementById("questions");
  var status = document.getElementById("status");

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  // only http(s) URLs become links (a javascript: or data: URL in the store stays text)
  function webUrl(url) {
    return typeof url === "string" && /^https?:\/\/[^\s]/i.test(url);
  }

  function item(it, cls, brief) {
    var node = el("div", "item" + (cls ? " " + cls : ""));
    if (it.ph) { node.className += " ph"; node.textContent = "?"; return node; }
    if (it.img && /^images\/[0-9a-f]{2}\/[0-9a-f]{64}\.jpg$/.test(it.img)) {  // a stored image's file, nothing else
      var img = el("img");
      img.src = "../" + it.img;
      img.alt = it.title || "step image";
      node.appendChild(img);
    }
    if (it.title) node.appendChild(el("div", "title", it.title));
    if (it.text && !(brief && (it.title || it.img))) node.appendChild(el("div", "text", it.text));
    return node;
  }

  function filtered() {
    return data.questions.filter(function (q) {
      if (state.split !== "all" && q.split !== state.split) return false;
      if (data.has_scores && state.minScore > 0 && (q.score === null || q.score < state.minScore)) return false;
      return true;
    });
  }

  function question(q) {
    var box = el("section", "question");
    box.dataset.qid = q.qid;
    var head = el("div", "head");
    head.appendChild(el("span", null, q.qid + " \u00b7 " + q.split));
    var right = el("span");
    if (q.score !== null && q.score !== undefined) right.appendChild(el("span", null, "shortcut score " + q.score.toFixed(2) + " \u00b7 "));
    if (webUrl(q.url)) { var a = el("a", null, q.procedure); a.href = q.url; a.rel = "noopener noreferrer"; right.appendChild(a); }
    else right.appendChild(el("span", null, q.procedure));
    head.appendChild(right);
    box.appendChild(head);
    box.appendChild(el("p", null, q.instruction || data.instruction));
    if (q.question.length) {
      // order tasks: the items as the question shows them (shuffled), then the orders to choose from
      if (q.orders.length) box.appendChild(el("div", "label", "as shown"));
      var items = el("div", "items");
      q.question.forEach(function (it) { items.appendChild(item(it)); });
      box.appendChild(items);
      if (q.orders.length) box.appendChild(el("div", "label", "choices: the same items in an order each"));
    }
    var choices = el("div", "choices");
    if (q.orders.length) {
      q.orders.forEach(function (order, i) {
        var c = el("div", "item choice order-choice" + (i === q.answer ? " answer" : ""));
        c.appendChild(el("div", "label", "choice " + i));
        var row = el("div", "order");
        // the items' words are in the row above: here each item by its image and title (text if it has no other)
        order.forEach(function (pos) { row.appendChild(item(q.question[pos], null, true)); });
        c.appendChild(row);
        choices.appendChild(c);
      });
    } else {
      q.choices.forEach(function (it, i) {
        var c = item(it, "choice" + (i === q.answer ? " answer" : ""));
        c.insertBefore(el("div", "label", "choice " + i), c.firstChild);
        choices.appendChild(c);
      });
    }
    // the answer is marked once the reader picks a choice (a click), or for every question with "show answers"
    choices.addEventListener("click", function (e) {
      var picked = e.target.closest(".choice");
      if (!picked) return;
      picked.classList.add("picked");
      box.classList.add("revealed");
    });
    box.appendChild(choices);
    if (q.context.length) {
      var details = el("details");
      details.appendChild(el("summary", null, "context (" + q.context.length + (q.context.length === 1 ? " step)" : " steps)")));
      // the steps keep their numbers when the context is the whole procedure; a part of it (needs-context: the
      // blank's step alone) is not numbered, since "step 7" would tell a reader where the blank lies
      var whole = q.whole;
      var ol = el(whole ? "ol" : "ul", "context");
      q.context.forEach(function (step) {
        var li = el("li");
        if (whole) li.value = step.i + 1;
        if (step.title) li.appendChild(el("strong", null, step.title + " "));
        if (step.text) li.appendChild(document.createTextNode(step.text));
        ol.appendChild(li);
      });
      details.appendChild(ol);
      box.appendChild(details);
    }
    return box;
  }

  function render() {
    var rows = filtered();
    var pages = Math.max(1, Math.ceil(rows.length / state.pageSize));
    state.page = Math.min(state.page, pages - 1);
    var shown = rows.slice(state.page * state.pageSize, (state.page + 1) * state.pageSize);
    list.textContent = "";
    shown.forEach(function (q) { list.appendChild(question(q)); });
    status.textContent = rows.length + " questions match (" + data.questions.length + " shown of " + data.total +
      " in the set) \u00b7 page " + (state.page + 1) + " of " + pages;
    document.getElementById("prev").disabled = state.page === 0;
    document.getElementById("next").disabled = state.page >= pages - 1;
    document.body.dataset.matching = String(rows.length);
    document.body.dataset.rendered = String(shown.length);
  }

  document.getElementById("split").addEventListener("change", function (e) { state.split = e.target.value; state.page = 0; render(); });
  var score = document.getElementById("score");
  if (score) score.addEventListener("input", function (e) {
    state.minScore = parseFloat(e.target.value);
    document.getElementById("score-value").textContent = state.minScore.toFixed(2);
    state.page = 0; render();
  });
  var reveal = document.getElementById("reveal");
  if (reveal) document.body.classList.toggle("hide-answers", !reveal.checked);
  if (reveal) reveal.addEventListener("change", function (e) { document.body.classList.toggle("hide-answers", !e.target.checked); });
  document.getElementById("prev").addEventListener("click", function () { state.page -= 1; render(); window.scrollTo(0, 0); });
  document.getElementById("next").addEventListener("click", function () { state.page += 1; render(); window.scrollTo(0, 0); });
  render();
  document.body.dataset.ready = "1";
})();
