"""libcommon.redact: every secret family goes, ordinary text stays.

The fake secrets are built by concatenation so that no scanner mistakes this file
for a leak; each has the shape of the real thing and is otherwise random.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from libcommon import redact as redact_module
from libcommon.redact import (
    REDACTED,
    STREAM_CONTEXT_LINES,
    STREAM_HOLD_CHARS,
    StreamRedactor,
    redact,
    redact_value,
)

ALNUM = "Q7xK2mP9vR4tL8nB3cD6fG1hJ5wZ0yS"  # 32 mixed characters


def fake(prefix: str, length: int, alphabet: str = ALNUM) -> str:
    body = (alphabet * (length // len(alphabet) + 1))[:length]
    return prefix + body


ANTHROPIC = fake("sk-" + "ant-api03-", 40)
OPENAI = fake("sk-", 48)
OPENAI_PROJ = fake("sk-" + "proj-", 60)
AWS_ACCESS = "AKIA" + "IOSFODNN7EXAMPLQ"
GITHUB_PAT_CLASSIC = fake("gh" + "p_", 36)
GITHUB_PAT_FINE = fake("github_" + "pat_", 82)
GITHUB_OAUTH = fake("gh" + "o_", 36)
GOOGLE = fake("AI" + "za", 35)
SLACK_BOT = "xox" + "b-1234567890-0987654321-" + ALNUM[:24]
SLACK_USER = "xox" + "p-" + "1234567890-" + ALNUM[:20]
STRIPE_LIVE = fake("sk_" + "live_", 24)
STRIPE_RESTRICTED = fake("rk_" + "test_", 24)
HUGGINGFACE = fake("hf" + "_", 34)
GITLAB = fake("gl" + "pat-", 20)
NPM = fake("npm" + "_", 36)
JWT = (
    "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

SHAPED = {
    "anthropic": ANTHROPIC,
    "openai": OPENAI,
    "openai-proj": OPENAI_PROJ,
    "aws-access-key": AWS_ACCESS,
    "github-classic": GITHUB_PAT_CLASSIC,
    "github-fine-grained": GITHUB_PAT_FINE,
    "github-oauth": GITHUB_OAUTH,
    "google": GOOGLE,
    "slack-bot": SLACK_BOT,
    "slack-user": SLACK_USER,
    "stripe-live": STRIPE_LIVE,
    "stripe-restricted": STRIPE_RESTRICTED,
    "huggingface": HUGGINGFACE,
    "gitlab": GITLAB,
    "npm": NPM,
    "jwt": JWT,
}


@pytest.mark.parametrize("secret", SHAPED.values(), ids=SHAPED.keys())
@pytest.mark.parametrize(
    "template",
    ["{}", "key: {}", "export X={}", "'{}'", '{{"value": "{}"}}', "a {} b\nnext line", "({})"],
)
def test_shaped_secret_is_redacted(secret: str, template: str) -> None:
    text = template.format(secret)
    out = redact(text)
    assert secret not in out
    assert "[REDACTED" in out


def test_shaped_secret_keeps_surrounding_text() -> None:
    out = redact(f"calling api with {ANTHROPIC} now")
    assert out == "calling api with [REDACTED:anthropic-key] now"
    assert redact(f"id={AWS_ACCESS}.") == "id=[REDACTED:aws-access-key]."


PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n" + ALNUM * 2 + "\n"


@pytest.mark.parametrize("kind", ["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", "DSA "])
def test_pem_private_key_block(kind: str) -> None:
    block = f"-----BEGIN {kind}PRIVATE KEY-----\n{PEM_BODY}-----END {kind}PRIVATE KEY-----"
    out = redact(f"before\n{block}\nafter")
    assert out == "before\n[REDACTED:private-key]\nafter"


def test_pgp_private_key_block() -> None:
    block = f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n{PEM_BODY}-----END PGP PRIVATE KEY BLOCK-----"
    assert redact(block) == "[REDACTED:private-key]"


def test_unterminated_private_key_is_redacted_to_the_end() -> None:
    text = f"key:\n-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}and the rest"
    out = redact(text)
    assert out == "key:\n[REDACTED:private-key]"
    assert "MIIEvQ" not in out


def test_public_key_and_certificate_are_kept() -> None:
    text = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----"
    assert redact(text) == text
    cert = "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE\n-----END CERTIFICATE-----"
    assert redact(cert) == cert


OPAQUE = "opaqueValue_0123456789abcdef"  # no provider shape: only context marks it secret


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"Authorization: Bearer {OPAQUE}", "Authorization: "),
        (f"curl -H 'Authorization: Bearer {OPAQUE}'", "curl -H 'Authorization: "),
        (f"authorization: Basic {OPAQUE}", "authorization: "),
        (f"x-api-key: {OPAQUE}", "x-api-key: "),
        (f"X-Api-Key:{OPAQUE}", "X-Api-Key:"),
        (f"api-key: {OPAQUE}", "api-key: "),
        (f"Cookie: session={OPAQUE}", "Cookie: "),
        (f"sent Bearer {OPAQUE} upstream", "sent Bearer "),
        (f"https://user:{OPAQUE}@example.com/repo.git", "https://"),
        (f"postgres://admin:{OPAQUE}@db:5432/app", "postgres://"),
        (f"FOO_TOKEN={OPAQUE}", "FOO_TOKEN="),
        (f"export MY_SERVICE_TOKEN='{OPAQUE}'", "export MY_SERVICE_TOKEN='"),
        (f'DB_PASSWORD="{OPAQUE}"', 'DB_PASSWORD="'),
        (f"AWS_SECRET_ACCESS_KEY={OPAQUE}/K7MDENG/bPxRfiCY", "AWS_SECRET_ACCESS_KEY="),
        (f"aws_secret_access_key = {OPAQUE}", "aws_secret_access_key = "),
        (f"password: {OPAQUE}", "password: "),
        (f"PASSWORD={OPAQUE}", "PASSWORD="),
        (f"client_secret={OPAQUE}", "client_secret="),
        (f"GITHUB_PAT={OPAQUE}", "GITHUB_PAT="),
        (f"GOOGLE_CREDENTIALS={OPAQUE}", "GOOGLE_CREDENTIALS="),
        (f"api_key: {OPAQUE}", "api_key: "),
        (
            f"https://example.com/cb?access_token={OPAQUE}&x=1",
            "https://example.com/cb?access_token=",
        ),
    ],
)
def test_contextual_secret_is_redacted(text: str, kept: str) -> None:
    out = redact(text)
    assert OPAQUE not in out
    assert REDACTED in out
    assert out.startswith(kept), out  # the scheme / header / variable name stays


def test_url_userinfo_keeps_host_and_path() -> None:
    out = redact(f"git clone https://deploy:{OPAQUE}@github.com/org/repo.git")
    assert out == f"git clone https://{REDACTED}@github.com/org/repo.git"


def test_header_with_shaped_key_leaves_no_part_of_it() -> None:
    out = redact(f"x-api-key: {ANTHROPIC}\nnext")
    assert ANTHROPIC not in out
    assert out.endswith("\nnext")


def test_url_password_with_at_sign_is_fully_redacted() -> None:
    out = redact("https://deploy:S3cr3t@Pa55w0rd@example.com/repo")
    assert "Pa55w0rd" not in out
    assert out.endswith("@example.com/repo")


def test_quoted_passphrase_is_fully_redacted() -> None:
    out = redact('DB_PASSWORD="correct horse battery staple" next')
    assert "horse" not in out
    assert "staple" not in out
    assert out.endswith(" next")


def test_json_key_value_secret_is_redacted() -> None:
    out = redact('{"password": "hunter2hunter2", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI"}')
    assert "hunter2hunter2" not in out
    assert "wJalrXUtnFEMI" not in out


def test_redact_value_redacts_values_under_secret_named_keys() -> None:
    env = {"AWS_SECRET_ACCESS_KEY": OPAQUE, "DB_PASSWORD": OPAQUE, "PATH": "/usr/bin"}
    out = redact_value({"env": env})
    assert OPAQUE not in repr(out)
    assert out["env"]["PATH"] == "/usr/bin"


ORDINARY = [
    "/home/user/project/src/main.py",
    "~/.ssh/id_rsa.pub and ~/.aws/credentials",
    "git@github.com:org/repo.git",
    "https://example.com/path?query=1&page=2",
    "def main(argv: list[str]) -> int:\n    return 0\n",
    "for (let i = 0; i < n; i++) { total += i; }",
    "sk-",
    "the prefix sk- is for keys",
    "risk-assessment-framework-v2-final",
    "Basic configuration is documented below",
    "the token returned by the server is cached",
    "Bearer authentication expects a header",
    "echo $API_KEY",
    "API_KEY=$API_KEY",
    'export OPENAI_API_KEY="${OPENAI_API_KEY}"',
    "GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}",
    "max_tokens: 1024",
    "def get_token(self) -> str:",
    "the token expired",
    "Bearer auth",
    "ok",
    "a b c",
    "AKIA",
    "hf_hub_download(repo_id, filename)",
    "eyJ is how base64 JSON starts",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "commit 3f2a9c1e4b7d8a6f5e0c1b2a3d4e5f6a7b8c9d0e",
    "550e8400-e29b-41d4-a716-446655440000",
    "",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_unchanged(text: str) -> None:
    assert redact(text) == text


def test_redact_value_walks_dicts_and_lists() -> None:
    value: dict[str, Any] = {
        "argv": ["curl", "-H", f"Authorization: Bearer {OPAQUE}"],
        "nested": {"deeper": [{"note": f"key {OPENAI}"}], "count": 3, "ok": True, "none": None},
        "tuple": (f"FOO_TOKEN={OPAQUE}", 1.5),
        ANTHROPIC: "keys are kept as they are",
    }
    out = redact_value(value)
    assert OPAQUE not in repr(out)
    assert OPENAI not in repr(out)
    assert out["argv"][:2] == ["curl", "-H"]
    assert out["nested"]["count"] == 3
    assert out["nested"]["ok"] is True
    assert out["nested"]["none"] is None
    assert out["tuple"] == [f"FOO_TOKEN={REDACTED}", 1.5]
    assert out[ANTHROPIC] == "keys are kept as they are"
    # The input is not modified.
    assert value["argv"][2] == f"Authorization: Bearer {OPAQUE}"


def test_redact_value_passes_scalars_through() -> None:
    assert redact_value(42) == 42
    assert redact_value(None) is None
    assert redact_value(f"{GOOGLE}") == "[REDACTED:google-api-key]"


ALL_SAMPLES = [
    *SHAPED.values(),
    f"Authorization: Bearer {OPAQUE}",
    f"https://user:{OPAQUE}@example.com",
    f"FOO_TOKEN={OPAQUE} and password: {OPAQUE}",
    f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}",
    f"OPENAI_API_KEY={OPENAI}",
    f"token {OPAQUE}",
    *ORDINARY,
]


@pytest.mark.parametrize("text", ALL_SAMPLES)
def test_redact_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


FRAGMENTS = [
    "sk-", "ant-", "proj-", "AKIA", "ghp_", "github_pat_", "AIza", "xoxb-", "sk_live_",
    "hf_", "eyJ", ".", "Bearer ", "token ", "Authorization: ", "x-api-key:", "https://",
    "user:", "@", "FOO_TOKEN=", "PASSWORD=", "password: ", "'", '"', "$", " ", "\n", "=",
    ":", "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----", "[REDACTED]",
    ALNUM, "0123456789", "abcdefghij", "ABCDEFGHIJKLMNOP",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join))
def test_redact_is_idempotent_on_generated_text(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


# --- the gates: a pattern runs only over text holding one of its needles -----------------


def test_re_folds_no_other_character_to_an_ascii_letter() -> None:
    """The case-blind needles are looked for in ``_words`` of the text, which spells as
    ASCII letters exactly the characters Python's re matches to them."""
    import re
    import sys

    letter = re.compile(r"(?i)[a-z]")
    folding = [chr(c) for c in range(128, sys.maxunicode + 1) if letter.fullmatch(chr(c))]
    assert folding == ["\u0130", "\u0131", "\u017f", "\u212a"]
    for char in folding:
        assert redact_module._words(char).isascii()


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                *FRAGMENTS,
                "Authorİzation: ",
                "cooKie:",
                "paſſword=",
                "apı_key: ",
                "x-api-\u212aey: ",
                "basıc ",
                "TOKEN ",
                "[REDACTED:github-token] ",
                "é",
                "\udc80",
            ]
        ),
        max_size=14,
    ).map("".join)
)
def test_gates_change_nothing(text: str) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(redact_module, "_holds", lambda text, needles: True)
        ungated = redact(text)
    assert redact(text) == ungated


