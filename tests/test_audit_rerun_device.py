"""The audit's re-run of a module moved in place between the script's blocks (seen on the H200).

`net = net.cuda()` after a CPU loop moves the same nn.Module object: when the audit re-ran the CPU block after
the script, its recorded CPU input met CUDA weights ("Input type (torch.FloatTensor) and weight type
(torch.cuda.FloatTensor) should be the same"), the whole re-run stopped, and the correction said "not re-run
(--no-rerun, or the script ended past --timeout)", neither of which had happened. On this CPU-only machine the
other device is torch's `meta` device: a CPU module called with meta inputs fails the same way.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def test_a_module_moved_in_place_is_re_run_on_its_recorded_inputs_device():
    from whichdevice.audit import child
    from whichdevice.frameworks.torch import audit

    net = torch.nn.Conv2d(3, 8, 3)  # its weights on the CPU, as the script left them
    x_other = torch.randn(4, 3, 8, 8, device="meta")  # the block's recorded input, on another device
    pairs = child._Pairs(None, 0.0, audit, lambda out: None)  # type: ignore[arg-type]
    seconds = pairs._call_k(audit._item(torch, "k@META:0", net, (x_other,), False, 1), 2)  # failed before
    assert seconds >= 0 and next(net.parameters()).device.type == "meta"


def test_a_failed_re_measurement_is_the_pairs_reason_not_no_rerun():
    from whichdevice.audit import rules

    reason = "re-measurement failed: RuntimeError: Input type (torch.FloatTensor) and weight type"
    state = {"rerun_skipped": [{"block": None, "function": None, "requested": None, "reason": reason}]}

    class M:  # the two timed blocks of a CPU-vs-GPU script
        def __init__(self, i, s):
            self.id, self.seconds = i, s

    a, b = M(0, 0.004), M(1, 0.137)
    orig = rules.comparisons
    try:
        rules.comparisons = lambda ms: [(a, b)]
        (c,) = rules.correct(state, [a, b])
    finally:
        rules.comparisons = orig
    assert reason in c.note and "--no-rerun" not in c.note
