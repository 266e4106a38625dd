"""A reader's JupyterLab leaves the tree clean (issue 21 item 7): every notebook opened and saved the way JupyterLab
saves it — through a real Jupyter server's contents API, with the metadata JupyterLab puts in (the kernel's
`kernelspec` with its display name "Python 3 (ipykernel)", and `language_info` from the kernel) — is stored byte
for byte as it was. nbdev's save hook does it (`jupyter_hooks = true` in pyproject.toml; `nbdev-install-hooks`
registers it in ~/.jupyter, or `jupyter lab --ContentsManager.pre_save_hook=nbdev.clean.clean_jupyter nbs/`). Without
the hook the same save changes the files: the control case below."""
import json, os, shutil, socket, subprocess, sys, time, urllib.request
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("jupyter_server")
TOKEN = "mint-test"


def _free_port() -> int:
    with socket.socket() as s: s.bind(("127.0.0.1", 0)); return s.getsockname()[1]


def _call(port, method, path, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r: return json.loads(r.read() or b"null")


def _server(root: Path, tmp: Path, hook: bool):
    "A Jupyter server on `root` with its own config, data and runtime folders (the user's ~/.jupyter is not read)."
    port = _free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp / "cfg"), "JUPYTER_DATA_DIR": str(tmp / "data"),
           "JUPYTER_RUNTIME_DIR": str(tmp / "rt"), "JUPYTER_NO_CONFIG": "1"}
    args = [sys.executable, "-m", "jupyter_server", f"--ServerApp.port={port}", f"--IdentityProvider.token={TOKEN}",
            "--ServerApp.open_browser=False", f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0", "--allow-root"]
    if hook: args.append("--ContentsManager.pre_save_hook=nbdev.clean.clean_jupyter")
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(1200):
        try: _call(port, "GET", "/api/status"); return proc, port
        except OSError: time.sleep(0.1)
    proc.kill(); raise RuntimeError("the Jupyter server did not start")


def _jupyterlab_metadata(port) -> dict:
    "What JupyterLab writes into a notebook's metadata when a python3 kernel is attached."
    from ipykernel.ipkernel import IPythonKernel
    spec = _call(port, "GET", "/api/kernelspecs")["kernelspecs"]["python3"]["spec"]
    return {"kernelspec": {"display_name": spec["display_name"], "language": spec["language"], "name": "python3"},
            "language_info": dict(IPythonKernel.language_info, version=".".join(map(str, sys.version_info[:3])))}


def _open_and_save_all(tmp_path, hook: bool) -> dict:
    root = tmp_path / "clone"
    (root / "nbs").mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", root)
    nbs = sorted(p for p in (ROOT / "nbs").glob("*.ipynb") if not p.name.startswith("_"))
    for p in nbs: shutil.copy(p, root / "nbs" / p.name)
    proc, port = _server(root, tmp_path, hook)
    try:
        meta = _jupyterlab_metadata(port)
        for p in nbs:
            model = _call(port, "GET", f"/api/contents/nbs/{p.name}?content=1&type=notebook")
            model["content"]["metadata"].update(meta)                      # what opening it in JupyterLab adds
            _call(port, "PUT", f"/api/contents/nbs/{p.name}", {"type": "notebook", "format": "json", "content": model["content"]})
    finally:
        proc.terminate(); proc.wait(timeout=30)
    return {p.name: (root / "nbs" / p.name).read_bytes() != p.read_bytes() for p in nbs}


def test_open_and_save_in_jupyter_leaves_every_notebook_unchanged(tmp_path):
    changed = _open_and_save_all(tmp_path, hook=True)
    assert len(changed) > 20 and not any(changed.values()), [n for n, c in changed.items() if c]


def test_without_the_save_hook_the_same_save_changes_them(tmp_path):
    "The control: the test above can fail; this is the `git status` noise a reader got."
    changed = _open_and_save_all(tmp_path, hook=False)
    assert all(changed.values())


def test_pyproject_switches_the_hook_on():
    assert "jupyter_hooks = true" in (ROOT / "pyproject.toml").read_text()
