"""Run the shell blocks of README.md and docs/ as a user would, and hold the page to its output.

Each page is one user session: its shell blocks run in order, in one folder, in a fresh
``bash``; the folder a block ``cd``-ed into and the variables it exported carry over to the
next block, as they would in a terminal.  The folder the page implies is a fresh one holding
the files of docs/examples (the user's project), except for README.md, which a user runs at
the root of a clone (a folder with the clone's pyproject.toml stands in); the project
folder also has an (empty) ``tests/``, where a user's own tests live.  Setting-up
commands (``python3 -m venv``, ``. .venv/bin/activate``, ``pip install``) are left out: the
test's own environment is the installed project.

A block's expectations come from the page:

* it must end with exit status 0, unless its marker says ``exit N``;
* when the next fenced block on the page is a ``text`` block (only prose between), every
  non-blank line the page shows must appear in what the block printed, in the same order
  (runs of blanks are one blank; the seconds in pytest's last line are not compared; a line
  ``...`` stands for lines left out).

A marker on the line before a ``text`` block (``illustration: WHAT``, naming the test that
pins it) says it is not the output of the command above it, e.g. a failure shown in prose.

A marker on the line before a block, ``<!-- docs-test: ... -->``, says more, ``;``-separated:

* ``skip: REASON``: not run (a paid endpoint with no loopback stand-in, a file that is not
  shipped, the project's own test command); the reason is required;
* ``test_NAME``: run by that test instead (it exists; tests/test_docs_complete.py checks);
* ``loopback``: the block runs against a local OpenAI/Anthropic-compatible server
  (tests/model_server.py) through ``OPENAI_BASE_URL``/``ANTHROPIC_BASE_URL``, with a
  dummy key in the environment;
* ``exit N``: the exit status the page shows;
* ``file NAME`` (on a block of any language): the page asks the user to save the block as
  NAME; it is written to the folder the session stands in at that point;
* ``python`` (on a Python block): the page means it to be run; it runs with the project's
  interpreter in the folder the session stands in;
* ``background``: a server the page starts (in another terminal, for the user); it runs in
  the background until the page ends or the next ``background`` block starts, and the next
  block waits until its port (the block's last number, or ``--port N``) accepts connections.
  The port is the page's (a file lock) while its server runs: another page that serves on
  the same port waits; a port that another process already answers on fails the block.

The user's own files that commands name (``--budget-rollouts=logs/x.jsonl``, ``--budget-pool``,
``--budget-queries``) stand in as the matching docs/examples file when the page has not made
them.  The project folder is a git repository (pages ``git add`` and ``git commit``).

A test may check more of a page's session than its shown output: ``run_page(page,
inspect=...)`` hands it the folder the session ended in and every block's outcome before the
folder goes (tests/test_docs_run.py's ``INSPECT``: the files a page's commands wrote, e.g.
its report).  So a page's own runs carry those checks, instead of another test running the
same commands again.  ``DOC_RUN_TIMES=1`` prints each block's wall and CPU time (the CPU of
the processes it ran) to stderr: where a page's time goes.

Every page starts from a fresh folder with an empty pytest cache: a page that reruns a suite
reads back what its own earlier blocks cached, as the user's folder would hold.  (A cache
made once per session and copied in was measured and left out: only the awareness suite's
generated rollouts make a rerun cheaper (about 8.7 s of CPU cold, 3.4 s warm), and the pages
that run its default environments are the first runs in a new folder, cold by design.)

``python tests/doc_run.py --update PAGE...`` runs the pages and rewrites each shown line
that no longer matches with the closest line of the real output (a review is still yours).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from filelock import FileLock

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"

FENCE = re.compile(r"^( *)```(\w*)[^\n]*\n(.*?)^ *```[ \t]*$", re.DOTALL | re.MULTILINE)
MARKER = re.compile(r"<!--\s*docs-test:\s*(.*?)\s*-->")
SHELL = ("bash", "sh", "console")
#: Setting-up commands a user runs once; the test's environment already is their result.
SETUP = re.compile(r"^\s*(python3? -m venv\b|\. \S*activate\b|source \S*activate\b|pip install\b)")
#: pytest's last line: its duration varies from run to run.
DURATION = re.compile(r"\bin \d+(?:\.\d+)?s\b(?: \(\d+:\d\d:\d\d\))?")
BLOCK_TIMEOUT_S = 900


@dataclass(frozen=True)
class Shown:
    """A ``text`` block: what the page says a command prints (its span in the page)."""

    body: str
    start: int
    end: int
    indent: str


@dataclass(frozen=True)
class ShellBlock:
    page: Path
    line: int
    script: str
    options: dict[str, str]
    shown: Shown | None

    @property
    def where(self) -> str:
        return f"{rel(self.page)}:{self.line}"

    @property
    def skip_reason(self) -> str | None:
        if "skip" in self.options:
            return self.options["skip"] or "no reason given"
        named = [key for key in self.options if key.startswith("test_")]
        return f"run by {named[0]}" if named else None

    @property
    def expected_exit(self) -> int:
        return int(self.options.get("exit", "0"))


@dataclass
class Outcome:
    block: ShellBlock
    status: int
    output: str
    problems: list[str] = field(default_factory=list)


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def parse_marker(text: str | None) -> dict[str, str]:
    options: dict[str, str] = {}
    for part in (text or "").split(";"):
        key, _, value = part.strip().partition(":") if ":" in part else (part.strip(), "", "")
        if key.startswith(("exit ", "file ")):
            key, value = key.split(maxsplit=1)
        if key:
            options[key.strip()] = value.strip()
    return options


def shell_blocks(page: Path) -> list[ShellBlock]:
    text = page.read_text(encoding="utf-8")
    matches = list(FENCE.finditer(text))
    found = []
    for index, match in enumerate(matches):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.search(before)
        options = parse_marker(marker and marker.group(1))
        if match.group(2) not in SHELL and not {"file", "python", "background"} & set(options):
            continue
        body = textwrap.dedent(match.group(3)) if match.group(1) else match.group(3)
        shown = None
        if index + 1 < len(matches) and matches[index + 1].group(2) == "text":
            following = matches[index + 1]
            between = text[match.end() : following.start()]
            if "```" not in between and not MARKER.search(between):
                content = following.group(3)
                indent = following.group(1)
                start = following.start(3)
                shown = Shown(textwrap.dedent(content), start, start + len(content), indent)
        line = text.count("\n", 0, match.start()) + 1
        found.append(ShellBlock(page, line, body, options, shown))
    return found


def runnable_script(script: str) -> str:
    """The block without its setting-up commands (each ``&&`` part checked)."""
    lines = []
    for line in script.replace("\\\n", " ").splitlines():
        parts = [part for part in line.split("&&") if not SETUP.match(part)]
        if parts:
            lines.append("&&".join(parts).strip())
    return "\n".join(lines) + "\n"


def normalize(line: str) -> str:
    line = " ".join(line.split())
    if DURATION.search(line):  # pytest's last line: its rule's width follows the duration's
        line = DURATION.sub("in <t>", line).strip("= ")
    return line


def missing_lines(shown: str, output: str) -> list[tuple[str, str | None]]:
    """Shown lines not found, in order, in the output; each with the closest output line."""
    actual = [normalize(line) for line in output.splitlines()]
    missing: list[tuple[str, str | None]] = []
    position = 0
    for raw in shown.splitlines():
        wanted = normalize(raw)
        if not wanted or wanted == "...":
            continue
        try:
            position = actual.index(wanted, position) + 1
        except ValueError:
            close = difflib.get_close_matches(wanted, actual, n=1, cutoff=0.5)
            missing.append((raw, close[0] if close else None))
    return missing


@contextmanager
def page_folder(page: Path) -> Iterator[Path]:
    """The folder a page's commands run in: the clone for README.md, else a fresh project
    holding the example files (the user's own files the pages name)."""
    with tempfile.TemporaryDirectory(prefix="doc-run-") as name:
        folder = Path(name) / "project"
        if page == ROOT / "README.md":
            # The root of a clone, as far as a run can tell: its pytest configuration
            # (pyproject.toml's section; conftest.py is loaded anyway, from above the suites
            # of this editable install), without writing into this checkout.
            (folder / "tests").mkdir(parents=True)
            shutil.copy(ROOT / "pyproject.toml", folder / "pyproject.toml")
        else:
            shutil.copytree(EXAMPLES, folder)
            (folder / "tests").mkdir()  # the project's own tests' folder, which pages name
        yield folder


def base_environment() -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "OPENAI_", "ANTHROPIC_", "COV_"))
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env |= {"GIT_AUTHOR_NAME": "Docs Reader", "GIT_AUTHOR_EMAIL": "reader@example.invalid"}
    env |= {"GIT_COMMITTER_NAME": "Docs Reader", "GIT_COMMITTER_EMAIL": "reader@example.invalid"}
    env["COLUMNS"] = "80"  # pytest's rules and headers as a terminal of 80 columns draws them
    # The pages' user installs pytest-budget (`pip install .`), not this project's dev extra:
    # hypothesis's pytest plugin (here for the project's own tests) is not theirs, and it
    # imports all of hypothesis at the end of every run (~1 s of CPU a command; the pages
    # run ~75), and pytest-benchmark's and platformdirs's (through inspect_ai) cost ~0.2 s
    # more.  A block that exports its own PYTEST_ADDOPTS replaces this.
    env["PYTEST_ADDOPTS"] = "-p no:hypothesispytest -p no:benchmark -p no:platformdirs"
    return env


