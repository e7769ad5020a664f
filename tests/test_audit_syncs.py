"""The calls after which the host has waited for the device (each framework's ``HOST_SYNCS``), one check
per entry: the source scan of a region that did not run here (``audit/static.py``) finds each, and the
per-op hook of a PyTorch run counts each as a wait; what does not wait (metadata, an add, a move to the
GPU) is not counted. A new entry with no example here fails ``test_every_entry_has_an_example``."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from whichdevice.audit import causes, static
from whichdevice.frameworks.common.audit import SYNC_FORMS, dummy_state, terms
from whichdevice.present.auditwords import findings as said

# One line per entry (its ``written``), run inside a timed region on CUDA tensors x, m, y.
TORCH_LINES = {
    ".item()": "v = y.sum().item()",
    ".tolist()": "v = y.tolist()",
    ".numpy()": "v = y.cpu().numpy()",
    ".cpu()": "v = y.cpu()",
    ".to('cpu')": "v = y.to('cpu')",
    "float(t) / int(t) / bool(t)": "v = float(y.sum())",
    "print(t) / str(t) / repr(t) / format(t)": "print(y.view(-1)[0])",
    "f'{t}'": "s = f'{y}'",
    "torch.cuda.synchronize()": "torch.cuda.synchronize()",
    **{f"torch.linalg.{n}": f"v = torch.linalg.{n}(x)" for n in ("inv", "cholesky", "eig", "eigh", "eigvals")},
    **{f"torch.linalg.{n}": f"v = torch.linalg.{n}(x)" for n in ("eigvalsh", "ldl_factor", "lu_factor")},
    **{f"torch.linalg.{n}": f"v = torch.linalg.{n}(x)" for n in ("matrix_rank", "pinv", "svdvals")},
    "torch.linalg.solve": "v = torch.linalg.solve(x, m)",
    "torch.gesv / torch.solve (the older names of torch.linalg.solve)": "v = torch.gesv(m, x)",
    "torch.nonzero / torch.argwhere": "v = torch.nonzero(y)",
    "torch.unique": "v = y.unique()",
    "torch.masked_select": "v = torch.masked_select(y, m > 0)",
    "torch.repeat_interleave (no output_size)": "v = torch.repeat_interleave(y, 2)",
    "x[mask] (boolean-mask indexing)": "v = y[y > 0]",
}
JAX_LINES = {
    ".block_until_ready() / jax.block_until_ready(x)": "y.block_until_ready()",
    "np.asarray(x) / np.array(x)": "v = np.asarray(y)",
    "jax.device_get(x)": "v = jax.device_get(y)",
    ".item()": "v = y.sum().item()",
    ".tolist()": "v = y.tolist()",
    "float(x) / int(x) / bool(x)": "v = float(y.sum())",
    "print(x) / str(x) / repr(x) / format(x)": "print(y)",
    "f'{x}'": "s = f'{y:}'",
}
TF_LINES = {
    ".numpy()": "v = y.numpy()",
    "float(t) / int(t) / bool(t)": "v = int(y[0, 0])",
    "print(t) / str(t) / repr(t) / format(t)": "s = str(y)",
    "f'{t}'": "s = f'{y}'",
    "tf.test.experimental.sync_devices()": "tf.test.experimental.sync_devices()",
}
LINES = {"torch": TORCH_LINES, "jax": JAX_LINES, "tensorflow": TF_LINES}
# Inside the same region, none of these waits for the device.
NOT_WAITING = [
    "v = y + 1",
    "print(y.shape)",
    "print(f'{y.dtype} on {y.device}')",
    "v = y.to('cuda')",
    "v = y[0]",
    "print('done', len(x))",
    "v = y.size(0) * 2",
]


def _script(line: str) -> str:
    """A region on CUDA tensors (the CUDA names the scan follows) whose middle line is ``line``."""
    return textwrap.dedent(
        """\
        import time
        import numpy as np
        import torch
        x = torch.rand(30, 30).cuda()
        m = torch.rand(30, 30).cuda()
        t0 = time.time()
        y = x @ m
        {line}
        print(time.time() - t0)
        """
    ).format(line=line)


def test_every_entry_has_an_example():
    for fw, lines in LINES.items():
        table = terms(fw).HOST_SYNCS
        assert {s.written for s in table} == set(lines), fw
        assert all(s.form in SYNC_FORMS and s.why and s.waits_for in ("value", "queue") for s in table), fw


@pytest.mark.parametrize(("fw", "written"), [(fw, w) for fw, lines in LINES.items() for w in lines])
def test_the_source_scan_finds_each_entry_as_a_wait(fw, written):
    (r,) = static.scan(_script(LINES[fw][written]), terms(fw).HOST_SYNCS)
    assert r.waits, (fw, written)
    assert written in [w for _, w, _ in r.waits_on], r.waits_on
    assert all(line == 8 for line, _, _ in r.waits_on)


@pytest.mark.parametrize("line", NOT_WAITING)
def test_what_does_not_wait_is_not_a_wait(line):
    for fw in LINES:
        (r,) = static.scan(_script(line), terms(fw).HOST_SYNCS)
        assert not r.waits, (fw, line, r.waits_on)


def test_a_value_computed_from_cuda_tensors_is_on_cuda_when_printed():
    """A printed conv output: r = conv2d(s, d) of CUDA tensors is a CUDA tensor, and printing one of its
    values waits for the conv; printing a clock difference or a host value does not."""
    src = textwrap.dedent(
        """\
        import time
        import torch
        import torch.nn.functional as F
        s = torch.rand(8, 4, 1, 20).cuda()
        d = torch.rand(4, 1, 5, 3).cuda()
        t = time.time()
        r = F.conv2d(s, d, padding=(4, 1), groups=4)
        h = r.cpu()
        print(r.view(-1)[0])
        print(time.time() - t)
        t = time.time()
        r = F.conv2d(s, d, padding=(4, 1), groups=4)
        print(h[0], time.time())
        print(time.time() - t)
        """
    )
    first, second = static.scan(src, terms("torch").HOST_SYNCS)
    assert [w for _, w, _ in first.waits_on] == [".cpu()", "print(t) / str(t) / repr(t) / format(t)"]
    assert not second.waits and second.warmed  # h is on the host; conv2d ran before it


def _stopped(src: str) -> dict:
    return {
        "reads": [],
        "functions": {},
        "first_runs": [],
        "loops": [],
        "op_cost": {},
        "physical_devices": {},
        "framework": "torch",
        "script_source": src,
        "exception": {"type": "AssertionError", "line": 4, "message": "Torch not compiled with CUDA enabled"},
    }


def test_a_printed_cuda_value_is_never_told_it_times_the_launch():
    """A region that prints a CUDA tensor's value waits for it: the finding says so (and that its first
    call's set-up is inside), never "nothing in it waits for the GPU"."""
    (f,) = said(causes.rule_latent_from_source(_stopped(_script("print(y.view(-1)[0])")), [], []))
    assert "nothing in it waits" not in f.explanation
    assert "line 8 waits for the GPU" in f.explanation and "first call's one-time set-up" in f.explanation


