"""The README's commands run as written, and its highlights are the ones in docs/RESULTS.md.

Every fenced ``bash`` block of the README is read as a user would type it, in
order: a line is a command (a trailing ``\\`` continues it; `` # …`` after it
is a remark), and the ``# …`` lines right under a command, with no blank line
between, are what it prints (``#`` alone: an empty line). Checks:

- every file a command reads is in the repository or made by an earlier README
  command (``--output_dir`` of a training, ``--out``/``--output`` of any
  command, the folder ``tools/make_shapes.py`` or ``-m venv`` writes);
- the commands run, in README order, through ``bash`` in a scratch folder that
  links the repository's tracked files (so what they write stays out of the
  repository), with the installed ``oar`` console script and this
  interpreter first on ``PATH``: exit status 0, and stdout as the README shows
  it where it shows it (numbers within 0.01, everything else exactly). A
  command that installs, needs a GPU, benchmarks or fetches a large file is
  skipped with the reason (the own-data trainings run, every one: their
  outputs show what the README promises, and they start from shipped weights
  that a retraining may change); a command that needs the output of one that
  did not run is skipped;
- the fenced ``python`` blocks run too, after the commands above them;
- the highlight tables of the README are those of docs/RESULTS.md, their
  numbers are in the tables of RESULTS.md, and every zoo card's test metric
  is in the zoo highlights.
"""
import decimal
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.abspath(os.path.dirname(os.path.dirname(__file__)))
README = os.path.join(ROOT, "README.md")
RESULTS = os.path.join(ROOT, "docs", "RESULTS.md")
BIN = os.path.dirname(sys.executable)
OAR = shutil.which("oar", path=BIN) or shutil.which("oar")
HIGHLIGHTS = ("zoo", "speed")

# (pattern, reason): commands not run here
SKIPPED = [
    (r"\bpip install\b|-m venv\b", "installs the package (this test runs in the installed one)"),
    (r"--device gpu|gpu_suite\.sh", "needs a GPU (tools/gpu_suite.sh runs the GPU checks)"),
    (r"\boar bench\b", "a benchmark: its figures are timings, not asserted (minutes)"),
]
OFFICIAL_LAC = r"\boar run lac\b"           # fetches the official model (127 MB) unless it is cached


# ---------------------------------------------------------------------------------------------- parsing

def fenced_blocks(text):
    """``[(language, first line number, [lines])]`` of the fenced blocks of ``text``."""
    blocks, current = [], None
    for number, line in enumerate(text.splitlines(), start=1):
        if current is None and line.startswith("```") and len(line) > 3:
            current = (line[3:].strip(), number + 1, [])
        elif current is not None and line.startswith("```"):
            blocks.append(current)
            current = None
        elif current is not None:
            current[2].append(line)
    return blocks


def shell_words(command):
    """The words of a shell command line as bash passes them (quotes removed, ``$'…'`` escapes decoded),
    with ``|``, ``&&``, ``||`` and ``;`` as words of their own; a `` #`` outside quotes ends the line."""
    words, word, i, quoted = [], "", 0, False
    while i < len(command):
        c = command[i]
        if c == "$" and command[i + 1:i + 2] == "'":
            end = command.index("'", i + 2)
            word += command[i + 2:end].encode().decode("unicode_escape").encode("latin-1").decode()
            i, quoted = end + 1, True
        elif c in "'\"":
            end = command.index(c, i + 1)
            word += command[i + 1:end]
            i, quoted = end + 1, True
        elif c.isspace():
            if word or quoted:
                words.append(word)
            word, quoted, i = "", False, i + 1
        elif c == "#" and not word and not quoted:
            break
        elif command[i:i + 2] in ("&&", "||"):
            words += ([word] if word or quoted else []) + [command[i:i + 2]]
            word, quoted, i = "", False, i + 2
        elif c in "|;":
            words += ([word] if word or quoted else []) + [c]
            word, quoted, i = "", False, i + 1
        else:
            word += c
            i += 1
    if word or quoted:
        words.append(word)
    return words


