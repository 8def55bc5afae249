"""`agenteval view`: a local web app over runs (needs the `view` extra: Starlette and Uvicorn).

runs.py finds the runs, index.py pages a run's cases on the server, case_view.py shapes one case
from the HTML report's models, app.py serves the pages (token, CSRF, escaping), server.py listens
on loopback, export.py writes the same pages as static files.
"""