LOCAL_BASE_URL = re.compile(r"https?://(?:localhost|127\.0\.0\.1):\d+/v1\b")
MODEL_NAME = re.compile(r"\b(?:openai|anthropic)[:/]([\w.\-]+)")


@contextmanager
def loopback_model(script: str) -> Iterator[dict[str, str]]:
    """A local model server that knows the models the block names."""
    sys.path.insert(0, str(ROOT))
    from tests.model_server import ModelServer

    models = tuple(dict.fromkeys(MODEL_NAME.findall(script))) or ("m",)
    with ModelServer(models=models) as server:  # any key: pages export placeholders
        yield {
            "OPENAI_BASE_URL": server.url,
            "ANTHROPIC_BASE_URL": server.url.removesuffix("/v1"),
            "OPENAI_API_KEY": "sk-docs-loopback",
            "ANTHROPIC_API_KEY": "sk-docs-loopback",
        }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_page(
    page: Path,
    only: Sequence[int] = (),
    inspect: Callable[[Path, list[Outcome]], None] | None = None,
) -> list[Outcome]:
    """Run the page's shell blocks in order (``only``: the lines of the blocks to check;
    earlier blocks still run, since later ones may depend on them).  ``inspect`` is called
    with the folder the session ended in and the outcomes, before the folder is removed
    (a test's further checks of the files the page made)."""
    outcomes = []
    with (
        page_folder(page) as folder,
        tempfile.TemporaryDirectory() as state_name,
        Background() as background,
    ):
        state = Path(state_name)
        subprocess.run(["git", "init", "-q", str(folder)], check=True)
        (state / "cwd").write_text(str(folder), encoding="utf-8")
        (state / "env").write_text("", encoding="utf-8")
        for block in shell_blocks(page):
            if block.skip_reason is not None:
                continue
            if only and block.line > max(only):
                break
            if "background" in block.options:
                background.start(block, state)
                continue
            started, cpu = time.monotonic(), _children_cpu()
            outcomes.append(run_block(block, state))
            if os.environ.get("DOC_RUN_TIMES"):  # where a page's time goes
                wall, cpu = time.monotonic() - started, _children_cpu() - cpu
                print(f"{block.where}: {wall:.1f} s wall, {cpu:.1f} s CPU", file=sys.stderr)
        if inspect is not None:
            inspect(Path((state / "cwd").read_text(encoding="utf-8").strip()), outcomes)
    return [o for o in outcomes if not only or o.block.line in only]