# --- streaming: pieces redacted as the whole is ------------------------------------------

PEM_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY * 3}-----END RSA PRIVATE KEY-----"
STREAM_SAMPLES = {
    "anthropic": f"key {ANTHROPIC} here\n",
    "github": f"export GH={GITHUB_PAT_CLASSIC}\n",
    "glued": f"x{ANTHROPIC}\n",
    "pem": f"before\n{PEM_KEY}\nafter\n",
    "unterminated-pem": f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}",
    "header": f"Authorization:\n\n  Bearer {OPAQUE}\n",
    "assignment-across-lines": f"DB_PASSWORD =\n\n   {OPAQUE}\n",
    "scheme-token-across-lines": f"token\n{OPAQUE}\n",
    "url": f"git clone https://deploy:{OPAQUE}@example.com/r.git\n",
    "quoted": 'PASSWORD="correct horse battery staple" next\n',
    "jwt": f"{JWT}\n",
    # A separator on a line of its own: the match spans three lines.
    "separator-alone": f"token  \n=\n{OPAQUE}\n",
    # A bearer match changes the next line, which decides the assignment after it.
    "passes-in-a-chain": f"FOO_TOKEN=token  \nPASSWORD=x\nFOO_TOKEN=\n{OPAQUE} \n",
    # What follows a key block on its line meets the block's marker, as in the whole.
    "after-a-key": f"FOO_TOKEN=sk-{PEM_KEY}sk-\n",
}


