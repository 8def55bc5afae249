// What a `javascript` check gave, as the JSON text both engines answer with: the embedded engine
// evaluates this file and node's runner loads it, so a value reads the same in either.
// {thrown: text} when the check threw; {bad: why} when what it returned is no verdict; else
// {boolean}, {number} or {object}, the object as JSON reads it (its getters, toJSON and Proxy traps
// run here: one that throws, a circular object or a BigInt is `bad`, as the check's error).
const __agenteval_most = 4 * 1024 * 1024; // characters of JSON an answer may have (node's line stays under the judge's 16 MiB)

function __agenteval_text(value) {
  try { return String(value); } catch (e) {}
  try { return Object.prototype.toString.call(value); } catch (e) { return 'a value without text'; }
}

// JSON.stringify with a lone surrogate (half an emoji) escaped, as node writes it and Python reads it.
function __agenteval_json(value) {
  return JSON.stringify(value).replace(/[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]/g,
    (c) => c.length === 2 ? c : '\\u' + c.charCodeAt(0).toString(16));
}

function __agenteval_thrown(e) {
  const text = __agenteval_text(e);
  let stack = '';
  try { if (e && typeof e.stack === 'string') stack = e.stack; } catch (_) {}
  return __agenteval_json({thrown: (stack.startsWith(text) ? stack : text + (stack && '\n' + stack)).slice(0, 1000)});
}

function __agenteval_answer(result) {
  let text;
  try {
    const kind = typeof result;
    let answer;
    if (result != null && typeof result.then === 'function') {
      answer = {bad: 'a Promise (async checks are not supported in the embedded engine; use engine: node)'};
    } else if (kind === 'boolean') {
      answer = {boolean: result};
    } else if (kind === 'number') {
      answer = Number.isFinite(result) ? {number: result} : {bad: String(result)};
    } else if (kind === 'object' && result !== null) {
      const score = result.score;
      answer = typeof score === 'number' && !Number.isFinite(score)
        ? {bad: 'an object whose `score` is ' + score + ', not a number'} : {object: result};
    } else {
      answer = {bad: kind === 'undefined' ? 'undefined (no return value)' : result === null ? 'null' : kind + ' ' + String(result).slice(0, 200)};
    }
    text = __agenteval_json(answer);
  } catch (e) {
    return __agenteval_json({bad: 'an object that is not JSON: ' + __agenteval_text(e)});
  }
  return text.length > __agenteval_most ? __agenteval_json({bad: 'more than 4 MiB of JSON (' + text.length + ' characters)'}) : text;
}
