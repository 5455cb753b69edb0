"""Choosing a provider loads only what it needs: anthropic and httpx stay unimported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
from pathlib import Path
import ax_agent.providers
import ax_agent.providers.anthropic, ax_agent.providers.openai_compat, ax_agent.providers.script
from ax_agent.providers import Message, ProviderRequest, TextBlock, make_provider
provider = make_provider("script", model=None, base_url=None, script=Path(sys.argv[1]), environ={})
answer = provider.complete(ProviderRequest("", [Message("user", [TextBlock("hi")])], [], ""))
if sys.argv[2] == "openai":
    make_provider("openai-compatible", model="m", base_url="http://127.0.0.1:9/v1",
                  script=None, environ={})
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {"anthropic", "httpx", "httpx2"})
print(json.dumps({"answer": answer.text, "heavy": heavy}))
"""


def probe(tmp_path: Path, mode: str) -> dict[str, object]:
    script = tmp_path / "s.json"
    script.write_text('{"turns": [{"text": "hello"}]}')
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(script), mode],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout)
    return result


def test_script_provider_imports_no_sdk(tmp_path: Path) -> None:
    result = probe(tmp_path, "script")
    assert result["answer"] == "hello"  # the probe really ran a provider
    assert result["heavy"] == []


def test_building_a_network_provider_defers_its_sdk_to_the_first_request(tmp_path: Path) -> None:
    assert probe(tmp_path, "openai")["heavy"] == []
