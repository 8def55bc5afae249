// The cases table of an agenteval HTML report: search, filters, paging, and a detail view per case.
// The embedded data is one JSON line {evaluators, types, tags, paths, cases}, then one details line
// per case, parsed only when that case opens. A case row: [id, verdict, score, ms, tags,
// [evaluator, verdict, ...], miss text]; a details line: [evaluators, output, error, input, expected,
// transcript, same (1: the expected is the candidate, stored once), chat], an evaluator being [name, verdict, score, reasoning, misses, error, field cells,
// details, misses count, criteria reasoning]. Lines of an older page or results file may lack the
// later members (no input, no expected: the expected side is rebuilt from the checked fields).
// A matrix run (several targets or prompts) adds `cells` (the cell labels) and `order` (their indexes
// in the suite's order: the comparison columns and the cell filter) to the first line and
// [..., cell, repetition] to each case row; the page then also shows the comparison view: each case
// with every cell's verdict and answer side by side, cases where the cells' verdicts differ first.
// `chat` (a played tool loop or conversation) is [entries, end, marks]: an entry [kind, turn, text,
// calls, result, figures, flag], a call [name, arguments, problem, state (0 not run, 1 ran, 2 result
// inline), result], end [stopped, goal, figures], a mark [evaluator position, turn (0: the end),
// verdict, score, per turn (1: one turn of a `scope: turn` result)]: each evaluator's verdict is
// shown after the last entry of the turn it judged.
"use strict";
(function () {
  const CASE_VERDICTS = ["pass", "fail", "error"];
  const EVALUATOR_VERDICTS = ["pass", "partial", "fail", "error"];
  const PAGE_SIZE = 100;
  const NONE = new Set();
  const FIELD_STATUSES = ["hit", "miss", "skipped", ""];
  let DATA = null;
  const byId = (id) => document.getElementById(id);
  // Keys from the data never reach an object's prototype chain: objects built from data have none.
  const UNSAFE_KEYS = new Set(["__proto__", "constructor", "prototype"]);
  const fixed = (value, digits) => (typeof value === "number" && Number.isFinite(value) ? value.toFixed(digits) : "n/a");
  // Bidirectional marks, overrides and isolates in the data are shown as escapes (\u202e), as in
  // every other report: a case id or an answer cannot reorder what follows it on the page.
  const unreordered = (text) => String(text).replace(/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g,
    (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
  const esc = (text) => unreordered(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

  async function loadData() {
    const binary = atob(byId("agenteval-data").textContent.replace(/\s+/g, ""));
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    const text = await new Response(stream).text();
    const end = text.indexOf("\n");
    const data = JSON.parse(text.slice(0, end));
    const offsets = new Float64Array(data.cases.length + 1);
    let position = end + 1;
    for (let i = 0; i < data.cases.length; i++) {
      offsets[i] = position;
      position = text.indexOf("\n", position) + 1;
    }
    offsets[data.cases.length] = position;
    data.detail = (index) => JSON.parse(text.slice(offsets[index], offsets[index + 1] - 1));
    return data;
  }

  function fillOptions(select, names, label, order) {
    (order || names.map((_, index) => index)).forEach((index) => {
      const option = document.createElement("option");
      option.value = String(index);
      option.textContent = unreordered(label(names[index]));
      select.appendChild(option);
    });
  }

  // The cells' indexes in the suite's order (`order`, from the run's summary), else as numbered.
  function cellOrder(data) {
    return Array.isArray(data.order) && data.order.length === data.cells.length ? data.order : data.cells.map((_, index) => index);
  }

  // [evaluator, verdict, evaluator, verdict, ...] -> the evaluators that did not pass
  function notPassed(pairs) {
    const names = [];
    for (let i = 0; i < pairs.length; i += 2) if (pairs[i + 1] !== 0) names.push(pairs[i]);
    return names;
  }

  function start(data) {
    DATA = data;
    const cases = data.cases;
    const state = { shown: [], page: 0, open: new Set(), searchText: null };
    const matrix = Array.isArray(data.cells) && data.cells.length > 1 && byId("cell") !== null;
    const repeated = matrix && cases.some((row) => row[8] > 0);
    fillOptions(byId("tag"), data.tags, (tag) => tag);
    fillOptions(byId("evaluator"), data.evaluators, (name) => "did not pass: " + name);
    if (matrix) fillOptions(byId("cell"), data.cells, (label) => label, cellOrder(data));

    function apply() {
      const query = byId("search").value.trim().toLowerCase();
      const verdict = byId("verdict").value;
      const tag = byId("tag").value === "" ? -1 : Number(byId("tag").value);
      const evaluator = byId("evaluator").value === "" ? -1 : Number(byId("evaluator").value);
      const cell = !matrix || byId("cell").value === "" ? -1 : Number(byId("cell").value);
      if (query && !state.searchText) state.searchText = cases.map((row) => row[6].toLowerCase());
      const shown = [];
      for (let i = 0; i < cases.length; i++) {
        const row = cases[i];
        const name = CASE_VERDICTS[row[1]];
        if (verdict === "notpass" ? name === "pass" : verdict && name !== verdict) continue;
        if (tag >= 0 && !row[4].includes(tag)) continue;
        if (evaluator >= 0 && !notPassed(row[5]).includes(evaluator)) continue;
        if (cell >= 0 && row[7] !== cell) continue;
        if (query && !row[0].toLowerCase().includes(query) && !state.searchText[i].includes(query)) continue;
        shown.push(i);
      }
      const sort = byId("sort").value;
      if (sort === "low") shown.sort((a, b) => cases[a][2] - cases[b][2]);
      if (sort === "high") shown.sort((a, b) => cases[b][2] - cases[a][2]);
      if (sort === "slow") shown.sort((a, b) => cases[b][3] - cases[a][3]);
      state.shown = shown;
      state.page = 0;
      render();
    }

    function render() {
      const pages = Math.max(1, Math.ceil(state.shown.length / PAGE_SIZE));
      state.page = Math.min(state.page, pages - 1);
      const first = state.page * PAGE_SIZE;
      const slice = state.shown.slice(first, first + PAGE_SIZE);
      const html = [];
      for (const index of slice) {
        html.push(rowHtml(index));
        if (state.open.has(index)) html.push(detailRow(index));
      }
      document.querySelector("#case-table tbody").innerHTML = html.join("");
      byId("case-count").textContent = `${state.shown.length} of ${cases.length} cases`;
      byId("page").textContent = state.shown.length ? `${first + 1}–${first + slice.length} (page ${state.page + 1} of ${pages})` : "";
      byId("prev").disabled = state.page === 0;
      byId("next").disabled = state.page >= pages - 1;
    }

    function rowHtml(index) {
      const [id, verdict, score, ms, tags, evaluators] = cases[index];
      const name = CASE_VERDICTS[verdict];
      const missed = notPassed(evaluators).map((e) => esc(data.evaluators[e])).join(", ");
      const open = state.open.has(index) ? " open" : "";
      return `<tr class="case${open}" data-index="${index}"><td>${esc(id)}</td>${matrix ? `<td class="cell">${cellName(cases[index])}</td>` : ""}<td class="v ${name}">${name}</td>` +
        `<td>${fixed(score, 3)}</td><td>${tags.map((t) => `<span class="tag">${esc(data.tags[t])}</span>`).join("")}</td>` +
        `<td>${missed}</td><td>${fixed(ms, 1)}</td></tr>`;
    }

    function detailRow(index) {
      return `<tr class="detail-row"><td class="detail" colspan="${matrix ? 7 : 6}">${detailHtml(data.detail(index))}</td></tr>`;
    }

    // The cell of a case row: its label, and which run under --repeat.
    function cellName(row) {
      const label = typeof row[7] === "number" ? esc(data.cells[row[7]]) : '<span class="note">(none)</span>';
      return label + (repeated ? ` <span class="note">run ${Number(row[8]) + 1}</span>` : "");
    }

    function detailHtml(detail) {
      const [evaluators, output, error, input, stored, transcript, same, chat, spans] = detail;
      const reference = same === 1 ? output : stored;
      const missed = new Set();
      const hit = new Set();
      const expected = Object.create(null);
      let checked = 0;
      const fieldRows = [];
      for (const e of evaluators) {
        for (const miss of e[4]) missed.add(miss.split(" (")[0]);
        for (const cell of e[6]) {
          const f = fieldCell(cell);
          if (f.status === "miss") missed.add(f.path);
          if (f.status === "hit") hit.add(f.path);
          if (Object.hasOwn(f, "e") && setPath(expected, f.path, f.e)) checked++;
          fieldRows.push(`<tr class="${f.status === "miss" ? "miss" : ""}"><td>${esc(data.evaluators[e[0]])}</td><td>${esc(f.path)}</td>` +
            `<td class="v ${f.status === "hit" ? "pass" : f.status === "miss" ? "fail" : ""}">${esc(f.status)}</td>` +
            `<td>${Object.hasOwn(f, "e") ? json(f.e, null, NONE, NONE) : ""}</td><td>${Object.hasOwn(f, "a") ? json(f.a, null, NONE, NONE) : '<span class="hole">absent</span>'}</td></tr>`);
        }
      }
      const parts = [];
      if (error) parts.push(`<p class="case-error">error: ${esc(error)}</p>`);
      // The stored reference, marked by field; a reference cut for size, or a result line written
      // before references were stored, shows the checked fields rebuilt from the field cells.
      const whole = reference !== undefined && reference !== null && !isClip(reference);
      const expectedHtml = whole || (reference != null && !checked)
        ? `<h4>expected</h4><pre class="expected">${json(reference, "", missed, hit)}</pre>`
        : checked ? `<h4>expected <span class="note">(the fields evaluators checked)</span></h4><pre class="expected">${json(expected, "", missed, hit)}</pre>`
        : '<h4>expected</h4><p class="note">no expected values in this result</p>';
      const inputHtml = input === undefined || input === null ? '<p class="note">no input in this result</p>'
        : typeof input === "string" ? `<pre class="input text">${esc(input)}</pre>` : `<pre class="input">${json(input, null, NONE, NONE)}</pre>`;
      parts.push(`<div class="sides"><div class="side-input"><h4>input</h4>${inputHtml}</div>` +
        `<div class="side-expected">${expectedHtml}</div>` +
        `<div class="side-candidate"><h4>candidate</h4><pre class="candidate">${json(output, "", missed, hit)}</pre></div></div>`);
      if (transcript) parts.push(transcriptHtml(transcript));
      if (Array.isArray(chat)) parts.push(chatHtml(chat, evaluators));
      if (Array.isArray(spans)) parts.push(spansHtml(spans));
      if (fieldRows.length) {
        parts.push('<h4>fields</h4><table class="fields"><thead><tr><th>evaluator</th><th>field</th><th>status</th><th>expected</th><th>candidate</th></tr></thead>' +
          `<tbody>${fieldRows.join("")}</tbody></table>`);
      }
      for (const e of evaluators) parts.push(evaluatorHtml(e));
      return parts.join("");
    }

    // An answer read from a trace: its spans as a tree (indented by depth), with start, duration and errors.
    function spansHtml([traceId, rows]) {
      const ms = (value) => value === null || value === undefined ? "" : `${fixed(value, value >= 100 ? 0 : 1)} ms`;
      return `<h4>spans${traceId ? ` <span class="note">trace ${esc(traceId)}</span>` : ""}</h4><table class="spans"><thead><tr>` +
        "<th>span</th><th>kind</th><th>start</th><th>duration</th><th></th></tr></thead><tbody>" +
        rows.map(([depth, name, kind, start, duration, error]) =>
          `<tr class="${error ? "miss" : ""}"><td class="span-name">${"\u00a0\u00a0".repeat(depth)}${depth ? "└ " : ""}${esc(name)}</td>` +
          `<td>${esc(kind)}</td><td>${ms(start)}</td><td>${ms(duration)}</td><td>${error ? '<span class="badge error">error</span>' : ""}</td></tr>`).join("") +
        "</tbody></table>";
    }

    function evaluatorHtml(e) {
      const [name, verdict, score, reasoning, misses, error, , details, missCount, criteria] = e;
      const verdictName = EVALUATOR_VERDICTS[verdict];
      const more = missCount > misses.length ? `<li class="note">… and ${missCount - misses.length} more</li>` : "";
      return `<div class="evaluator ${verdictName}"><h4>${esc(data.evaluators[name])} <span class="note">${esc(data.types[name] || "")}</span> ` +
        `<span class="v ${verdictName}">${verdictName}</span> ${fixed(score, 3)}</h4>` +
        (reasoning ? `<div class="reasoning"><b>reasoning</b> ${esc(reasoning)}</div>` : "") +
        (criteria ? `<ul class="criteria">${criteria.map(([c, raw, why]) =>
          `<li><b>${esc(c)}</b> <span class="note">${raw === null || raw === undefined ? "" : esc(typeof raw === "object" ? JSON.stringify(raw) : String(raw))}</span> ${esc(why)}</li>`).join("")}</ul>` : "") +
        (error ? `<div class="case-error">error: ${esc(error)}</div>` : "") +
        (misses.length ? `<ul class="misses">${misses.map((m) => `<li>${esc(m)}</li>`).join("")}${more}</ul>` : "") +
        (details ? `<details><summary>details</summary><pre>${json(details, null, NONE, NONE)}</pre></details>` : "") +
        "</div>";
    }

    // Turns [role, text, calls, results]; a call [name, arguments, problem], a result [name, value].
    function transcriptHtml(turns) {
      const html = turns.map(([role, text, calls, results]) => {
        const parts = [`<div class="turn ${/^[a-z]+$/.test(role) ? role : "other"}"><span class="role">${esc(role)}</span>`];
        if (text) parts.push(`<div class="said">${esc(text)}</div>`);
        for (const [tool, args, problem] of calls || []) {
          parts.push(`<div class="call"><span class="tool-name">${esc(tool === null ? "(no name)" : tool)}</span>` +
            (problem ? ` <span class="case-error">${esc(problem)}</span>` : "") +
            (args === null ? "" : `<pre class="arguments">${json(args, null, NONE, NONE)}</pre>`) + "</div>");
        }
        for (const [tool, value] of results || []) {
          parts.push(`<div class="result"><span class="note">result${tool ? " of " : ""}</span>${tool ? `<span class="tool-name">${esc(tool)}</span>` : ""}` +
            `<pre>${typeof value === "string" ? esc(value) : json(value, null, NONE, NONE)}</pre></div>`);
        }
        return parts.join("") + "</div>";
      });
      return `<h4>transcript</h4><div class="transcript">${html.join("")}</div>`;
    }

    // A played loop or conversation as a chat: bubbles per turn, tool calls and results inline,
    // each step's figures beside it, and the verdicts at the turn they judged.
    const CHAT_KINDS = new Set(["system", "user", "assistant", "tool", "judge", "note"]);
    function chatHtml(chat, evaluators) {
      const [entries, end, marks] = chat;
      const lastOf = new Map();
      entries.forEach((entry, index) => { if (entry[1] > 0) lastOf.set(entry[1], index); });
      const placed = new Map();
      for (const mark of marks || []) {
        const turn = lastOf.has(mark[1]) ? mark[1] : 0;  // a turn cut from view: at the end
        if (!placed.has(turn)) placed.set(turn, []);
        placed.get(turn).push(mark);
      }
      const html = [];
      let turn = null;
      entries.forEach((entry, index) => {
        if (entry[1] > 0 && entry[1] !== turn && entry[0] !== "system") {
          turn = entry[1];
          html.push(`<div class="turn-mark">turn ${esc(turn)}</div>`);
        }
        html.push(chatEntry(entry));
        if (entry[1] > 0 && lastOf.get(entry[1]) === index && placed.has(entry[1])) html.push(verdictsHtml(placed.get(entry[1]), entry[1], evaluators));
      });
      const [stopped, goal, total] = end || [];
      html.push(`<div class="chat-end"><span class="stopped">${stopped ? "stopped: " + esc(stopped) : "end"}</span>` +
        (goal ? ` · <span class="goal">${esc(goal)}</span>` : "") + (total ? ` <span class="figures">total ${esc(total)}</span>` : "") +
        (placed.has(0) ? verdictsHtml(placed.get(0), 0, evaluators) : "") + "</div>");
      return `<h4>conversation</h4><div class="chat">${html.join("")}</div>`;
    }

    function chatEntry([kind, turn, text, calls, result, figures, flag]) {
      const css = CHAT_KINDS.has(kind) ? kind : "note";
      const label = { system: "system", user: flag ? "user (simulated)" : "user", assistant: "assistant", tool: "tool result", judge: "goal judge", note: "" }[css];
      const parts = [`<div class="msg ${css}${flag && css === "user" ? " simulated" : ""}${flag && css === "tool" ? " failed" : ""}" data-turn="${esc(turn)}">`];
      parts.push(`<div class="msg-head"><span class="role">${esc(label)}</span>`);
      if (css === "tool") parts.push(` <span class="tool-name">${esc(text === null ? "(no name)" : text)}</span>` + (flag ? ' <span class="badge error">error</span>' : ""));
      if (figures) parts.push(` <span class="figures">${esc(figures)}</span>`);
      parts.push("</div>");
      if (css === "tool") parts.push(`<pre class="tool-result">${typeof result === "string" ? esc(result) : json(result, null, NONE, NONE)}</pre>`);
      else if (text !== null && text !== undefined) parts.push(`<div class="said">${esc(text)}</div>`);
      for (const [name, args, problem, state, value] of calls || []) {
        parts.push(`<div class="call"><span class="note">calls</span> <span class="tool-name">${esc(name === null ? "(no name)" : name)}</span>` +
          (state === 0 ? ' <span class="badge">not run</span>' : "") + (problem ? ` <span class="case-error">${esc(problem)}</span>` : "") +
          (args === null || args === undefined ? "" : `<pre class="arguments">${json(args, null, NONE, NONE)}</pre>`) +
          (state === 2 ? `<div class="result"><span class="note">result</span><pre>${typeof value === "string" ? esc(value) : json(value, null, NONE, NONE)}</pre></div>` : "") +
          "</div>");
      }
      return parts.join("") + "</div>";
    }

    // The verdicts at one turn (0: the end): a `scope: turn` evaluator shows that turn's figures and misses.
    function verdictsHtml(marks, turn, evaluators) {
      const items = marks.map(([position, , verdict, score, perTurn]) => {
        const e = evaluators[position];
        if (!e) return "";
        const name = EVALUATOR_VERDICTS[verdict] || "error";
        const prefix = `turn ${turn}: `;
        const misses = (perTurn ? e[4].filter((miss) => miss.startsWith(prefix)).map((miss) => miss.slice(prefix.length)) : e[4]).slice(0, 3);
        return `<li class="verdict ${name}"><span class="evaluator-name">${esc(data.evaluators[e[0]])}</span> <span class="v ${name}">${name}</span> ${fixed(score, 3)}` +
          (misses.length ? ` <span class="note">${misses.map(esc).join("; ")}</span>` : "") +
          (verdict === 3 && e[5] ? ` <span class="case-error">${esc(e[5])}</span>` : "") + "</li>";
      });
      return `<ul class="verdicts" data-turn="${esc(turn)}">${items.join("")}</ul>`;
    }

    document.querySelector("#case-table tbody").addEventListener("click", (event) => {
      const tr = event.target.closest("tr.case");
      if (!tr) return;
      const index = Number(tr.dataset.index);
      if (state.open.has(index)) state.open.delete(index); else state.open.add(index);
      render();
    });
    let timer = null;
    byId("search").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(apply, 150); });
    for (const id of ["verdict", "tag", "evaluator", "sort"]) byId(id).addEventListener("change", apply);
    if (matrix) byId("cell").addEventListener("change", apply);
    byId("prev").addEventListener("click", () => { state.page--; render(); });
    byId("next").addEventListener("click", () => { state.page++; render(); });
    apply();
    if (matrix) startComparison(data, repeated);
    document.body.dataset.ready = "true";
  }

  // The comparison view: one row per case id, one column per cell (each run of the case in that
  // cell under --repeat). A case's cells disagree when their verdicts differ; those cases come
  // first, each group in file order. Answers are parsed only for the page shown.
  function startComparison(data, repeated) {
    const cases = data.cases;
    const width = data.cells.length;
    const order = cellOrder(data);  // columns in the suite's order, whatever order results finished in
    const groups = new Map();
    for (let i = 0; i < cases.length; i++) {
      const row = cases[i];
      if (typeof row[7] !== "number") continue;
      let group = groups.get(row[0]);
      if (group === undefined) {
        group = { id: row[0], runs: Array.from({ length: width }, () => []) };
        groups.set(row[0], group);
      }
      group.runs[row[7]].push(i);
    }
    const agreeing = [];
    const disagreeing = [];
    for (const group of groups.values()) {
      const seen = new Set();
      for (const runs of group.runs) {
        if (runs.length) seen.add(runs.map((i) => cases[i][1]).sort().join(","));
      }
      group.disagree = seen.size > 1;
      (group.disagree ? disagreeing : agreeing).push(group);
    }
    const ordered = disagreeing.concat(agreeing);
    const state = { shown: ordered, page: 0 };
    const size = 50;
    byId("comparison-table").querySelector("thead").innerHTML =
      `<tr><th>case</th>${order.map((cell) => `<th>${esc(data.cells[cell])}</th>`).join("")}</tr>`;

    function render() {
      const pages = Math.max(1, Math.ceil(state.shown.length / size));
      state.page = Math.min(Math.max(state.page, 0), pages - 1);
      const first = state.page * size;
      const slice = state.shown.slice(first, first + size);
      byId("comparison-table").querySelector("tbody").innerHTML = slice.map(groupHtml).join("");
      byId("comparison-count").textContent =
        `${disagreeing.length} of ${ordered.length} cases disagree` + (state.shown.length !== ordered.length ? `; ${state.shown.length} shown` : "");
      byId("comparison-page").textContent = state.shown.length ? `${first + 1}–${first + slice.length} (page ${state.page + 1} of ${pages})` : "";
      byId("comparison-prev").disabled = state.page === 0;
      byId("comparison-next").disabled = state.page >= pages - 1;
    }

    function groupHtml(group) {
      const columns = order.map((cell) => group.runs[cell]).map((runs) => {
        if (!runs.length) return '<td class="side"><span class="note">not run</span></td>';
        return `<td class="side">${runs.map(runHtml).join("")}</td>`;
      });
      return `<tr class="compared${group.disagree ? " disagree" : ""}" data-case="${esc(group.id)}"><td>${esc(group.id)}` +
        `${group.disagree ? ' <span class="note">disagree</span>' : ""}</td>${columns.join("")}</tr>`;
    }

    function runHtml(index) {
      const [, verdict, score] = cases[index];
      const name = CASE_VERDICTS[verdict];
      const [, output, error] = DATA.detail(index);
      const answer = output !== null && typeof output === "object" && !Array.isArray(output) && typeof output.content === "string" ? output.content : output;
      const shown = answer === undefined || answer === null ? '<span class="note">no answer</span>'
        : typeof answer === "string" ? esc(answer) : json(answer, null, NONE, NONE);
      return `<div class="run"><span class="v ${name}">${name}</span> ${fixed(score, 3)}` +
        (repeated ? ` <span class="note">run ${Number(cases[index][8]) + 1}</span>` : "") +
        (error ? `<div class="case-error">error: ${esc(error)}</div>` : "") + `<pre class="answer">${shown}</pre></div>`;
    }

    byId("disagree-only").addEventListener("change", (event) => {
      state.shown = event.target.checked ? disagreeing : ordered;
      state.page = 0;
      render();
    });
    byId("comparison-prev").addEventListener("click", () => { state.page--; render(); });
    byId("comparison-next").addEventListener("click", () => { state.page++; render(); });
    render();
  }

  // A field cell [path, code, expected?, actual?]; code = status + 4 (has expected) + 8 (has actual) + 16 (actual = expected).
  function fieldCell(cell) {
    const code = cell[1];
    const f = Object.create(null);
    f.path = DATA.paths[cell[0]];
    f.status = FIELD_STATUSES[code & 3];
    let next = 2;
    if (code & 4) f.e = cell[next++];
    if (code & 8) f.a = code & 16 ? f.e : cell[next++];
    return f;
  }

  // A field path `a.b[0].c` set inside an object without a prototype: rebuilds the checked part of
  // the expected answer. A path naming `__proto__`, `constructor` or `prototype`, or indexing a
  // list by name, is not rebuilt (the field table still lists it); false when nothing was set.
  function setPath(target, path, value) {
    const keys = [];
    for (const part of path.split(".")) {
      const match = /^([^[\]]+)((?:\[\d+\])*)$/.exec(part);
      if (!match || UNSAFE_KEYS.has(match[1])) return false;
      keys.push(match[1]);
      for (const index of match[2].matchAll(/\[(\d+)\]/g)) keys.push(Number(index[1]));
    }
    let node = target;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      if (Array.isArray(node) !== (typeof key === "number")) return false;  // a list has indexes, an object names
      if (i === keys.length - 1) { node[key] = value; return true; }
      const child = Object.hasOwn(node, key) ? node[key] : undefined;
      if (child === undefined || typeof child !== "object" || child === null) node[key] = typeof keys[i + 1] === "number" ? [] : Object.create(null);
      node = node[key];
    }
    return false;
  }

  const isClip = (value) => typeof value === "object" && value !== null && !Array.isArray(value) &&
    Object.keys(value).length === 1 && Object.hasOwn(value, "$clip") && typeof value.$clip === "string";

  // JSON as HTML, each member marked `miss` or `hit` by its field path (`path` null: no marks).
  function json(value, path, missed, hit, indent = "") {
    if (value === null) return '<span class="n">null</span>';
    if (typeof value === "string") return `<span class="s">${esc(JSON.stringify(value))}</span>`;
    if (typeof value !== "object") return `<span class="n">${esc(String(value))}</span>`;
    if (!Array.isArray(value) && Object.keys(value).length === 1 && Object.hasOwn(value, "$clip") && typeof value.$clip === "string") {
      return `<span class="clip">${esc(value.$clip)}… (cut)</span>`;
    }
    const inner = indent + "  ";
    const entries = [];
    const mark = (childPath, text) => {
      if (childPath === null) return text;
      const css = missed.has(childPath) ? "miss" : hit.has(childPath) ? "hit" : "";
      return css ? `<span class="${css}" data-path="${esc(childPath)}">${text}</span>` : text;
    };
    if (Array.isArray(value)) {
      if (!value.length) return "[]";
      for (let i = 0; i < value.length; i++) {
        const childPath = path === null ? null : `${path}[${i}]`;
        entries.push(inner + (i in value ? mark(childPath, json(value[i], childPath, missed, hit, inner)) : '<span class="hole">…</span>'));
      }
      return `[\n${entries.join(",\n")}\n${indent}]`;
    }
    const keys = Object.keys(value);
    if (!keys.length) return "{}";
    for (const key of keys) {
      const childPath = path === null ? null : path ? `${path}.${key}` : key;
      entries.push(inner + mark(childPath, `<span class="k">${esc(JSON.stringify(key))}</span>: ${json(value[key], childPath, missed, hit, inner)}`));
    }
    return `{\n${entries.join(",\n")}\n${indent}}`;
  }

  loadData().then(start, (error) => {
    byId("case-count").textContent = "could not read the cases: " + error;
    throw error;
  });
})();
