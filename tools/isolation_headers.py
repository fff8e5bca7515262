"""isolation_headers.py - the response headers that make a page cross-origin
isolated (crossOriginIsolated: SharedArrayBuffer, so wasm threads), in one
place for the servers and hosts we ship: tools/serve.py sends them on every
response, and tools/build_site.py writes them into the Hugging Face Space
card (custom_headers).  The pages load only their own origin's files (and
open WebSockets and WebRTC, which these headers do not touch), so
require-corp costs them nothing; a model fetched from another site must
come with CORS, as fetch() asks for anyway.
"""

HEADERS = (
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Embedder-Policy", "require-corp"),
)
