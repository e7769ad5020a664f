"""Seen on the public-code check (benchmarks/public_check_39.md): the JAX docs'
"Asynchronous dispatch" pattern, jnp.dot(x, x) + 3 timed on the CPU and on the default device
without block_until_ready(). The audit records no JAX eager op one by one, so it saw no work and
no host read in either interval, yet its table said "synced: yes" for both: a guess, and here a
wrong one (JAX dispatches asynchronously, the CPU too). Such a row now reads "—", with a note
saying why. tests/data/audit_jax/eager_jnp_no_block.json is the real record (the 2-core VM)."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from whichdevice.audit.record import AuditRecord
from whichdevice.present.pages.audit import render

RECORD = Path(__file__).parent / "data" / "audit_jax" / "eager_jnp_no_block.json"


def _screen(record: AuditRecord) -> str:
    buf = io.StringIO()
    render(Console(file=buf, width=400, color_system=None), record)
    return buf.getvalue()


def test_an_interval_with_no_jax_work_seen_is_not_called_synced():
    record = AuditRecord.model_validate_json(RECORD.read_text())
    assert [m.line for m in record.measurements] == [16, 21] and not any(m.syncs for m in record.measurements)
    rows = [ln for ln in _screen(record).splitlines() if ln.startswith("│") and "ms" in ln]
    assert len(rows) == 2 and all(r.rstrip(" │").endswith("—") for r in rows), rows
    assert "synced —: line 16, 21: no JAX work and no host read seen" in _screen(record)


def test_a_jax_interval_with_a_host_read_still_reads_synced():
    """The same rows with block_until_ready seen (syncs) are synced: only the unseen ones change."""
    record = AuditRecord.model_validate_json(RECORD.read_text())
    synced = record.model_copy(
        update={"measurements": [m.model_copy(update={"syncs": 20}) for m in record.measurements]}
    )
    rows = [ln for ln in _screen(synced).splitlines() if ln.startswith("│") and "ms" in ln]
    assert len(rows) == 2 and all(r.rstrip(" │").endswith("yes") for r in rows), rows
    assert "synced —" not in _screen(synced)
