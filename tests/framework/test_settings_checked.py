"""Settings and configs are checked where they are read: every ``OAR_*`` variable through ``framework.settings``
(one line naming it), thread counts clamped to the cores (one warning), YAML within bounds (an alias bomb is one
line, not a MemoryError), and NaN or an infinity where a finite number is required is one line naming the key."""
import os
import shutil
import subprocess

import pytest

from framework import settings, threadpool, yamlload
from framework.config import ConfigError, check_type, load_config
from framework.ranges import COUNT, POSITIVE, check_range

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OAR = shutil.which("oar")
BOMB = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
    f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))


def oar(*args, home, env=None):
    """``oar ARGS`` in a subprocess with ``OAR_HOME=home``: (exit status, stdout, stderr)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("OAR_") and k not in threadpool.THREAD_VARIABLES}
    full.update(OAR_HOME=str(home), **(env or {}))
    result = subprocess.run([OAR, *args], capture_output=True, text=True, env=full, cwd=ROOT, timeout=300)
    return result.returncode, result.stdout, result.stderr


def one_error(stderr):
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("oar: error: ") and "Traceback" not in stderr, stderr
    return lines[0]


# ---- through the command ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["0", "abc", "-3"])
def test_a_bad_thread_count_is_one_line_naming_the_variable(tmp_path, value):
    sentence = tmp_path / "one.txt"
    sentence.write_text("这部电影很好看\n", encoding="utf-8")
    code, out, err = oar("run", "senta_bow", "--input_file", str(sentence), home=tmp_path,
                         env={"OAR_NUM_THREADS": value})
    assert code == 1 and out == ""
    assert one_error(err) == f"oar: error: OAR_NUM_THREADS must be a positive integer, got {value!r}"


def test_a_bad_kernel_choice_is_one_line_naming_the_variable(tmp_path):
    code, _, err = oar("warmup", home=tmp_path, env={"OAR_KERNELS": "bogus"})
    assert code == 1
    assert one_error(err) == "oar: error: OAR_KERNELS must be one of numba, numpy, got 'bogus'"


@pytest.mark.parametrize("args", [("warmup",), ("run", "senta_lstm", "--input_text", "好评")])
def test_a_bad_gemm_provider_is_one_line_naming_the_variable(tmp_path, args):
    code, out, err = oar(*args, home=tmp_path, env={"OAR_GEMM_PROVIDER": "blis"})
    assert code == 1 and out == ""
    assert one_error(err) == "oar: error: OAR_GEMM_PROVIDER must be one of auto, mkl, numpy, got 'blis'"


@pytest.mark.parametrize("variable, value, message", [
    ("OAR_KERNELS", "bogus", "OAR_KERNELS must be one of numba, numpy, got 'bogus'"),
    ("OAR_GEMM_PROVIDER", "blis", "OAR_GEMM_PROVIDER must be one of auto, mkl, numpy, got 'blis'"),
    ("OMP_NUM_THREADS", "two", "OMP_NUM_THREADS must be a positive integer, got 'two'"),
    ("OAR_PROGRESS", "maybe", "OAR_PROGRESS must be one of 1, true, yes, on, 0, false, no, off, got 'maybe'"),
    ("OAR_NETWORK_TIMEOUT", "soon", "OAR_NETWORK_TIMEOUT='soon': give the seconds a network connect or read "
                                    "may take, a number > 0"),
    ("OAR_DIST_TIMEOUT", "-1", "OAR_DIST_TIMEOUT must be a number of at least 0, got '-1'")])
def test_a_bad_setting_stops_any_command_at_its_start(tmp_path, variable, value, message):
    code, out, err = oar("run", "senta_bow", "--input_text", "好评", home=tmp_path, env={variable: value})
    assert code == 1 and out == ""
    assert one_error(err) == f"oar: error: {message}"


def test_a_bad_debug_flag_is_one_line(tmp_path):
    code, _, err = oar("list", home=tmp_path, env={"OAR_DEBUG": "maybe"})
    assert code == 1 and "OAR_DEBUG must be one of 1, true" in one_error(err)


def test_too_many_threads_for_onnx_runtime_are_clamped_with_one_warning(tmp_path):
    sentence = tmp_path / "one.txt"
    sentence.write_text("这部电影很好看\n", encoding="utf-8")
    code, out, err = oar("run", "senta_bow", "--runtime", "onnxruntime", "--input_file", str(sentence),
                         home=tmp_path, env={"OAR_NUM_THREADS": "9999"})
    assert code == 0 and out.split("\t")[0] == "positive"
    warnings = [line for line in err.splitlines() if "OAR_NUM_THREADS=9999" in line]
    assert warnings == [f"oar: warning: OAR_NUM_THREADS=9999 asks for more threads than the "
                        f"{threadpool.available_cores()} cores this process may run on; using "
                        f"{threadpool.available_cores()}"]


def test_a_yaml_alias_bomb_is_one_line_naming_the_file(tmp_path):
    config = tmp_path / "bomb.yaml"
    config.write_text(BOMB, encoding="utf-8")
    code, _, err = oar("train", "-c", str(config), home=tmp_path)
    assert code == 1
    assert one_error(err) == (f"oar: error: bad YAML in {config}: the document expands to more than "
                              f"{yamlload.MAX_NODES:,} values through its aliases")


@pytest.mark.parametrize("override, key", [("optimizer.learning_rate=.nan", "learning_rate"),
                                           ("train.grad_clip=.inf", "grad_clip")])
def test_nan_or_inf_where_a_finite_number_is_needed_is_one_line_naming_the_key(tmp_path, override, key):
    code, _, err = oar("train", "-c", "configs/_test/tiny.yaml", "-o", override, "--output_dir",
                       str(tmp_path / "run"), home=tmp_path)
    line = one_error(err)
    assert code == 1 and f"'{key}'" in line and "finite number" in line
    assert not (tmp_path / "run" / "last.npz").exists()


# ---- the readers ------------------------------------------------------------------------------------------------

def test_the_readers_check_and_name_the_variable(monkeypatch):
    monkeypatch.setenv("OAR_X", " 7 ")
    assert settings.env_int("OAR_X") == 7 and settings.env_text("OAR_X") == "7"
    monkeypatch.setenv("OAR_X", "nan")
    with pytest.raises(settings.SettingError, match=r"^OAR_X must be a positive number, got 'nan'$"):
        settings.env_float("OAR_X", positive=True)
    monkeypatch.setenv("OAR_X", "1,2,x")
    with pytest.raises(settings.SettingError, match="OAR_X must be a comma-separated list of positive integers"):
        settings.env_counts("OAR_X")
    monkeypatch.setenv("OAR_X", "OFF")
    assert settings.env_flag("OAR_X", True) is False
    monkeypatch.setenv("OAR_X", "  ")
    assert settings.env_int("OAR_X", 5) == 5 and settings.env_choice("OAR_X", ("a", "b"), "a") == "a"
    monkeypatch.delenv("OAR_X")
    assert settings.env_counts("OAR_X", [1, 2]) == [1, 2] and settings.env_list("OAR_X") == []


def test_a_setting_error_raised_inside_an_op_stays_itself(monkeypatch):
    import numpy
    import framework
    monkeypatch.setenv("OAR_KERNELS", "bogus")
    gru = framework.nn.GRU(3, 4)
    with pytest.raises(settings.SettingError, match="^OAR_KERNELS must be one of numba, numpy, got 'bogus'$"):
        gru(framework.to_tensor(numpy.zeros((2, 3, 3), numpy.float32)))


def test_a_thread_count_above_the_cores_is_clamped(monkeypatch):
    monkeypatch.setenv("OAR_NUM_THREADS", str(threadpool.available_cores() + 5))
    with pytest.warns(RuntimeWarning, match="asks for more threads than"):
        assert threadpool.requested_threads() == threadpool.available_cores()
    monkeypatch.setenv("OAR_NUM_THREADS", "1")
    assert threadpool.requested_threads() == 1
    monkeypatch.delenv("OAR_NUM_THREADS")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert threadpool.requested_threads() is None


def test_yaml_bounds(tmp_path):
    with pytest.raises(yamlload.YamlLimitError, match="expands to more than"):
        yamlload.safe_load(BOMB)
    with pytest.raises(yamlload.YamlLimitError, match="recursive"):
        yamlload.safe_load("a: &x [1, *x]\n")
    with pytest.raises(yamlload.YamlLimitError, match="larger than"):
        yamlload.safe_load("a: " + "x" * (yamlload.MAX_BYTES + 1))
    assert yamlload.safe_load("a: &x [1, 2]\nb: *x\n") == {"a": [1, 2], "b": [1, 2]}
    big = tmp_path / "big.yaml"
    big.write_text("# padding\n" * (yamlload.MAX_BYTES // 10 + 1), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad YAML in .*big.yaml: the document is larger than 8 MiB"):
        load_config(str(big))
    flow = "{" + ", ".join(line.replace(": ", ": ", 1) for line in BOMB.splitlines()) + "}"
    with pytest.raises(ConfigError, match="override 'a=.*bad YAML value: the document expands"):
        load_config("configs/_test/tiny.yaml", overrides=["a=" + flow])

def test_ranges_and_types_refuse_nan_and_inf():
    with pytest.raises(ConfigError, match=r"^'hidden' must be a finite number at least 1, got inf \(here\)$"):
        check_range(float("inf"), COUNT, "'hidden'", "here")
    with pytest.raises(ConfigError, match="must be a finite number positive, got nan"):
        check_range([0.1, float("nan")], POSITIVE, "'learning_rate'", "here")
    with pytest.raises(ConfigError, match=r"^'margin' in here must be a finite number, got -inf$"):
        check_type(float("-inf"), float, "margin", "here")
    assert check_range(2, COUNT, "x", "here") == 2 and check_type(0.5, float, "x", "here") == 0.5