STREAM_FRAGMENTS = [
    *FRAGMENTS,
    *["\n", "\n\n", " \n", PEM_KEY, "-----BEGIN RSA PRIVATE KEY-----\n"],
    *["token", "Authorization", "cookie", "bearer", "PASSWORD", "api_key", "=", ":", ";"],
    *["abc123def456ghi", "[REDACTED:private-key]", "https://u:p@h/", ANTHROPIC],
]


def streamed(text: str, cuts: list[int]) -> str:
    redactor = StreamRedactor()
    out, previous = [], 0
    for cut in [*cuts, len(text)]:
        out.append(redactor.feed(text[previous:cut]))
        previous = cut
    return "".join(out) + redactor.finish()


# Enough lines on each side that the secret's lines are released before the end.
PADDING = "".join(f"line {i}\n" for i in range(STREAM_CONTEXT_LINES + 2))


@pytest.mark.parametrize("sample", STREAM_SAMPLES.values(), ids=STREAM_SAMPLES.keys())
def test_a_piece_boundary_at_every_offset_of_a_secret(sample: str) -> None:
    text = f"{PADDING}{sample}{PADDING}"
    whole = redact(text)
    start = len(PADDING)
    for cut in range(start, start + len(sample) + 1):
        redactor = StreamRedactor()
        released = redactor.feed(text[:cut]) + redactor.feed(text[cut:])
        assert released.startswith("line 0\n")  # lines go out before the end
        assert released + redactor.finish() == whole, cut


