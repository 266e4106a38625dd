"""A reader's Run All in a real JupyterLab, in a real browser, saves the chapter byte for byte as it is committed (issue 21).

`jupyter lab` (JupyterLab 4 with its widget manager, jupyterlab_widgets; nbdev's save hook on, as the README says)
serves a copy of nbs/, and headless Chromium, driven over its DevTools protocol as tests/test_serve.py drives the chat
page, does what a reader does: opens a chapter (its kernel starts fresh), runs JupyterLab's own commands — Run All
(`notebook:run-all-cells`), waits for the last cell, Save (`docmanager:save`) — then, in the same tab, Restart Kernel
and Run All (`notebook:restart-run-all`, its "Restart Kernel?" dialog answered with a click) and Save again. Each saved
file must be the committed one, byte for byte: the stored outputs are what a reader's Run All gives, widget outputs
included. `mint.core.stable_widget_ids` gives each widget the model id `mint-widget-N` (as a uuid5), so the widget-view
outputs (`model_id`) and the notebook's widget state are the same on every Run All; JupyterLab's widget manager takes
those ids as they come, and after a kernel restart the models that the tab still holds under the same ids are replaced
by the new kernel's (the slider of chapter 00, moved by a key press, is answered by the restarted kernel).

The kernel gets a reader's environment: no `NUMBA_ENABLE_CUDASIM` (each chapter's import of mint switches the
simulator on where there is no CUDA driver; on a machine with a driver it is set to 1, since the committed outputs are
those of a machine without a GPU) and no `MPLBACKEND`. Found here first (2026-12-03): chapter 12 imported numba before
mint, so in a reader's kernel the simulator stayed off and a cell failed with `CudaSupportError`, and chapter 00 showed
other values; tools/run_notebooks.py had hidden both, its kernels inheriting the variable from its own import of mint.

By default JupyterLab does not write widget state (the widget manager's `saveState` setting is off): a save keeps the
state the file had. With `saveState` on, it writes the state of the models it holds with their default values left
out (`get_state(drop_defaults=True)`), while the committed state (nbclient's, tools/run_notebooks.py) has every value:
the same models and ids and values, fewer keys, so that file is not byte-identical; `test_save_state_on_...` checks
that this is the only difference and that it too is the same on every Run All.

Skipped without Chromium (/usr/bin/chromium), JupyterLab, jupyterlab_widgets or websocket-client. In the test line:
chapters 36a and 00 (45-60 s on 2 busy cores: JupyterLab and Chromium start ~9 s, each chapter is opened, run twice and
saved twice). Marked slow (--runslow): chapter 12 (~85 s) and the `saveState` check (its own JupyterLab, ~35 s)."""
import contextlib, json, os, shutil, socket, subprocess, sys, time, urllib.request
from pathlib import Path
import pytest
from chromium_cdp import CHROMIUM, start_chromium, stop  # tests/ is on sys.path under pytest

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "mint-lab-test"
WIDGET_VIEW, WIDGET_STATE = "application/vnd.jupyter.widget-view+json", "application/vnd.jupyter.widget-state+json"
for mod in ("jupyterlab", "jupyterlab_widgets", "ipywidgets"): pytest.importorskip(mod)
pytest.importorskip("websocket", reason="websocket-client (a jupyter-server dependency) drives Chromium's DevTools protocol")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (Debian: apt-get install chromium)")


def _free_port() -> int:
    with socket.socket() as s: s.bind(("127.0.0.1", 0)); return s.getsockname()[1]


