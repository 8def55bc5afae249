"""Views of a run for people and CI: terminal tables, failures, JUnit, Markdown, HTML, and compare.

Every writer is fed one result at a time and keeps bounded state (or spools to a temporary file),
so a report over 100,000 cases costs what a report over 100 does in memory.
"""
