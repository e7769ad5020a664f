"""Every way the user's --model / --data file can be wrong -> one line naming the problem, exit 2."""

import pytest
from conftest import run_cli

from whichdevice.frameworks.common import usermodel as userfile
from whichdevice.frameworks.common.usermodel import UserFileError, UserFunction

GOOD = """
import keras
def build():
    return keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, activation="softmax")])
def helper():
    return 1
def boom():
    raise RuntimeError("disk on fire")
def not_dataset():
    return [1, 2, 3]
"""


@pytest.fixture
def model_file(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(GOOD)
    return f


def _check(path, fn, shape=(8,), classes=4, data=None):
    return userfile.check(
        UserFunction(path, fn, "--model"), shape, classes, UserFunction(path, data, "--data") if data else None
    )


CASES = [
    ("helper", (8,), 4, None, "--model", "helper() returned int, not a Keras model"),
    ("nope", (8,), 4, None, "--model", "'m.py' has no function 'nope' (it defines: boom, build, helper, not_dataset)"),
    ("boom", (8,), 4, None, "--model", "boom() raised RuntimeError: disk on fire"),
    ("build", (5,), 4, None, "--input-shape", "the model rejects input of shape (5,)"),
    ("build", (8,), 7, None, "--classes", "7 classes, but the model outputs 4 values per sample"),
    ("build", (8,), 4, "not_dataset", "--data", "not_dataset() returned list, not a tf.data.Dataset"),
]


@pytest.mark.tf
@pytest.mark.parametrize("fn, shape, classes, data, argument, problem", CASES)
def test_check_names_the_problem(model_file, fn, shape, classes, data, argument, problem):
    with pytest.raises(UserFileError) as e:
        _check(model_file, fn, shape, classes, data)
    assert e.value.argument == argument
    assert problem in e.value.problem


@pytest.mark.tf
def test_check_accepts_a_good_model(model_file):
    facts = _check(model_file, "build")
    assert facts["ok"] and facts["output_shape"] == [4] and facts["input_shape"] == [8]
    assert _check(model_file, "build", shape=None)["input_shape"] == [8]  # declared input used


def test_syntax_error_is_found_without_tensorflow(tmp_path):
    f = tmp_path / "bad.py"
    f.write_text("def build(:\n    pass\n")
    with pytest.raises(UserFileError) as e:
        userfile.load_function(f, "build", "--model")
    assert "'bad.py' has a syntax error at line 1" in e.value.problem


@pytest.mark.tf
@pytest.mark.parametrize(
    "text, args, message",
    [
        ("def build(:\n", ["--input-shape", "8"], "--model: 'm.py' has a syntax error at line 1"),
        (GOOD, ["--input-shape", "3", "--classes", "4"], "--input-shape: the model rejects input of shape (3,)"),
    ],
)
def test_cli_preflight_is_one_line_exit_2_before_any_measurement(tmp_path, capsys, text, args, message):
    f = tmp_path / "m.py"
    f.write_text(text)
    out_dir = tmp_path / "out"
    code, out, err = run_cli(["train", "--model", f"{f}:build", *args, "--out", str(out_dir)], capsys)
    assert code == 2, err
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and message in lines[0], err
    assert "Looking for devices" not in err  # refused before discovery / measurement
    assert not out_dir.exists()


def test_missing_file_is_refused_in_the_parent(tmp_path, capsys):
    code, _, err = run_cli(["train", "--model", f"{tmp_path}/absent.py:build"], capsys)
    assert code == 2 and "no such file" in err


def test_a_keras_layer_error_is_reduced_to_the_line_that_says_what_is_wrong():
    # Keras 3.15's text for a wrong input shape: a wrapper line, ANSI bold, the tensor's values.
    e = ValueError(
        "Exception encountered when calling Sequential.call().\n\n\x1b[1mInvalid input shape for input "
        "[[[0.63 0.26]\n  [0.85 0.03]]] with name 'keras_tensor' and path ''. Expected shape (None, 8), "
        "but input has incompatible shape (2, 2, 4)\x1b[0m\n\nArguments received by Sequential.call():"
    )
    assert userfile._exc_line(e) == ("ValueError: Expected shape (None, 8), but input has incompatible shape (2, 2, 4)")
