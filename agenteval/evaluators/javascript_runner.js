// The node side of agenteval's `javascript` evaluator: a long-lived judge (code_judge's
// protocol jsonl) around one module. Each line on stdin is a judge payload; each line on stdout
// the judge's answer for that case. The module is the user's file, loaded with require().
'use strict';
const path = require('path');
const readline = require('readline');

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

function answer(payload, result) {
  const threshold = payload.config ? payload.config.threshold : null;
  const base = {case_id: payload.case_id};
  if (typeof result === 'boolean') return {...base, score: result ? 1 : 0, verdict: result ? 'pass' : 'fail', reasoning: result ? 'passed' : 'returned false'};
  if (typeof result === 'number') {
    if (!Number.isFinite(result)) return {...base, score: 0, verdict: 'error', error: `the check returned ${result}`};
    const passed = threshold !== null && threshold !== undefined ? result >= threshold : result > 0;
    return {...base, score: Math.min(1, Math.max(0, result)), verdict: passed ? 'pass' : 'fail', reasoning: `returned ${result}`, details: {returned: result}};
  }
  if (result && typeof result === 'object' && typeof result.pass === 'boolean') {
    const score = result.score === undefined ? (result.pass ? 1 : 0) : result.score;
    if (typeof score !== 'number' || !Number.isFinite(score)) return {...base, score: 0, verdict: 'error', error: `the check returned a score that is not a number`};
    return {...base, score: Math.min(1, Math.max(0, score)), verdict: result.pass ? 'pass' : 'fail',
            reasoning: typeof result.reason === 'string' ? result.reason : undefined, details: {returned: result}};
  }
  return {...base, score: 0, verdict: 'error', error: `the check returned ${typeof result} (a check returns a boolean, a number or {pass, score, reason})`};
}

const lines = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
let queue = Promise.resolve();
lines.on('line', (line) => {
  queue = queue.then(async () => {
    let payload = {};
    try {
      payload = JSON.parse(line);
      if (loadError) throw new Error(loadError);
      const vars = payload.input && typeof payload.input === 'object' && !Array.isArray(payload.input) ? payload.input : {};
      const config = payload.config || {};
      const context = {vars, prompt: promptOf(payload), config: config.config || {}, expected: payload.reference_answer,
                       test: {vars, description: payload.case_id, metadata: payload.metadata}};
      const result = await check(payload.candidate_answer, context);
      answerLine(JSON.stringify(answer(payload, result)) + '\n');
    } catch (e) {
      // As promptfoo reads it, a check that throws fails the answer; a file that cannot load is an error.
      const reason = `the check threw: ${e && e.message ? e.message : e}`;
      answerLine(JSON.stringify(loadError ? {case_id: payload.case_id, score: 0, verdict: 'error', error: reason}
        : {case_id: payload.case_id, score: 0, verdict: 'fail', reasoning: reason, misses: [reason]}) + '\n');
    }
  });
});