def test_a_loop_of_syncing_solves_pays_a_round_trip_per_iteration():
    """Ten torch.linalg.solve calls, warmed up: each waits (its docstring says it synchronizes), so the
    loop's time grows with its iterations; ten adds only queue and do not wait."""
    src = textwrap.dedent(
        """\
        import time
        import torch
        x = torch.rand(30, 30).cuda()
        y = torch.rand(30, 1).cuda()
        w = torch.linalg.solve(x, y)
        start = time.time()
        for i in range(10):
            w = torch.linalg.solve(x, y)
        print(time.time() - start)
        start = time.time()
        for i in range(10):
            w = torch.add(y, x)
        print(time.time() - start)
        """
    )
    solve, add = said(causes.rule_latent_from_source(_stopped(src), [], []))
    assert "each of its 10 iterations waits for the GPU at line 8 (torch.linalg.solve" in solve.explanation
    assert "nothing in it waits" not in solve.explanation and "first call" not in solve.explanation
    assert "nothing in it waits for the GPU" in add.explanation


def test_a_warmed_up_region_that_waits_is_not_a_finding():
    src = _script("v = y.sum().item()").replace("t0 = time.time()", "v = (x @ m).sum().item()\nt0 = time.time()")
    assert causes.rule_latent_from_source(_stopped(src), [], []) == []


# ---------------------------------------------------------------- the per-op hook of a PyTorch run

