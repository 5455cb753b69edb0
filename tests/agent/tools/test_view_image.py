"""view_image: workspace images and recorded artifacts, checked by their bytes, shown only
to models the catalog says take images, and mapped to each provider's image part."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent.providers.fakes import FakeServer, Reply
from agent.providers.responses_fakes import call_item, stream, text_reply
from agent.tools.toolkit import SESSION, Harness

from ax_agent.loop import run_turn
from ax_agent.providers import Message, ProviderRequest, TextBlock, ToolResultBlock, ToolUseBlock
from ax_agent.providers.anthropic import build_params
from ax_agent.providers.base import ImagePart
from ax_agent.providers.openai_compat import wire_messages as chat_wire
from ax_agent.providers.openai_responses import wire_input
from ax_agent.session import StartOptions, start_session
from ax_agent.tools import view_image
from ax_agent.tools.base import ToolResult
from ax_agent.window.tokens import IMAGE_TOKENS, block_tokens
from ax_log import read_events
from libcommon.paths import state_layout


def png(width: int = 2, height: int = 2) -> bytes:
    """A real, minimal PNG (one grey pixel row per line)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def call(harness: Harness, raw: dict[str, Any], model: str = "gpt-5") -> ToolResult:
    return harness.call(view_image.TOOL, raw, model=model)


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (png(), "image/png"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
        (b"GIF89a\x01\x00\x01\x00", "image/gif"),
        (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"RIFF\x24\x00\x00\x00WAVEfmt ", None),
        (b"<svg xmlns=", None),
    ],
)
def test_the_type_is_read_from_the_magic_bytes(head: bytes, kind: str | None) -> None:
    assert view_image.media_type(head[: view_image.MAGIC_BYTES]) == kind


def test_a_workspace_image_is_shown_with_its_hash(harness: Harness, workspace: Path) -> None:
    data = png()
    (workspace / "pics").mkdir()
    (workspace / "pics" / "a.png").write_bytes(data)
    assert (
        harness.decide(view_image.TOOL, view_image.ViewImageInput(path="pics/a.png")).verdict
        == "allow"
    )
    result = call(harness, {"path": "pics/a.png"})
    assert not result.is_error
    (image,) = result.images
    assert image == ImagePart("image/png", data, hashlib.sha256(data).hexdigest(), "pics/a.png")
    assert image.sha256 in result.content and "image/png" in result.content


def test_a_file_named_like_an_image_that_is_not_one_is_refused(
    harness: Harness, workspace: Path
) -> None:
    (workspace / "fake.png").write_text("not an image")
    result = call(harness, {"path": "fake.png"})
    assert result.is_error and not result.images
    assert "not a PNG, JPEG, GIF or WebP" in result.content


