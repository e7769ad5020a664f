"""The optional parts' static check: each framework module listed in ``frameworks.PARTS``
assigned to its protocol (``contracts.OPTIONAL``), so that mypy checks the modules' signatures
against what the workloads call (PEP 544: a module implements a protocol structurally).

Never imported: it exists for mypy (everything below is under ``TYPE_CHECKING``). At run time
``frameworks.part`` checks the same protocols when it loads a part; tests/test_contracts.py
checks that this file names every part ``PARTS`` lists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from whichdevice.frameworks import contracts
    from whichdevice.frameworks.jax import calibration as jax_calibration
    from whichdevice.frameworks.keras_jax import calibration as keras_jax_calibration
    from whichdevice.frameworks.keras_jax import pipeline as keras_jax_pipeline
    from whichdevice.frameworks.keras_jax import scale as keras_jax_scale
    from whichdevice.frameworks.keras_jax import training as keras_jax_training
    from whichdevice.frameworks.keras_torch import calibration as keras_torch_calibration
    from whichdevice.frameworks.keras_torch import pipeline as keras_torch_pipeline
    from whichdevice.frameworks.keras_torch import training as keras_torch_training
    from whichdevice.frameworks.tensorflow import calibration as tensorflow_calibration
    from whichdevice.frameworks.tensorflow import pipeline as tensorflow_pipeline
    from whichdevice.frameworks.tensorflow import placement_log as tensorflow_placement_log
    from whichdevice.frameworks.tensorflow import precision as tensorflow_precision
    from whichdevice.frameworks.tensorflow import profiler as tensorflow_profiler
    from whichdevice.frameworks.tensorflow import scale as tensorflow_scale
    from whichdevice.frameworks.tensorflow import training as tensorflow_training
    from whichdevice.frameworks.torch import calibration as torch_calibration
    from whichdevice.frameworks.torch import pipeline as torch_pipeline
    from whichdevice.frameworks.torch import scale as torch_scale
    from whichdevice.frameworks.torch import training as torch_training
    from whichdevice.frameworks.tensorflow import pitfalls as tensorflow_pitfalls
    from whichdevice.frameworks.keras_jax import optrace as keras_jax_optrace
    from whichdevice.frameworks.keras_jax import pitfalls as keras_jax_pitfalls
    from whichdevice.frameworks.keras_torch import optrace as keras_torch_optrace
    from whichdevice.frameworks.keras_torch import pitfalls as keras_torch_pitfalls
    from whichdevice.frameworks.torch import optrace as torch_optrace
    from whichdevice.frameworks.torch import pitfalls as torch_pitfalls
    from whichdevice.frameworks.tensorflow import audit as tensorflow_audit
    from whichdevice.frameworks.torch import audit as torch_audit
    from whichdevice.frameworks.jax import audit as jax_audit

    # one line a part (a calibration module with probes: two lines): mypy names the member that differs
    _tensorflow_training: contracts.Training = tensorflow_training
    _tensorflow_calibration: contracts.Calibration = tensorflow_calibration
    _tensorflow_probes: contracts.CalibrationProbes = tensorflow_calibration
    _tensorflow_scale: contracts.Scale = tensorflow_scale
    _tensorflow_pipeline: contracts.Pipeline = tensorflow_pipeline
    _tensorflow_profiler: contracts.Profiler = tensorflow_profiler
    _tensorflow_precision: contracts.Precision = tensorflow_precision
    _tensorflow_placement_log: contracts.PlacementLog = tensorflow_placement_log
    _keras_jax_training: contracts.Training = keras_jax_training
    _keras_jax_calibration: contracts.Calibration = keras_jax_calibration
    _keras_jax_probes: contracts.CalibrationProbes = keras_jax_calibration
    _jax_probes: contracts.CalibrationProbes = jax_calibration
    _keras_jax_scale: contracts.Scale = keras_jax_scale
    _keras_jax_pipeline: contracts.Pipeline = keras_jax_pipeline
    _keras_torch_pipeline: contracts.Pipeline = keras_torch_pipeline
    _keras_torch_training: contracts.Training = keras_torch_training
    _keras_torch_calibration: contracts.Calibration = keras_torch_calibration
    _keras_torch_probes: contracts.CalibrationProbes = keras_torch_calibration
    _torch_training: contracts.Training = torch_training
    _torch_calibration: contracts.Calibration = torch_calibration
    _torch_probes: contracts.CalibrationProbes = torch_calibration
    _torch_scale: contracts.Scale = torch_scale
    _torch_pipeline: contracts.Pipeline = torch_pipeline
    # the placement command's op trace, the pitfalls command's mistakes
    _tensorflow_pitfalls: contracts.Pitfalls = tensorflow_pitfalls
    _keras_jax_optrace: contracts.OpTrace = keras_jax_optrace
    _keras_jax_pitfalls: contracts.Pitfalls = keras_jax_pitfalls
    _keras_torch_optrace: contracts.OpTrace = keras_torch_optrace
    _keras_torch_pitfalls: contracts.Pitfalls = keras_torch_pitfalls
    _torch_optrace: contracts.OpTrace = torch_optrace
    _torch_pitfalls: contracts.Pitfalls = torch_pitfalls
    # whichdevice audit's hooks, costs and re-run (contracts.Audit)
    _tensorflow_audit: contracts.Audit = tensorflow_audit
    _torch_audit: contracts.Audit = torch_audit
    _jax_audit: contracts.Audit = jax_audit
    # the script captures: measure/scriptchild.py installs them by module name
    from whichdevice.frameworks.jax import capture as jax_capture
    from whichdevice.frameworks.keras_jax import capture as keras_jax_capture
    from whichdevice.frameworks.keras_torch import capture as keras_torch_capture
    from whichdevice.frameworks.tensorflow import capture as tensorflow_capture
    from whichdevice.frameworks.torch import capture as torch_capture

    _tensorflow_capture: contracts.Capture = tensorflow_capture
    _keras_jax_capture: contracts.Capture = keras_jax_capture
    _keras_torch_capture: contracts.Capture = keras_torch_capture
    _torch_capture: contracts.Capture = torch_capture
    _jax_capture: contracts.Capture = jax_capture
    # the fixes each script capture applies, read by the plan in the parent (workloads/scriptplan)
    from whichdevice.frameworks.jax import scriptfixes as jax_scriptfixes
    from whichdevice.frameworks.keras_jax import scriptfixes as keras_jax_scriptfixes
    from whichdevice.frameworks.keras_torch import scriptfixes as keras_torch_scriptfixes
    from whichdevice.frameworks.tensorflow import scriptfixes as tensorflow_scriptfixes
    from whichdevice.frameworks.torch import scriptfixes as torch_scriptfixes

    _tensorflow_scriptfixes: contracts.ScriptFixes = tensorflow_scriptfixes
    _keras_jax_scriptfixes: contracts.ScriptFixes = keras_jax_scriptfixes
    _keras_torch_scriptfixes: contracts.ScriptFixes = keras_torch_scriptfixes
    _torch_scriptfixes: contracts.ScriptFixes = torch_scriptfixes
    _jax_scriptfixes: contracts.ScriptFixes = jax_scriptfixes