def strip_remark(line):
    """``line`` without a trailing `` # …`` remark outside quotes."""
    i, quote = 0, None
    while i < len(line):
        c = line[i]
        if quote:
            if c == quote:
                quote = None
        elif c == "$" and line[i + 1:i + 2] == "'":
            quote, i = "'", i + 1
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
        i += 1
    return line.rstrip()


class Step:
    """One README item: a bash command (with the output it shows, or None) or a whole python block."""

    def __init__(self, kind, line, text, expected=None):
        self.kind, self.line, self.text, self.expected = kind, line, text, expected

    def __repr__(self):
        return f"README line {self.line}: {self.text[:60]}"


def readme_steps(text=None):
    """The README's bash commands and python blocks, in order."""
    steps = []
    for language, first, lines in fenced_blocks(text if text is not None else open(README, encoding="utf-8").read()):
        if language == "python":
            steps.append(Step("python", first, "\n".join(lines)))
            continue
        if language != "bash":
            continue
        last, blank_since, pending, pending_line = None, True, None, None
        for offset, line in enumerate(lines):
            stripped = line.strip()
            if pending is not None:                     # a continued command: backslash-newline becomes a space
                pending = pending[:-1].rstrip() + " " + stripped
                if not pending.endswith("\\"):
                    last = Step("bash", pending_line, strip_remark(pending))
                    steps.append(last)
                    pending = None
                continue
            if not stripped:
                blank_since = True
                continue
            if stripped.startswith("#"):
                if last is not None and not blank_since:
                    output = stripped[1:]
                    last.expected = (last.expected or []) + [output[1:] if output.startswith(" ") else output]
                continue
            blank_since = False
            if stripped.endswith("\\"):
                pending, pending_line = stripped, first + offset
                continue
            last = Step("bash", first + offset, strip_remark(stripped))
            steps.append(last)
    return steps


# ---------------------------------------------------------------------------------------------- files

PATH_LIKE = re.compile(r"^[\w.+-]+(/[\w.+<>-]+)+/?$|^[\w-]+\.(ya?ml|tsv|txt|mp4|png|jpg|npz|py|sh|json)$")
CREATES = ("--out", "--output")                     # any command: the value is made
RUN_CREATES = ("--output_dir",)                     # a training or oar compress: the value is made; inference reads it
TRAINING = (("oar", "train"), ("tools/train.py",), ("tools/finetune.py",))


def _commands(words):
    """Split words at ``|``, ``&&``, ``||`` and ``;``."""
    current = []
    for word in words:
        if word in ("|", "&&", "||", ";"):
            yield current
            current = []
        else:
            current.append(word)
    yield current


def _is_training(words):
    return (words[:2] == ["oar", "train"]) or any(w in ("tools/train.py", "tools/finetune.py") for w in words[:2])


def files_of(step):
    """``(read, made)``: the repository-relative paths a bash command reads and those it makes."""
    read, made = [], []
    for words in _commands(shell_words(step.text)):
        training = _is_training(words)
        makes_run = training or words[:2] == ["oar", "compress"]           # both write a run directory
        skip_next = False
        for i, word in enumerate(words):
            if skip_next:
                skip_next = False
                continue
            flag = words[i - 1] if i else ""
            value = word.split("=", 1)[1] if "=" in word and not word.startswith("-") else word
            if word in CREATES or (makes_run and word in RUN_CREATES):
                if i + 1 < len(words):
                    made.append(words[i + 1].rstrip("/"))
                skip_next = True
                continue
            if flag == "venv" or (i and words[i - 1].endswith("make_shapes.py")):
                made.append(word.rstrip("/"))
                continue
            if word.startswith("-") or not PATH_LIKE.match(value) or "://" in value:
                continue
            read.append(value.rstrip("/"))
        if training and "-c" in words and not any(w in RUN_CREATES for w in words):
            config = words[words.index("-c") + 1]
            made.append(os.path.join("outputs", os.path.splitext(os.path.basename(config))[0]))
    return read, made


def _made_by(path, made):
    return any(path == m or path.startswith(m + "/") for m in made)


