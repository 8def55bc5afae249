"""Traces that already happened, read into the answer a live tool loop gives (docs/traces.md).

`otlp` reads OTLP/JSON exports into spans, `index` finds one trace in a file without holding the
others, and `answer` turns a trace in the GenAI or OpenInference conventions into `content`,
`messages`, `tool_calls`, `steps`, `usage` and a compact `spans` list.
"""
