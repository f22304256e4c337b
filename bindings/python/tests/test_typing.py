"""The package as type checkers and ``help()`` see it: ``mypy --strict`` accepts the
package, its example and a typed program (and rejects a misspelt config field), the
public names are a literal ``__all__``, and every config field and ``Bridge.invocation``
is documented."""

from __future__ import annotations

import ast
import inspect
import pydoc
import subprocess
import sys
from pathlib import Path

import agentwire as aw
from agentwire import acp, bridge, config, decoder, mcp, registry, reply
from agentwire import _lib
from conftest import DEFAULT_REQUEST, FIXTURES
from typed_example import answer_text, refuse, respond

PACKAGE = Path(__file__).resolve().parents[1]


def mypy(*args: str) -> subprocess.CompletedProcess:
    # From the package's directory: its pyproject.toml holds the settings.
    return subprocess.run(
        [sys.executable, "-m", "mypy", *args], cwd=PACKAGE, capture_output=True, text=True
    )


def test_the_package_and_its_examples_pass_mypy_strict():
    done = mypy()
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_rejects_misspelt_and_mistyped_fields(tmp_path: Path):
    program = tmp_path / "misspelt.py"
    program.write_text(
        "from agentwire import Bridge, Config\n"
        "config = Config(tool_stratgy='native')\n"
        "config.keep_alive = 5\n"
        "config.idle_timeout_ms = '5'\n"
        "Bridge(b'{}', config).push_stdout('text', 0)\n"
    )
    done = mypy("--strict", str(program))
    assert done.returncode == 1
    assert 'Unexpected keyword argument "tool_stratgy"' in done.stdout
    assert '"Config" has no attribute "keep_alive"' in done.stdout
    assert "misspelt.py:4: error: Incompatible types in assignment" in done.stdout
    assert "misspelt.py:5: error: Argument 1" in done.stdout


def test_all_is_a_literal_list_of_every_module_export():
    # Type checkers read `__all__` only when it is written out: one assignment of a list of
    # strings, never extended.
    tree = ast.parse((PACKAGE / "agentwire" / "__init__.py").read_text())
    writes = [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        and "__all__" in [getattr(t, "id", None) for t in getattr(node, "targets", [])]
        + [getattr(getattr(node, "target", None), "id", None)]
    ]
    assert len(writes) == 1 and isinstance(writes[0], ast.Assign)
    literal = ast.literal_eval(writes[0].value)
    assert literal == aw.__all__ and len(set(literal)) == len(literal)
    for name in literal:
        assert hasattr(aw, name), name
    # Every public class and function of the modules, and the unions of outputs and events.
    defined = {
        name
        for module in (acp, bridge, config, decoder, mcp, registry, reply, _lib)
        for name, value in vars(module).items()
        if (isinstance(value, type) or inspect.isfunction(value))
        and value.__module__ == module.__name__
        and not name.startswith("_")
    }
    helpers = {
        name for name, value in vars(_lib).items() if inspect.isfunction(value)
    }
    assert defined - {"Handle"} - helpers | {
        "Output",
        "Event",
        "Decision",
        "McpOutput",
        "McpEvent",
        "__version__",
    } == set(literal)


def test_help_documents_every_field_and_the_invocation():
    for settings in (aw.Config, aw.RegistryConfig, aw.McpConfig, aw.AcpConfig):
        text = pydoc.render_doc(settings, renderer=pydoc.plaintext)
        for name in settings.FIELDS:
            # The field's own paragraph: its name, then its documentation and default.
            paragraph = text.split(f"\n |  {name}\n", 1)[1].split("\n |  \n", 1)[0]
            assert "Default: " in paragraph, (settings, name)
            assert len(paragraph) > 40, (settings, name)
    text = pydoc.render_doc(aw.Config, renderer=pydoc.plaintext)
    assert "Default: ToolStrategy.READ_ONLY." in text
    assert "Default: 'cursor-agent'." in text
    text = pydoc.render_doc(aw.Bridge, renderer=pydoc.plaintext)
    paragraph = text.split("\n |  invocation\n", 1)[1].split("\n |  \n", 1)[0]
    assert "rejected" in paragraph and "None" in paragraph
    # The dialect: the argument, its names, and each value's route.
    assert "dialect: 'Union[Dialect, str]' = <Dialect.CHAT_COMPLETIONS: 0>" in text
    assert '"chat-completions"' in text and '"messages"' in text
    text = pydoc.render_doc(aw.Dialect, renderer=pydoc.plaintext)
    for route in ("/v1/chat/completions", "/v1/responses", "/v1/messages", "count_tokens"):
        assert route in text, route
    text = pydoc.render_doc(aw.ErrorKind, renderer=pydoc.plaintext)
    for kind in aw.ErrorKind:
        assert f"``{kind.name}`` {kind.status}" in text, kind
    for function in (aw.count_tokens, aw.error_reply):
        text = pydoc.render_doc(function, renderer=pydoc.plaintext)
        assert "dialect" in text or "count_tokens" in text
        assert "never" in text.lower() or "refusal" in text


def test_the_typed_example_runs():
    transcript = (FIXTURES / "multibyte.jsonl").read_bytes()
    status, body, stop = respond(DEFAULT_REQUEST, bytearray(transcript))
    assert status == 200 and body.endswith(b"data: [DONE]\n\n") and not stop
    assert answer_text(transcript)
    status, headers, body = refuse("/v1/messages?beta=true")
    assert (status, headers["x-should-retry"]) == (401, "false")
    assert body.startswith(b'{"type":"error","error":{"type":"authentication_error"')