def test_every_file_a_command_names_is_shipped_or_made_first():
    made, missing = [], []
    for step in readme_steps():
        if step.kind != "bash":
            continue
        read, makes = files_of(step)
        for path in read:
            if not (os.path.exists(os.path.join(ROOT, path)) or _made_by(path, made) or _made_by(path, makes)):
                missing.append(f"{step!r}: {path}")
        made += makes
    assert not missing, "README commands name files that are neither shipped nor made first:\n" + "\n".join(missing)


def test_the_parser_reads_commands_outputs_and_remarks():
    text = ("```bash\n# a remark\noar run x --input_text \"a b\" $'c\\td'   # a remark\n# out 1\n#\n\n"
            "# another remark\noar train -c configs/examples/x.yaml \\\n  --output_dir outputs/y\n```\n")
    first, second = readme_steps(text)
    assert first.text == "oar run x --input_text \"a b\" $'c\\td'" and first.expected == ["out 1", ""]
    assert shell_words(first.text) == ["oar", "run", "x", "--input_text", "a b", "c\td"]
    assert second.expected is None and files_of(second) == (["configs/examples/x.yaml"], ["outputs/y"])


# ---------------------------------------------------------------------------------------------- running

@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A scratch folder holding links to the repository's tracked top-level entries."""
    folder = tmp_path_factory.mktemp("readme")
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    names = ({p.split("/")[0] for p in tracked.stdout.splitlines()} if tracked.returncode == 0
             else {n for n in os.listdir(ROOT) if not n.startswith(".") and n != "outputs"})
    for name in sorted(names):
        if os.path.exists(os.path.join(ROOT, name)):
            os.symlink(os.path.join(ROOT, name), folder / name)
    return folder


_NUMBER = re.compile(r"-?\d+\.\d+(?:e-?\d+)?")


def same_output(line, expected):
    """``line`` reads as ``expected``: the same text, numbers with a fraction within 0.01."""
    got, want = _NUMBER.split(line), _NUMBER.split(expected)
    if got != want:
        return False
    return all(abs(float(a) - float(b)) <= 0.01 for a, b in zip(_NUMBER.findall(line), _NUMBER.findall(expected)))