STAND_INS = {
    "--budget-rollouts": "rollouts_example.jsonl",
    "--budget-pool": "pool_example.jsonl",
    "--budget-queries": "queries_example.json",
}


def place_stand_ins(script: str, cwd: Path) -> None:
    for flag, example in STAND_INS.items():
        for value in re.findall(rf"{flag}=(\S+)", script):
            target = cwd / value
            if not target.exists() and not value.startswith(("/", "$")):
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(EXAMPLES / example, target)


class Background:
    """Servers a page starts for the commands after them (one at a time)."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None
        self.port_lock: FileLock | None = None

    def __enter__(self) -> Background:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self.process = None
        if self.port_lock is not None:
            self.port_lock.release()
            self.port_lock = None

    def start(self, block: ShellBlock, state: Path) -> None:
        self.stop()
        cwd = Path((state / "cwd").read_text(encoding="utf-8").strip())
        script = runnable_script(block.script).strip()
        port = int((re.findall(r"--port[ =](\d+)", script) or re.findall(r"(\d+)\s*$", script))[-1])
        # Pages name fixed ports (8000): two pages run by two xdist workers at once would
        # share one, and a page's block could talk to the other page's server.  The port is
        # this page's until its server stops.
        self.port_lock = FileLock(Path(tempfile.gettempdir()) / f"doc-run-port-{port}.lock")
        self.port_lock.acquire(timeout=BLOCK_TIMEOUT_S)
        with socket.socket() as probe:  # held by no page: a stray server would answer instead
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                raise RuntimeError(f"{block.where}: port {port} is taken by another process")
        self.process = subprocess.Popen(
            ["bash", "-c", f"exec {script}"],
            cwd=cwd,
            env=base_environment(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    return
            if self.process.poll() is not None:
                raise RuntimeError(f"{block.where}: the server exited ({self.process.returncode})")
            time.sleep(0.2)
        raise RuntimeError(f"{block.where}: nothing listens on port {port} after 60 s")


def run_block(block: ShellBlock, state: Path) -> Outcome:
    if "file" in block.options:  # "save this as FILE": written where the user stands
        cwd = Path((state / "cwd").read_text(encoding="utf-8").strip())
        (cwd / block.options["file"]).write_text(block.script, encoding="utf-8")
        return Outcome(block, 0, "")
    cwd = Path((state / "cwd").read_text(encoding="utf-8").strip())
    script = runnable_script(block.script)
    if "python" in block.options:
        (state / "block.py").write_text(block.script, encoding="utf-8")
        script = f'python "{state}/block.py"\n'
    place_stand_ins(script, cwd)
    prologue = (
        f'trap \'pwd > "{state}/cwd"; export -p > "{state}/env"\' EXIT\n'
        f'. "{state}/env"\ncd "$(cat "{state}/cwd")"\nset -e\n'
    )
    with ExitStack() as stack:
        env = base_environment()
        if "loopback" in block.options:
            env |= stack.enter_context(loopback_model(block.script))
            # A local server the page names (localhost:8000/v1) is the loopback one.
            script = LOCAL_BASE_URL.sub(env["OPENAI_BASE_URL"], script)
            # This block's server, not an earlier block's (its URL came back with the
            # session's saved exports).
            script = (
                "".join(
                    f"export {name}={env[name]}\n"
                    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
                )
                + script
            )
        try:
            result = subprocess.run(
                ["bash", "-c", prologue + script],
                env=env,
                capture_output=True,
                text=True,
                timeout=BLOCK_TIMEOUT_S,
                check=False,
            )
            status, output = result.returncode, result.stdout + result.stderr
        except subprocess.TimeoutExpired as exc:
            status, output = -1, f"timed out after {BLOCK_TIMEOUT_S} s: {exc}"
    outcome = Outcome(block, status, output)
    if status != block.expected_exit:
        outcome.problems.append(
            f"exit status {status}, the page implies {block.expected_exit}; output ends:\n"
            + "\n".join(output.splitlines()[-15:])
        )
    if block.shown is not None:
        for raw, close in missing_lines(block.shown.body, output):
            outcome.problems.append(f"shown but not printed: {raw!r}\n  closest: {close!r}")
    return outcome


def update_page(page: Path) -> int:
    """Rewrite the shown lines that no longer match; returns how many changed."""
    text = page.read_text(encoding="utf-8")
    changed = 0
    for outcome in reversed(run_page(page)):
        shown = outcome.block.shown
        if shown is None:
            continue
        actual = outcome.output.splitlines()
        normalized = [normalize(line) for line in actual]
        lines = shown.body.splitlines(keepends=True)
        for number, raw in enumerate(lines):
            wanted = normalize(raw)
            if not wanted or wanted == "..." or wanted in normalized:
                continue
            close = difflib.get_close_matches(wanted, normalized, n=1, cutoff=0.5)
            if close:
                lines[number] = actual[normalized.index(close[0])].rstrip() + "\n"
                changed += 1
        body = "".join(shown.indent + line if line.strip() else line for line in lines)
        text = text[: shown.start] + body + text[shown.end :]
    page.write_text(text, encoding="utf-8")
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", type=Path, help="pages (default: all)")
    parser.add_argument("--update", action="store_true", help="rewrite drifted shown lines")
    args = parser.parse_args(argv)
    chosen = [path.resolve() for path in args.pages] or pages()
    failed = 0
    for page in chosen:
        if args.update:
            print(f"{rel(page)}: {update_page(page)} shown lines rewritten")
            continue
        for outcome in run_page(page):
            for problem in outcome.problems:
                failed += 1
                print(f"{outcome.block.where}: {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
