// The node side of agenteval's `javascript` evaluator: a long-lived judge (code_judge's
// protocol jsonl) around one module. Each line on stdin is a judge payload; each line on stdout
// the judge's answer for that case. The module is the user's file, loaded with require().
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');

// The reading of what the check gave that the embedded engine uses too (see javascript_answer.js).
const {thrown, answer} = new Function(fs.readFileSync(path.join(__dirname, 'javascript_answer.js'), 'utf8') +
  '\nreturn {thrown: __agenteval_thrown, answer: __agenteval_answer};')();

// Only this runner writes to stdout (one answer line per case): what the user's code prints goes to stderr.
const answerLine = process.stdout.write.bind(process.stdout);
process.stdout.write = process.stderr.write.bind(process.stderr);
for (const method of ['log', 'info', 'debug', 'warn']) console[method] = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');

const [file, name] = process.argv.slice(2);
let check;
let loadError = null;
try {
  const loaded = require(path.resolve(file));
  check = name ? loaded[name] : (typeof loaded === 'function' ? loaded : loaded && loaded.default);
  if (typeof check !== 'function') loadError = `${file} exports no function${name ? ' named ' + name : ''}`;
} catch (e) {
  loadError = `${file} could not be loaded: ${e && e.message ? e.message : e}`;
}

function promptOf(payload) {
  const messages = payload.candidate_answer && Array.isArray(payload.candidate_answer.messages) ? payload.candidate_answer.messages : [];
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i] && messages[i].role === 'user' && typeof messages[i].content === 'string') return messages[i].content;
  }
  return typeof payload.input === 'string' ? payload.input : null;
}

// A returned Promise (or other thenable) is awaited, its rejection being the check's throw; a `then`
// that throws when read is left to the answer's reading, which refuses the value.
function thenable(value) {
  try { return value != null && typeof value.then === 'function'; } catch (e) { return false; }
}

const lines = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
let queue = Promise.resolve();
lines.on('line', (line) => {
  queue = queue.then(async () => {
    let payload = {};
    let text;
    try {
      payload = JSON.parse(line);
      if (loadError) throw new Error(loadError);
      const vars = payload.input && typeof payload.input === 'object' && !Array.isArray(payload.input) ? payload.input : {};
      const config = payload.config || {};
      const context = {vars, prompt: promptOf(payload), config: config.config || {}, expected: payload.reference_answer,
                       test: {vars, description: payload.case_id, metadata: payload.metadata}};
      let result = check(payload.candidate_answer, context);
      if (thenable(result)) result = await result;
      text = answer(result);
    } catch (e) {
      // A file that cannot load is an error; a check that throws is read as the embedded engine reads it.
      if (loadError) {
        answerLine(JSON.stringify({case_id: payload.case_id, score: 0, verdict: 'error', error: `the check threw: ${loadError}`}) + '\n');
        return;
      }
      text = thrown(e);
    }
    // The answer goes back as text, for the evaluator to read as it reads the embedded engine's.
    answerLine(JSON.stringify({case_id: payload.case_id, score: 0, details: {answer: text}}) + '\n');
  });
});
