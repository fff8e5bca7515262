"""isolation_headers.py - the response headers that make a page cross-origin
isolated (crossOriginIsolated: SharedArrayBuffer, so wasm threads), read from
their one place, web/isolation-headers.json, for the servers and hosts we
ship: tools/serve.py sends them on every response, tools/build_site.py
writes them into the Hugging Face Space card (custom_headers), and on other
static hosts web/coi-sw.js (a service worker) adds them.  The pages load only their own origin's files (and
open WebSockets and WebRTC, which these headers do not touch), so
require-corp costs them nothing; a model fetched from another site must
come with CORS, as fetch() asks for anyway.
"""

import json
import os

with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "web", "isolation-headers.json")) as f:
    HEADERS = tuple((name, value) for name, value in json.load(f))