def _reader_env(tmp: Path) -> dict:
    "The environment of a reader's `jupyter lab`: own Jupyter folders (not the user's), mint from this checkout, nothing set for numba."
    from mint.core import cuda_driver_found
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "MPLBACKEND")}
    if cuda_driver_found(): env["NUMBA_ENABLE_CUDASIM"] = "1"   # the committed outputs are a GPU-less machine's
    env.update(JUPYTER_CONFIG_DIR=str(tmp / "cfg"), JUPYTER_DATA_DIR=str(tmp / "data"), JUPYTER_RUNTIME_DIR=str(tmp / "rt"),
               JUPYTER_NO_CONFIG="1", JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(tmp / "ws"),
               PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return env


class Lab:
    "`jupyter lab` on a copy of nbs/ and headless Chromium on it; `run_all_and_save(name, restart)` -> the saved bytes."
    def __init__(self, tmp: Path, save_state: bool = False):
        self.tmp, self.root, self.stack = tmp, tmp / "clone", contextlib.ExitStack()
        (self.root / "nbs").mkdir(parents=True)
        shutil.copy(ROOT / "pyproject.toml", self.root)                    # nbdev's settings, for the save hook
        for p in (ROOT / "nbs").glob("*.ipynb"): shutil.copy(p, self.root / "nbs" / p.name)
        if save_state:                                                      # Settings > Jupyter Widgets > Save widget state
            d = tmp / "settings" / "@jupyter-widgets" / "jupyterlab-manager"; d.mkdir(parents=True)
            (d / "plugin.jupyterlab-settings").write_text(json.dumps({"saveState": True}))

    def __enter__(self):
        try: self._start()
        except BaseException: self.stack.close(); raise
        return self

    def __exit__(self, *exc): self.stack.close()

    def _proc(self, args, **kw):
        p = subprocess.Popen(args, **kw)
        self.stack.callback(stop, p, 30)
        return p

    def _start(self):
        self.port = port = _free_port()
        log = self.stack.enter_context(open(self.tmp / "jupyterlab.log", "w"))
        self._proc([sys.executable, "-m", "jupyterlab", f"--ServerApp.port={port}", f"--IdentityProvider.token={TOKEN}",
                    "--ServerApp.open_browser=False", f"--ServerApp.root_dir={self.root}", "--ServerApp.port_retries=0",
                    "--allow-root", "--LabApp.expose_app_in_browser=True",     # window.jupyterapp: the app's commands
                    "--ContentsManager.pre_save_hook=nbdev.clean.clean_jupyter"],
                   env=_reader_env(self.tmp), stdout=log, stderr=subprocess.STDOUT)
        for _ in range(1200):
            try: urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={TOKEN}", timeout=5); break
            except OSError: time.sleep(0.1)
        else: raise RuntimeError(f"jupyter lab did not start: {(self.tmp / 'jupyterlab.log').read_text()[-2000:]}")
        chrome, self.dt = start_chromium(self.tmp / "profile", "1280,900", timeout=120)
        self.stack.callback(stop, chrome, 30)
        dt = self.dt
        dt.call("Emulation.setFocusEmulationEnabled", enabled=True)         # headless has no focused window: the current notebook follows focus
        dt.call("Page.navigate", url=f"http://127.0.0.1:{port}/lab?token={TOKEN}")
        dt.wait("!!(window.jupyterapp && jupyterapp.started)", 120, "JupyterLab to start")
        dt.js("jupyterapp.restored")

    def command(self, cmd, args=None, accept_dialog=False, timeout=300):
        "Run a JupyterLab command as the menu does, clicking the dialog's accept button if one is expected; its result or an error."
        dt = self.dt
        dt.js(f"window.__r = null; jupyterapp.commands.execute({json.dumps(cmd)}, {json.dumps(args or {})})"
              ".then(r => window.__r = {ok: true}, e => window.__r = {error: String(e)}); 0")
        if accept_dialog:
            dt.wait("!!document.querySelector('.jp-Dialog .jp-Dialog-button.jp-mod-accept')", 60, f"{cmd}'s dialog")
            dt.js("document.querySelector('.jp-Dialog .jp-Dialog-button.jp-mod-accept').click(); 0")
        r = dt.wait("window.__r", timeout, cmd)
        assert "error" not in r, f"{cmd}: {r['error']}"

    def open(self, name):
        "Open nbs/NAME in a tab, as a double click in the file browser does, and wait for its fresh kernel."
        P = "window.__panel"
        self.dt.js(f"window.__panel = null; jupyterapp.commands.execute('docmanager:open', {{path: 'nbs/{name}'}})"
                   ".then(w => window.__panel = w); 0")
        self.dt.wait(f"!!({P} && {P}.context.isReady && {P}.sessionContext.session && {P}.sessionContext.session.kernel"
                     f" && {P}.sessionContext.session.kernel.status === 'idle')", 120, f"{name} and its kernel")
        assert self.dt.js(f"jupyterapp.shell.currentWidget === {P}"), "the notebook is not JupyterLab's current widget"

    def run_all_and_save(self, name, restart=False) -> bytes:
        "Run All (after a kernel restart, in the same tab, if `restart`), wait for every cell, Save: the file's bytes."
        if restart: self.command("notebook:restart-run-all", accept_dialog=True, timeout=600)
        else: self.command("notebook:run-all-cells", timeout=600)
        P = "window.__panel"
        self.dt.wait(f"{P}.sessionContext.session.kernel.status === 'idle'", 120, "the kernel to be idle")
        missing = self.dt.js(f"{P}.content.widgets.map((c, i) => c.model.type === 'code' && c.model.executionCount === null ? i : -1)"
                             ".filter(i => i >= 0)")
        if missing:
            errors = self.dt.js(f"{P}.content.widgets.flatMap((c, i) => c.model.type !== 'code' ? [] : c.model.outputs.toJSON()"
                                ".filter(o => o.output_type === 'error').map(o => `cell ${i}: ${o.ename}: ${o.evalue}`))")
            raise AssertionError(f"{name}: cells {missing} did not run; errors: {errors}")
        self.command("docmanager:save", timeout=120)
        self.dt.wait(f"!{P}.context.model.dirty", 30, "the save")
        return (self.root / "nbs" / name).read_bytes()

    def close(self):
        "Shut the tab's kernel down and close the tab."
        self.dt.js("window.__panel.sessionContext.shutdown().then(() => window.__panel.dispose())")


def differences(saved: bytes, committed: bytes) -> list:
    "What differs between two notebook files, in a few words each (for the assertion message)."
    a, b = json.loads(saved), json.loads(committed)
    out = [f"cell {i}: {json.dumps(x.get('outputs'))[:300]} != committed {json.dumps(y.get('outputs'))[:300]}"
           for i, (x, y) in enumerate(zip(a["cells"], b["cells"])) if x != y]
    wa, wb = (n["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state", {}) for n in (a, b))
    if set(wa) != set(wb): out.append(f"widget ids: {sorted(set(wa) - set(wb))} saved, {sorted(set(wb) - set(wa))} committed")
    out += [f"widget {k} ({wb[k]['model_name']}) differs" for k in set(wa) & set(wb) if wa[k] != wb[k]]
    if {k: v for k, v in a["metadata"].items() if k != "widgets"} != {k: v for k, v in b["metadata"].items() if k != "widgets"}:
        out.append(f"metadata: {a['metadata'].keys()} vs {b['metadata'].keys()}")
    return out or ["the same JSON, different bytes"]


def widget_views(nb: bytes) -> list:
    "The model ids of the widget outputs stored in a notebook file."
    return [o["data"][WIDGET_VIEW]["model_id"] for c in json.loads(nb)["cells"] for o in c.get("outputs", []) if WIDGET_VIEW in o.get("data", {})]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with Lab(tmp_path_factory.mktemp("jupyterlab")) as lab: yield lab


@pytest.mark.parametrize("name", ["36a_controls.ipynb", "00_core.ipynb",
                                  pytest.param("12_model.ipynb", marks=pytest.mark.slow)])
def test_run_all_and_save_gives_the_committed_file(lab, name, tmp_path):
    "Fresh kernel: Run All, Save; then Restart Kernel and Run All, Save, in the same tab: both files are the committed one."
    committed = (ROOT / "nbs" / name).read_bytes()
    assert json.loads(committed)["metadata"].get("widgets"), f"{name} stores no widget state: pick a chapter with widgets"
    lab.open(name)
    try:
        for restart in (False, True):
            saved = lab.run_all_and_save(name, restart)
            (tmp_path / f"{'restart-' if restart else ''}{name}").write_bytes(saved)    # to look at when it fails
            assert saved == committed, (f"{name} after {'Restart Kernel and ' if restart else ''}Run All and Save differs "
                                        f"from the committed file:\n" + "\n".join(differences(saved, committed)))
        if name == "00_core.ipynb": slider_answers_the_restarted_kernel(lab)
    finally:
        lab.close()


def slider_answers_the_restarted_kernel(lab):
    """Chapter 00's widget panel (`widget_panel`, an IntSlider `n` that prints `n = ...` into an Output widget): after
    the restart, the view of the stored model id renders and a key press on the slider reaches the new kernel."""
    dt, P = lab.dt, "window.__panel"
    i = dt.js(f"{P}.content.widgets.findIndex(c => c.model.type === 'code' && c.model.sharedModel.getSource().includes('widget_panel(lambda n'))")
    assert i >= 0
    C = f"{P}.content.widgets[{i}]"
    dt.js(f"{P}.content.scrollToItem({i}, 'center')")
    dt.wait(f"!!{C}.node.querySelector('.noUi-handle') && {C}.node.innerText.includes('n = 3')", 60, "the widget panel to render")
    assert not dt.js(f"{C}.node.innerText.includes('Error displaying widget')")
    dt.js(f"{C}.node.querySelector('.noUi-handle').focus(); 0")
    for kind in ("keyDown", "keyUp"):
        dt.call("Input.dispatchKeyEvent", type=kind, key="ArrowRight", code="ArrowRight", windowsVirtualKeyCode=39)
    dt.wait(f"{C}.node.innerText.includes('n = 4')", 60, "the restarted kernel to draw n = 4")


@pytest.mark.slow
def test_save_state_on_stores_the_same_widgets_without_defaults(tmp_path_factory, tmp_path):
    """With the widget manager's `saveState` on, a save writes JupyterLab's own widget state: the committed models,
    ids and values with the defaults left out; the rest of the file is the committed one, and it is the same after
    Restart Kernel and Run All in the same tab."""
    name = "00_core.ipynb"
    committed = (ROOT / "nbs" / name).read_bytes()
    with Lab(tmp_path_factory.mktemp("jupyterlab-save-state"), save_state=True) as lab:
        lab.open(name)
        try:
            first, again = lab.run_all_and_save(name), lab.run_all_and_save(name, restart=True)
        finally:
            lab.close()
    (tmp_path / name).write_bytes(again)
    assert again == first, differences(again, first)                      # the same on every Run All
    saved, want = json.loads(first), json.loads(committed)
    ws, wc = (n["metadata"].pop("widgets")[WIDGET_STATE] for n in (saved, want))
    assert saved == want, differences(first, committed)                    # outputs and other metadata: the committed ones
    assert widget_views(first) == widget_views(committed) and set(ws["state"]) == set(wc["state"])
    for k, m in ws["state"].items():                                       # JupyterLab's state: the committed one less defaults
        c = wc["state"][k]
        assert {f: m[f] for f in m if f != "state"} == {f: c[f] for f in c if f != "state"}
        assert all(c["state"][f] == v for f, v in m["state"].items()), (k, m, c)
    assert sum(map(len, (m["state"] for m in ws["state"].values()))) < sum(map(len, (m["state"] for m in wc["state"].values())))
