"""``vxtrain ui``: a local web page of the jobs vxtrain made, one job's timeline, cost and
live logs, and a spec's plan report, served on 127.0.0.1 to the browser holding its token.

- ``guard``: who may read it (Host, method, cross-site requests, the token and its cookie);
- ``source``: what the pages show, read through one session (the ledger, shared by every
  refresh; one job and its key's jobs; spec files under the ui's folder);
- ``timeline``: a key's attempts and rungs as inline SVG;
- ``pages``: the HTML, every value escaped; ``static/``: the one stylesheet and script;
- ``server``: the standard library's ThreadingHTTPServer, the routes, the log stream
  (server-sent events from the follower ``vxtrain logs --follow`` uses).

Only ``vxtrain ui`` imports this package (validate and plan never load it).
"""