# What the per-op hook must count as a wait, run on CPU tensors (the same names reach it on CUDA ones).
TORCH_RUNTIME = {
    ".item()": lambda torch, y, m: y.sum().item(),
    ".tolist()": lambda torch, y, m: y.tolist(),
    ".numpy()": lambda torch, y, m: y.numpy(),
    "float(t) / int(t) / bool(t)": lambda torch, y, m: float(y.sum()),
    "print(t) / str(t) / repr(t) / format(t)": lambda torch, y, m: repr(y),
    "f'{t}'": lambda torch, y, m: f"{y}",
    "torch.linalg.solve": lambda torch, y, m: torch.linalg.solve(y, m),
    "torch.linalg.inv": lambda torch, y, m: torch.linalg.inv(y),
    "torch.linalg.cholesky": lambda torch, y, m: torch.linalg.cholesky(y @ y.T + torch.eye(4)),
    "torch.nonzero / torch.argwhere": lambda torch, y, m: torch.nonzero(y),
    "torch.unique": lambda torch, y, m: torch.unique(y),
    "torch.masked_select": lambda torch, y, m: torch.masked_select(y, y > 0),
    "torch.repeat_interleave (no output_size)": lambda torch, y, m: torch.repeat_interleave(y, 2),
    "x[mask] (boolean-mask indexing)": lambda torch, y, m: y[y > 0],
}


@pytest.mark.parametrize("written", sorted(TORCH_RUNTIME))
def test_the_torch_hook_counts_each_entry_as_a_wait(written):
    torch = pytest.importorskip("torch")
    from whichdevice.frameworks.torch import audit as torch_audit

    assert written in {s.written for s in torch_audit.HOST_SYNCS}
    y, m = torch.rand(4, 4) + 0.5, torch.rand(4, 1)
    st = dummy_state()
    with torch_audit.make_mode(torch, st):
        before = st.c["syncs"]
        TORCH_RUNTIME[written](torch, y, m)
        assert st.c["syncs"] > before, written
        assert st.c["last_sync"] == st.seq  # nothing queued after the wait


def test_the_torch_hook_does_not_count_what_does_not_wait():
    torch = pytest.importorskip("torch")
    from whichdevice.frameworks.torch import audit as torch_audit

    y = torch.rand(4, 4)
    st = dummy_state()
    with torch_audit.make_mode(torch, st):
        _ = y + 1, y[0], y[:, 1:], y.shape, y.sum(), torch.mm(y, y)
    assert st.c["syncs"] == 0 and st.c["eager_ops"] >= 5


def test_the_jax_hooks_count_printing_and_host_arrays_as_waits():
    """In a child (the hooks patch jax.Array for the process): print(x), f"{x}", np.asarray(x),
    jax.device_get(x), .item() and float(x) each count one wait."""
    pytest.importorskip("jax")
    code = textwrap.dedent(
        """\
        import io, contextlib
        import numpy as np
        import jax, jax.numpy as jnp
        from whichdevice.frameworks.common.audit import dummy_state
        from whichdevice.frameworks.jax import audit as jax_audit
        st = dummy_state()
        st.script = "<string>"
        jax_audit.hook_host_reads(jax, st)
        x = jnp.ones((3, 3))
        out = []
        for name, f in [("print", lambda: print(x)), ("fstring", lambda: f"{x}"), ("asarray", lambda: np.asarray(x)),
                        ("device_get", lambda: jax.device_get(x)), ("item", lambda: x[0, 0].item()),
                        ("float", lambda: float(x[0, 0])), ("str", lambda: str(x))]:
            before = st.c["syncs"]
            with contextlib.redirect_stdout(io.StringIO()):
                f()
            out.append(f"{name}={st.c['syncs'] > before}")
        print(" ".join(out))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[-7:] == [
        f"{n}=True" for n in ("print", "fstring", "asarray", "device_get", "item", "float", "str")
    ], proc.stdout


def test_a_jax_script_beside_torch_cuda_code_reads_torch_waits_too():
    """A script whose audit is JAX's (it imported JAX) and whose stopped region runs torch CUDA code: a
    torch.cuda.synchronize() there is a wait (every framework's table is read, the script's own first)."""
    src = _script("torch.cuda.synchronize()").replace("import numpy as np", "import jax")
    state = {**_stopped(src), "framework": "jax"}
    (f,) = said(causes.rule_latent_from_source(state, [], []))
    assert "nothing in it waits" not in f.explanation and "torch.cuda.synchronize()" in f.explanation
