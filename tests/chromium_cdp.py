"""Headless Chromium driven through the Chrome DevTools Protocol, for the tests that use a real browser (the chat page
of `mint serve` in tests/test_serve.py, JupyterLab in tests/test_jupyterlab_run_all.py): `CHROMIUM` (None when it is
not installed; Debian: apt-get install chromium), `start_chromium` and the `DevTools` client (websocket-client)."""
import json, os, shutil, subprocess, threading, time, urllib.request

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)


class DevTools:
    "A minimal DevTools Protocol client over one page target's websocket: `call(method, **params)`; events seen meanwhile gather in `events`."
    def __init__(self, ws_url, timeout=60):
        import websocket
        self.ws, self.n, self.events = websocket.create_connection(ws_url, timeout=timeout, suppress_origin=True), 0, []
    def call(self, method, **params):
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == self.n:
                if "error" in m: raise RuntimeError(f"{method}: {m['error']}")
                return m["result"]
            self.events.append(m)
    def js(self, expr):
        "The value of a JavaScript expression (a promise is awaited: end the expression with `; 0` not to wait for one)."
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r: raise RuntimeError(r["exceptionDetails"])
        return r["result"].get("value")
    def wait(self, expr, timeout=60, what=None, poll=0.05):
        "Poll `expr` until it is truthy (its value) or raise AssertionError after `timeout` seconds."
        deadline = time.time() + timeout
        while not (v := self.js(expr)):
            if time.time() > deadline: raise AssertionError(f"timed out after {timeout} s waiting for {what or expr}")
            time.sleep(poll)
        return v
    def key(self, key, code, vk, text=None):
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key=key, code=code, windowsVirtualKeyCode=vk,
                      **({"text": text} if text and kind == "keyDown" else {}))


def start_chromium(profile_dir, window="1000,640", timeout=60):
    "(process, DevTools on its blank page): headless Chromium with its own profile folder; the caller stops the process."
    proc = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                             "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
                             f"--user-data-dir={profile_dir}", "--remote-debugging-port=0", f"--window-size={window}",
                             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if "DevTools listening on" in line: break
        else: raise RuntimeError("Chromium did not start its DevTools endpoint")
        port = int(line.split("ws://")[1].split("/")[0].split(":")[1])
        threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()     # keep the pipe drained
        page = next(t for t in json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list")) if t["type"] == "page")
        return proc, DevTools(page["webSocketDebuggerUrl"], timeout)
    except BaseException:
        stop(proc); raise


def stop(proc, timeout=20):
    "Terminate a child process, killing it if it has not ended after `timeout` seconds."
    proc.terminate()
    try: proc.wait(timeout)
    except subprocess.TimeoutExpired: proc.kill(); proc.wait()
