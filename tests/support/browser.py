"""A real headless Chromium driven over the DevTools protocol, with the standard library alone.

MLflow's UI is a React app: its text exists only after scripts ran and the API answered, so a
page is read by evaluating ``document.body.innerText`` until the expected words appear, not by
fetching its HTML. The protocol runs over a WebSocket, spoken by websocket-client (a maintained
client on PyPI, in the dev extra) to the system's Chromium: no browser download, as Playwright
would need.

Shared by tests/test_mlflow_ui.py and docs/make_ui_screenshots.py.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import websocket

LISTENING = re.compile(r"DevTools listening on (ws://\S+)")


def chromium() -> str | None:
    """Debian's chromium (``apt-get install chromium``), or another build on PATH."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Page:
    """One browser tab: navigate, evaluate JavaScript, wait for text, take a screenshot."""

    def __init__(self, ws: websocket.WebSocket) -> None:
        self.ws = ws
        self.next_id = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def goto(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def text(self) -> str:
        """What the page shows, its frames' text after its own (MLflow's artifact viewer renders
        an HTML artifact in a sandboxed iframe, which the page's scripts cannot read)."""
        texts = [self.evaluate("document.body ? document.body.innerText : ''") or ""]
        frames = self.call("Page.getFrameTree")["frameTree"].get("childFrames", [])
        for frame in frames:
            try:
                world = self.call("Page.createIsolatedWorld", frameId=frame["frame"]["id"])
                result = self.call(
                    "Runtime.evaluate",
                    expression="document.body ? document.body.innerText : ''",
                    contextId=world["executionContextId"],
                    returnByValue=True,
                )
            except RuntimeError:  # a frame that went away meanwhile
                continue
            texts.append(result.get("result", {}).get("value") or "")
        return "\n".join(texts)

    def wait_for(self, *needles: str, timeout_s: float = 60.0, settle_s: float = 1.0) -> str:
        """The page's text once it holds every needle (then ``settle_s`` more for late parts to
        draw); TimeoutError, with the text it did show, otherwise."""
        deadline = time.monotonic() + timeout_s
        text = ""
        while time.monotonic() < deadline:
            text = self.text()
            if all(n in text for n in needles):
                time.sleep(settle_s)
                return self.text()
            time.sleep(0.5)
        raise TimeoutError(f"page never showed {needles}; it showed: {text[:1500]!r}")

    def click(self, label: str, within: str = "body") -> None:
        """Click what shows exactly ``label`` inside ``within`` (a CSS selector: ``main`` is the
        page's content, beside the sidebar, which may name the open experiment too): a link or
        button first, else the innermost such element, as a person aims at a word; LookupError
        where nothing does."""
        found = self.evaluate(
            f"(() => {{ const label = {json.dumps(label)};"
            f" const scope = document.querySelector({json.dumps(within)});"
            " if (!scope) return false;"
            " const all = Array.from(scope.querySelectorAll('*'))"
            "   .filter(e => e.textContent.trim() === label);"
            " const hit = all.find(e => e.matches('a[href], button, [role=button]'))"
            "   || all.find(e => e.childElementCount === 0);"
            " if (!hit) return false; hit.click(); return true; })()"
        )
        if not found:
            raise LookupError(f"nothing in {within} shows {label!r}")

    def location(self) -> str:
        return str(self.evaluate("location.href"))

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))


@contextmanager
def open_page(width: int = 1400, height: int = 900, timeout_s: float = 60.0) -> Iterator[Page]:
    """A fresh headless Chromium (its own profile, so no state from an earlier run) and its tab."""
    binary = chromium()
    if binary is None:
        raise FileNotFoundError("no chromium on PATH (apt-get install chromium)")
    # Chromium's helpers (renderer, crash handler) can still be writing to the profile for a
    # moment after the browser exits: its whole process group is ended below, and a file one of
    # them left behind in that moment must not fail the test that used the page.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                # one process for the page and its frames, so a sandboxed frame (the UI shows an
                # HTML artifact in one) is in the frame tree, where it can be read
                "--disable-site-isolation-trials",
                "--disable-features=IsolateOrigins,site-per-process",
                f"--window-size={width},{height}",
                f"--user-data-dir={profile}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            endpoint = _endpoint(proc, timeout_s)
            port = urlsplit(endpoint).port
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                targets = json.load(r)
            tab = next(t for t in targets if t.get("type") == "page")
            # no Origin header: Chromium refuses WebSockets from origins it was not told to allow
            ws = websocket.create_connection(
                tab["webSocketDebuggerUrl"], timeout=timeout_s, suppress_origin=True
            )
            try:
                page = Page(ws)
                page.call("Page.enable")
                page.call(
                    "Emulation.setDeviceMetricsOverride",
                    width=width,
                    height=height,
                    deviceScaleFactor=1,
                    mobile=False,
                )
                yield page
            finally:
                ws.close()
        finally:
            _end_group(proc)


def _end_group(proc: subprocess.Popen[str]) -> None:
    """End the browser and every helper it started (its process group): asked first, then
    killed, so none is still writing to the profile as it is removed."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):  # a hung browser, helpers that outlived it
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _endpoint(proc: subprocess.Popen[str], timeout_s: float) -> str:
    """The browser's DevTools address, from the line it prints on stderr at start."""
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout_s
    seen: list[str] = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        found = LISTENING.search(line)
        if found:  # keep reading what it prints, so a full pipe never stalls the browser
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return found.group(1)
    raise RuntimeError("chromium did not start: " + "".join(seen)[-1500:])


# -- MLflow's UI -------------------------------------------------------------------------------

# MLflow 3.17's UI opens every experiment in the view its sidebar switch (GenAI | Model training)
# last chose, GenAI by default, whatever the experiment's ``mlflow.experimentKind``; this query
# parameter opens the training view. It is part of the address the demo prints.
TRAINING_VIEW = "?workflowType=machine_learning"


def experiment_url(base: str, experiment_id: str) -> str:
    return f"{base}/#/experiments/{experiment_id}{TRAINING_VIEW}"


def run_url(base: str, experiment_id: str, run_id: str, tab: str = "") -> str:
    """A run's page; ``tab`` e.g. ``artifacts/fingerprint/diff/x.html`` opens that artifact."""
    suffix = f"/{tab}" if tab else ""
    return f"{base}/#/experiments/{experiment_id}/runs/{run_id}{suffix}{TRAINING_VIEW}"


def show_columns(
    page: Page, base: str, experiment_id: str, columns: list[str], search: str = ""
) -> None:
    """Make the runs table of ``experiment_id`` show these tag columns, wide enough to read, and
    ``search`` in its search box (what a user picks under "Columns" and types, which the UI keeps
    in localStorage), and keep the assistant panel closed."""
    page.goto(f"{base}/health")  # any page of the UI's origin, to reach its localStorage
    page.wait_for("OK", timeout_s=30, settle_s=0)
    keys = [f"tags.`{c}`" for c in columns]
    state = {
        "selectedColumns": keys,
        "columnOrder": keys,
        "columnWidths": {k: 7 * len(c) + 30 for k, c in zip(keys, columns, strict=True)},
        "searchFilter": search,
    }
    key = f'MLflowLocalStorage-1.1-ExperimentPage-["{experiment_id}"]-ReactComponentState'
    page.evaluate(
        f"localStorage.setItem({json.dumps(key)}, {json.dumps(json.dumps(state))});"
        "localStorage.setItem('mlflow.assistant.panelOpen_v1', 'false');"
        "localStorage.setItem('mlflow.assistant.fab.autoOpenedOnFirstLoad_v1', 'true');"
    )
