// agenteval view: a run still being written grows without a reload; keyboard review on a case page.
// No data is put into the page as HTML here: counts are set as text, fragments come rendered
// (and escaped) by the server.
"use strict";
(function () {
  const byId = (id) => document.getElementById(id);

  // A run being written (or still being read): poll its count, and refresh the cases table when
  // it grows. The table says how many results it was cut from (data-indexed): the cards may count
  // from the run's summary, or from a later state of the index, and never stand for the table.
  function follow() {
    const cards = byId("cards");
    if (!cards || cards.dataset.writing !== "true" || !cards.dataset.countUrl) return;
    const table = byId("cases-table");
    const shown = () => Number(byId("case-count").dataset.indexed);
    async function tick() {
      try {
        const reply = await fetch(cards.dataset.countUrl, { credentials: "same-origin", cache: "no-store" });
        if (reply.ok) {  // (a reply that is not: asked again at the next tick)
          const state = await reply.json();
          for (const [name, text] of Object.entries(state.cards || {})) {  // the verdicts so far, as text
            const card = byId(`count-${name}`);
            if (card) card.textContent = String(text);
          }
          if (state.cases !== shown()) {
            const fragment = await fetch(table.dataset.fragmentUrl, { credentials: "same-origin", cache: "no-store" });
            if (fragment.ok) {  // (a failed fetch is made again at the next tick)
              table.innerHTML = await fragment.text();  // server-rendered, every value escaped
              byId("count-total").textContent = String(shown());
            }
          }
          if (state.finished && state.cases === shown()) {
            cards.dataset.writing = "false";
            const badge = byId("writing");
            if (badge) badge.textContent = "finished (reload for its summary)";
            return;
          }
        }
      } catch (error) {
        console.warn("agenteval view: could not poll the run", error);
      }
      setTimeout(tick, 1000);
    }
    setTimeout(tick, 1000);
  }

  // The review form: the reviewer's name remembered, and keys for a queue.
  function review() {
    const form = byId("review-form");
    if (!form) return;
    const name = byId("reviewer");
    try {
      name.value = localStorage.getItem("agenteval-reviewer") || "";
      form.addEventListener("submit", () => localStorage.setItem("agenteval-reviewer", name.value));
    } catch (error) { /* storage may be off: the name is typed each time */ }
    const rows = Array.from(form.querySelectorAll("table.verdict-marks tbody tr"));
    document.addEventListener("keydown", (event) => {
      const target = event.target;
      if (target && (target.tagName === "INPUT" && target.type !== "radio" && target.type !== "checkbox" || target.tagName === "TEXTAREA" || target.tagName === "SELECT")) return;
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      const digit = /^Digit([1-9])$/.exec(event.code);
      if (digit) {
        const row = rows[Number(digit[1]) - 1];
        if (row) row.querySelector(`input[value="${event.shiftKey ? "wrong" : "right"}"]`).checked = true;
        event.preventDefault();
      } else if (event.key === "a") {
        for (const row of rows) row.querySelector('input[value="right"]').checked = true;
        event.preventDefault();
      } else if (event.key === "s") {
        event.preventDefault();
        if (!name.value) { name.focus(); return; }
        form.requestSubmit();
      } else if (event.key === "n") {
        const next = byId("next-case");
        if (next) { event.preventDefault(); next.click(); }
      }
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    follow();
    review();
    document.body.dataset.ready = "true";
  });
})();