def _official_lac_cached():
    home = os.environ.get("OAR_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "oar")
    return os.path.isdir(os.path.join(home, "LAC-2.1.2"))


STEPS = readme_steps()
OUTCOME = {}                     # step index -> "ran" once it ran and passed


def _why_not_run(index, step):
    """The reason ``step`` is not run here, or None."""
    for pattern, reason in SKIPPED:
        if re.search(pattern, step.text):
            return reason
    if re.search(OFFICIAL_LAC, step.text) and not _official_lac_cached():
        return "fetches the official LAC model (127 MB) and it is not cached"
    made = {}
    for earlier in range(index):
        if STEPS[earlier].kind == "bash":
            for path in files_of(STEPS[earlier])[1]:
                made[path] = earlier
    needs = files_of(step)[0] if step.kind == "bash" else re.findall(r"\"([\w.-]+/[\w./-]+)\"", step.text)
    for path in needs:
        creator = next((made[m] for m in made if path == m or path.startswith(m + "/")), None)
        if creator is not None and OUTCOME.get(creator) != "ran":
            return f"needs the output of {STEPS[creator]!r}, which did not run"
    return None


@pytest.mark.parametrize("index", range(len(STEPS)), ids=[f"line{s.line}" for s in STEPS])
def test_readme_step_runs_as_written(index, workspace):
    step = STEPS[index]
    reason = _why_not_run(index, step)
    if reason:
        pytest.skip(reason)
    assert OAR, "the oar console script is not installed (pip install -e .)"
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}
    command = ["bash", "-c", step.text] if step.kind == "bash" else [sys.executable, "-c", step.text]
    result = subprocess.run(command, cwd=workspace, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{step!r} exited with {result.returncode}:\n{result.stderr[-3000:]}"
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    if step.expected is not None:
        lines = result.stdout.splitlines()
        assert len(lines) == len(step.expected) and all(map(same_output, lines, step.expected)), \
            f"{step!r} printed\n{result.stdout}\nthe README shows\n" + "\n".join(step.expected)
    OUTCOME[index] = "ran"


# ---------------------------------------------------------------------------------------------- highlights

def marked_block(text, name):
    """The text between ``<!-- highlights:NAME -->`` and ``<!-- /highlights:NAME -->`` (None when absent)."""
    match = re.search(rf"<!-- highlights:{name} -->\n(.*?)<!-- /highlights:{name} -->", text, re.S)
    return match.group(1) if match else None


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize("name", HIGHLIGHTS)
def test_the_readme_highlights_are_those_of_results(name):
    ours, theirs = marked_block(_read(README), name), marked_block(_read(RESULTS), name)
    assert theirs is not None, f"docs/RESULTS.md has no highlights:{name} block"
    assert ours == theirs, f"README's highlights:{name} differ from docs/RESULTS.md's; copy the block from there"


def _half_up(text, places):
    return str(decimal.Decimal(text).quantize(decimal.Decimal(1).scaleb(-places), decimal.ROUND_HALF_UP))


@pytest.mark.parametrize("name", HIGHLIGHTS)
def test_highlight_numbers_are_in_the_results_tables(name):
    """Each number of a highlights block is in RESULTS.md outside the blocks (as written, or rounded to it)."""
    results = _read(RESULTS)
    rest = results
    for block_name in HIGHLIGHTS:
        rest = rest.replace(marked_block(results, block_name), "")
    numbers = set(re.findall(r"\d+(?:\.\d+)?", rest))
    missing = []
    for number in re.findall(r"\d+(?:\.\d+)?", marked_block(results, name)):
        places = len(number.split(".")[1]) if "." in number else 0
        if number not in numbers and not any(
                "." in n and len(n.split(".")[1]) > places and _half_up(n, places) == number for n in numbers):
            missing.append(number)
    assert not missing, f"highlights:{name} numbers not in docs/RESULTS.md's tables: {missing}"


HEADLINE = {"lexical_analysis": ("seg_f1", "pos_f1", "entity_f1"), "sentiment": ("acc",), "matching": ("acc",),
            "video": ("motion_top1", "shape_acc"), "detection": ("map",)}


def test_every_card_metric_is_in_the_zoo_highlights():
    with open(os.path.join(ROOT, "zoo", "catalog.yaml"), encoding="utf-8") as f:
        catalog = yaml.safe_load(f)
    block = marked_block(_read(RESULTS), "zoo")
    missing = []
    for entry in catalog:
        row = next((line for line in block.splitlines() if _names_card(line, entry["name"])), None)
        for key in HEADLINE.get(entry["task"], ()):
            value = entry.get("metrics", {}).get(key)
            if value is None or (entry["name"] == "lac" and key == "entity_f1"):
                continue
            # the card keeps 4 decimals, the tables 3 of the unrounded figure: 0.8425 may show as 0.842 or 0.843
            shown = [float(n) for n in re.findall(r"\d\.\d{3}\b", row or "")]
            if not any(abs(n - float(value)) <= 0.00051 for n in shown):
                missing.append(f"{entry['name']} {key} {value}")
    assert not missing, f"zoo cards whose test metrics the zoo highlights lack: {missing}"


def _names_card(row, name):
    """Whether a highlights row names the card ``name`` (`` `senta_bow` / `_cnn` `` and `` `simnet_{bow,cnn}_x` ``
    forms included)."""
    cell = row.split("|")[1] if row.startswith("|") else ""
    names = set(re.findall(r"`([\w{},]+)`", cell))
    expanded = set()
    for written in names:
        group = re.match(r"(\w*)\{([\w,]+)\}(\w*)", written)
        if group:
            expanded |= {group.group(1) + part + group.group(3) for part in group.group(2).split(",")}
        elif written.startswith("_"):
            expanded |= {n.rsplit("_", 1)[0] + written for n in names if not n.startswith("_")}
        else:
            expanded.add(written)
    return name in expanded