def test_an_image_over_the_cap_is_refused(
    harness: Harness, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(view_image, "VIEW_IMAGE_MAX_BYTES", 64)
    (workspace / "big.png").write_bytes(png(40, 40) + b"\0" * 64)
    result = call(harness, {"path": "big.png"})
    assert result.is_error and "larger than 64 bytes" in result.content


def test_a_model_without_vision_is_refused_with_the_reason(
    harness: Harness, workspace: Path
) -> None:
    (workspace / "a.png").write_bytes(png())
    known = call(harness, {"path": "a.png"}, model="qwen2.5-coder")
    assert known.is_error and not known.images
    assert "the catalog says qwen2.5-coder takes no images" in known.content
    unknown = call(harness, {"path": "a.png"}, model="my-local-model")
    assert "not in ax's catalog" in unknown.content


def test_exactly_one_source_is_required() -> None:
    with pytest.raises(ValueError, match="exactly one of path and artifact"):
        view_image.ViewImageInput()
    with pytest.raises(ValueError, match="exactly one of path and artifact"):
        view_image.ViewImageInput(path="a.png", artifact="0" * 64)


def test_an_artifact_must_be_named_by_this_sessions_log(harness: Harness) -> None:
    data = png()
    digest = hashlib.sha256(data).hexdigest()
    harness.layout.objects_dir.mkdir(parents=True, exist_ok=True)
    (harness.layout.objects_dir / digest).write_bytes(data)
    # Stored, but this session never recorded it: a guessed hash reaches nothing.
    refused = call(harness, {"artifact": digest})
    assert refused.is_error and "recorded no artifact" in refused.content
    from ax_log import append_events

    append_events(
        harness.layout,
        SESSION,
        [{"type": "snapshot.stored", "path": "logo.png", "sha256": digest}],
    )
    shown = call(harness, {"artifact": digest.upper()})
    assert not shown.is_error
    assert shown.images[0].source == f"artifact {digest}"
    assert call(harness, {"artifact": "not-a-hash"}).content.startswith(
        "an artifact is named by its sha256"
    )


def test_a_hash_written_in_the_log_is_not_an_artifact_a_screenshot_is(harness: Harness) -> None:
    from ax_log import append_events

    data = png(3, 3)
    digest = hashlib.sha256(data).hexdigest()
    harness.layout.objects_dir.mkdir(parents=True, exist_ok=True)
    (harness.layout.objects_dir / digest).write_bytes(data)
    # The model's own call naming the hash, a tool's output quoting it, and a command's
    # check signal carrying it: none of them recorded the object as this session's.
    append_events(
        harness.layout,
        SESSION,
        [
            {"type": "tool.requested", "callId": "c1", "tool": "view_image",
             "input": {"artifact": digest}},
            {"type": "tool.completed", "callId": "c1", "ok": True, "summary": digest,
             "content": f"the file says {digest}"},
            {"type": "check.completed", "kind": "test", "project": ".", "scope": ".",
             "recipeId": None, "verdict": "passed", "exitCode": 0, "termination": "exited",
             "reason": None, "signals": [{"name": "screenshot", "detail": digest}]},
        ],
    )  # fmt: skip
    refused = call(harness, {"artifact": digest})
    assert refused.is_error and "recorded no artifact" in refused.content
    append_events(
        harness.layout,
        SESSION,
        [
            {"type": "check.completed", "kind": "browser", "project": ".", "scope": ".",
             "recipeId": "browser.flow@.", "verdict": "failed", "exitCode": None,
             "termination": None, "reason": None,
             "signals": [{"name": "screenshot", "detail": digest}]},
        ],
    )  # fmt: skip
    shown = call(harness, {"artifact": digest})
    assert not shown.is_error and shown.images[0].data == data
    # The same screenshot, to a model that takes no images: refused, no bytes attached.
    blind = call(harness, {"artifact": digest}, model="qwen2.5-coder")
    assert blind.is_error and not blind.images


IMAGE = ImagePart("image/png", png(), hashlib.sha256(png()).hexdigest(), "a.png")


def _history() -> list[Message]:
    return [
        Message("user", [TextBlock("look")]),
        Message("assistant", [ToolUseBlock("call_v", "view_image", {"path": "a.png"})]),
        Message("user", [ToolResultBlock("call_v", "Image a.png: image/png.", images=(IMAGE,))]),
    ]


def test_both_wires_carry_the_image_to_a_model_that_sees() -> None:
    encoded = base64.b64encode(IMAGE.data).decode()
    output = wire_input(_history(), "gpt-5")[-1]["output"]
    assert output == [
        {"type": "input_text", "text": "Image a.png: image/png."},
        {"type": "input_image", "image_url": f"data:image/png;base64,{encoded}", "detail": "auto"},
    ]
    request = ProviderRequest("", _history(), [], "claude-haiku-4-5")
    content = build_params(request, "unused")["messages"][-1]["content"][0]["content"]
    assert content == [
        {"type": "text", "text": "Image a.png: image/png."},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": encoded}},
    ]


def test_a_model_that_does_not_see_gets_a_pointer_instead() -> None:
    output = wire_input(_history(), "qwen2.5-coder")[-1]["output"]
    assert isinstance(output, str)
    assert f"image a.png (image/png, {len(IMAGE.data)} bytes, sha256 {IMAGE.sha256})" in output
    assert (
        "kept as evidence but not shown: the catalog says qwen2.5-coder takes no images" in output
    )
    request = ProviderRequest("", _history(), [], "my-local-model")
    content = build_params(request, "unused")["messages"][-1]["content"][0]["content"]
    assert isinstance(content, str) and "not in ax's catalog" in content


def test_the_chat_wire_shows_the_image_after_the_tool_messages() -> None:
    # A tool message carries text only: the image follows in one user message, before
    # the same turn's user text, which joins that message.
    history = [*_history()[:2], Message("user", [*_history()[2].content, TextBlock("and?")])]
    wire = chat_wire("", history, "gpt-4o")
    encoded = base64.b64encode(IMAGE.data).decode()
    assert wire[-2] == {
        "role": "tool",
        "tool_call_id": "call_v",
        "content": "Image a.png: image/png.",
    }
    assert wire[-1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "[ax: a.png, from tool call call_v]"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{encoded}"}},
            {"type": "text", "text": "and?"},
        ],
    }
    blind = chat_wire("", _history(), "qwen2.5-coder")
    assert [m["role"] for m in blind] == ["user", "assistant", "tool"]
    assert "the catalog says qwen2.5-coder takes no images" in blind[-1]["content"]
    assert "image_url" not in json.dumps(blind)


def test_an_image_is_weighed() -> None:
    plain = ToolResultBlock("c", "text")
    assert block_tokens(ToolResultBlock("c", "text", images=(IMAGE,))) == (
        block_tokens(plain) + IMAGE_TOKENS
    )


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.close()


def test_a_session_shows_the_image_to_gpt_5_and_logs_only_its_name(
    server: FakeServer, workspace: Path
) -> None:
    data = png()
    (workspace / "a.png").write_bytes(data)
    server.plan(
        Reply(chunks=stream([call_item("call_v", "view_image", '{"path": "a.png"}')])),
        text_reply("It is grey."),
    )
    options = StartOptions(
        workspace=workspace,
        environ={**os.environ, "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": f"{server.url}/v1"},
        provider="openai",
        model="gpt-5",
        trust_once=True,
    )
    session = start_session(options)
    result = run_turn(session, "what colour is a.png?")
    session.end("completed")
    assert result.text == "It is grey."
    output = next(
        i["output"] for i in server.requests[1].body["input"] if i["type"] == "function_call_output"
    )
    assert output[1]["image_url"] == "data:image/png;base64," + base64.b64encode(data).decode()
    events = list(read_events(state_layout(workspace).session_log(session.id), session.id))
    (completed,) = [e for e in events if e["type"] == "tool.completed"]
    assert completed["images"] == [
        {
            "source": "a.png",
            "mediaType": "image/png",
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    ]
    decision = next(e for e in events if e["type"] == "policy.decision")
    assert decision["verdict"] == "allow"
    assert base64.b64encode(data).decode() not in str(events)
    # A resume says the image is not sent again, rather than sending nothing silently.
    again = start_session(
        StartOptions(**{**options.__dict__, "resume": session.id, "listeners": []})
    )
    again.end("completed")
    (resumed,) = [b for m in again.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert not resumed.images and "call view_image again" in resumed.content