@pytest.mark.parametrize("sample", STREAM_SAMPLES.values(), ids=STREAM_SAMPLES.keys())
def test_a_secret_fed_one_character_at_a_time(sample: str) -> None:
    text = f"{PADDING}{sample}{PADDING}" * 2
    assert streamed(text, list(range(1, len(text)))) == redact(text)


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(st.sampled_from(STREAM_FRAGMENTS), max_size=24).map("".join),
    st.lists(st.integers(min_value=0, max_value=2000), max_size=6),
)
def test_streaming_equals_redacting_the_whole(text: str, cuts: list[int]) -> None:
    assert streamed(text, sorted(cut % (len(text) + 1) for cut in cuts)) == redact(text)


def test_a_line_is_released_once_enough_lines_after_it_agree() -> None:
    redactor = StreamRedactor()
    lines = [f"line {i}\n" for i in range(STREAM_CONTEXT_LINES + 2)]
    assert redactor.feed("".join(lines[:STREAM_CONTEXT_LINES])) == ""
    assert redactor.feed(lines[STREAM_CONTEXT_LINES]) == lines[0]
    assert redactor.feed(f"{lines[-1]}{ANTHROPIC}") == lines[1]
    assert redactor.finish() == "".join(lines[2:]) + "[REDACTED:anthropic-key]"


def test_a_private_key_longer_than_what_is_held_back_leaves_nothing() -> None:
    body = "".join(f"{ALNUM}{i:08d}\n" for i in range(2 * STREAM_HOLD_CHARS // 40))
    key = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}-----END OPENSSH PRIVATE KEY-----"
    text = f"before\n{key}\nafter\n"
    out = streamed(text, list(range(0, len(text), 4096)))
    assert out == redact(text) == "before\n[REDACTED:private-key]\nafter\n"


def test_a_line_longer_than_the_window_is_released_in_bounded_pieces() -> None:
    redactor = StreamRedactor()
    piece = "x" * 32 * 1024
    fed = released = 0
    for _ in range(64):
        fed += len(piece)
        released += len(redactor.feed(piece))
        assert fed - released <= 2 * STREAM_HOLD_CHARS + len(piece)
    assert released + len(redactor.finish()) == fed


def test_a_token_longer_than_the_window_leaves_no_part_of_it() -> None:
    token = "sk-" + "ant-" + "A" * (3 * STREAM_HOLD_CHARS)
    out = streamed(f"start\n{token} rest of line\nnext line\n", list(range(0, 10**6, 65536)))
    assert out == "start\n[REDACTED:anthropic-key]\nnext line\n"


def test_a_key_glued_after_another_is_redacted_too() -> None:
    # The OpenAI key starts no word until the Google key before it is a marker.
    text = "AIzaant-Q7xK2mP9vR4tL8nB3cD6fG1hJ5wZ0ySsk-Q7xK2mP9vR4tL8nB3cD6fG1hJ5wZ0yS"
    assert redact(text) == "[REDACTED:google-api-key][REDACTED:openai-key]"
