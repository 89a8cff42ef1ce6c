"""Faultline for a server: the dashboard (app.py) plus `GET /healthz`, for a load balancer.

    streamlit run serve.py --server.headless true        # the same flags as `streamlit run app.py`

Streamlit's own `/_stcore/health` answers as long as the app process serves pages; it cannot
know that the store the pages show is a copy whose refresh is stuck or failing (store/remote.py).
`/healthz` does: 200 with `"status": "ok"`, or 503 with `"degraded"` (pages show the verified
copy, but its refresh is stuck or failed, or the copy was last confirmed longer ago than
FAULTLINE_REMOTE_TTL + FAULTLINE_REMOTE_TIMEOUT) or `"unavailable"` (no verified copy yet), the
reasons in `problems`. A probe never waits, starts at most one fetch per FAULTLINE_REMOTE_TTL
(probes in between answer from the last one), and its answer names no path of this server.
docs/hosting.md says which endpoint to give a load balancer and which to alert on.
"""

import streamlit as st
from starlette.responses import JSONResponse
from starlette.routing import Route

import store
from store import remote


def healthz(request) -> JSONResponse:
    # a plain function: Starlette runs it in a worker thread, off the event loop pages use
    spec = store.db_spec()
    try:
        report = (remote.health(spec) if remote.is_remote(spec)
                  else {"status": "ok", "store": "a local file", "problems": []})
    except store.FaultlineError as exc:  # a setting the pages cannot work with either (a TTL that is no number)
        report = {"status": "unavailable", "store": remote.display(spec) if remote.is_remote(spec) else "a local file",
                  "problems": [remote.no_paths(exc.message)]}
    return JSONResponse(report, status_code=200 if report["status"] == "ok" else 503,
                        headers={"Cache-Control": "no-store"})


# Streamlit prefixes its own routes with server.baseUrlPath but not an app's: serve both, so a
# proxy that forwards only /faultline/ reaches /faultline/healthz
_base = (st.get_option("server.baseUrlPath") or "").strip("/")
_paths = ["/healthz"] + ([f"/{_base}/healthz"] if _base else [])
app = st.App("app.py", routes=[Route(path, healthz, methods=["GET", "HEAD"]) for path in _paths])
