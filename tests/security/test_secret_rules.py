"""Each credential rule, one realistic example apiece (in a file and in a commit message), and a
corpus of ordinary code that must pass untouched: a false positive costs a whole file's answers.

The examples are made up in the shape each issuer documents; none is a live credential.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from arela_index.ingest.credentials import (
    REDACTED,
    RULE_NAMES,
    SECRET_NAME,
    holds_secret,
    redact_secrets,
    secret_rules_in,
)

CORPUS = Path(__file__).parent / "corpus"

# rule name -> (text as it appears, the secret in it)
EXAMPLES: dict[str, tuple[str, str]] = {
    "private-key": (
        "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oo9Hqi1v\n"
        "-----END EC PRIVATE KEY-----",
        "MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oo9Hqi1v",
    ),
    "aws-access-key-id": ("AWS_KEY_AKIAQZXWVTRBNMLKJHGF = 1", "AKIAQZXWVTRBNMLKJHGF"),
    "aws-secret-access-key": (
        "aws_secret_access_key = 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",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzqxwvtrbnm",
    ),
    "github-token": (
        "token = my_ghp_QzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbvcxz",
        "ghp_QzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbvcxz",
    ),
    "github-fine-grained-token": (
        "GH=github_pat_11ABCDEFG0QzxwvTrbnmLkjhgF_dsaPoiuYtrewQmnbvcxzLkjhgFdsaPoiuYtrewQmnbv",
        "github_pat_11ABCDEFG0QzxwvTrbnmLkjhgF_dsaPoiuYtrewQmnbvcxzLkjhgFdsaPoiuYtrewQmnbv",
    ),
    "gitlab-token": ("CI_TOKEN: glpat-Qz8vTrbnmLkjhgFdsa12", "glpat-Qz8vTrbnmLkjhgFdsa12"),
    "slack-token": (
        "bot = 'xoxb-2048123456-4096123456-QzxwvTrbnmLkjhgFdsaPoiu'",
        "xoxb-2048123456-4096123456-QzxwvTrbnmLkjhgFdsaPoiu",
    ),
    "slack-app-token": (
        "SLACK_APP=xapp-1-A0123456789-1234567890123-abcdef0123456789",
        "xapp-1-A0123456789-1234567890123-abcdef0123456789",
    ),
    "slack-webhook": (
        "POST https://hooks.slack.com/services/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",
        "T0ABCDE12/B0ABCDE34/QzxwvTrbnmLkjhgFdsaPoiuY",
    ),
    "discord-webhook": (
        "https://discord.com/api/webhooks/123456789012345678/"
        "QzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbvcxzLkjhgFdsaPoiuYtrewQmnbvcxzLkjh",
        "QzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbvcxzLkjhgFdsaPoiuYtrewQmnbvcxzLkjh",
    ),
    "stripe-secret-key": (
        "stripe.api_key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    ),
    "google-api-key": (
        "maps_key=AIzaSyQzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbv",
        "AIzaSyQzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbv",
    ),
    "openai-anthropic-key": (
        "client = Anthropic(api_key='sk-ant-api03-QzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbvcxz12')",
        "sk-ant-api03-QzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbvcxz12",
    ),
    "npm-token": (
        "//registry.npmjs.org/:_authToken=npm_QzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbvcxz",
        "npm_QzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbvcxz",
    ),
    "pypi-token": (
        "password = pypi-AgEIcHlwaS5vcmcCJDQ2ZjM1ZTU4LWQ3ZjgtNDJkNS1hNmFhLWM0ZTU0ZDE5NzVmOQACKlsz",
        "pypi-AgEIcHlwaS5vcmcCJDQ2ZjM1ZTU4LWQ3ZjgtNDJkNS1hNmFhLWM0ZTU0ZDE5NzVmOQACKlsz",
    ),
    "jwt": (
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJtYWxsb3J5In0.Qz8vTr7bnmLkjhgFdsaPoiu",
        "eyJzdWIiOiJtYWxsb3J5In0",
    ),
    "sendgrid-key": (
        "SENDGRID=SG.QzxwvTrbnmLkjhgFdsaPoi.uYtrewQmnbvcxzLkjhgFdsaPoiuYtrewQmnbvcxz123",
        "uYtrewQmnbvcxzLkjhgFdsaPoiuYtrewQmnbvcxz123",
    ),
    "shopify-token": (
        "shpat_0123456789abcdef0123456789abcdef",
        "shpat_0123456789abcdef0123456789abcdef",
    ),
    "huggingface-token": (
        "HF_TOKEN=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",
        "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",
    ),
    "digitalocean-token": (
        "do_token: dop_v1_" + "0123456789abcdef" * 4,
        "dop_v1_" + "0123456789abcdef" * 4,
    ),
    "databricks-token": (
        "DATABRICKS=dapi0123456789abcdef0123456789abcdef",
        "dapi0123456789abcdef0123456789abcdef",
    ),
    "age-secret-key": (
        "AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" + "QPZRY9X8GF2TVDW0S3JN54KHCE",
        "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE",
    ),
    "azure-storage-key": (
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=QzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbvcxz12345678==",
        "QzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbvcxz12345678",
    ),
    "password-in-url": ("DATABASE_URL = 'postgres://user:pass@host/db'", "user:pass@"),
    "secret-assignment": (
        'resource "aws_iam_access_key" "ci" {\n  secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY0123456789"\n}',
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCY0123456789",
    ),
}


def test_every_rule_has_an_example() -> None:
    assert set(EXAMPLES) == set(RULE_NAMES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_rule_finds_its_credential_in_a_file_and_redacts_it_in_text(name: str) -> None:
    text, secret = EXAMPLES[name]
    assert name in secret_rules_in(text)
    assert holds_secret(f"import os\n\n{text}\n".encode()) is not None  # the file is left out
    message = f"Deploy: switch the credential\n\n{text}\n\nReviewed-by: Ana"
    redacted = redact_secrets(message)
    assert secret not in redacted and REDACTED in redacted
    assert redacted.startswith("Deploy: switch the credential") and "Reviewed-by: Ana" in redacted


def test_a_private_key_block_is_redacted_from_begin_to_end_and_without_its_end() -> None:
    body = "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9OiZ1BjP5CE\nQzxwvTrbnmLkjhgFdsaPoiuYtrewQm=="
    whole = f"before\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\nafter"
    assert redact_secrets(whole) == "before\n[redacted]\nafter"
    cut = f"pasted half a key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n{body}"
    assert redact_secrets(cut) == "pasted half a key:\n[redacted]"
    escaped = whole.replace("\n", "\\n")  # as a JSON file or a log line holds it
    assert "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9OiZ1BjP5CE" not in redact_secrets(escaped)


@pytest.mark.parametrize(
    "text",
    [
        "password = os.environ['DB_PASSWORD']",
        "password: str | None = None",
        'token_url = "https://auth.example.org/oauth2/token"',
        'secret_name = "billing/db-password-2024"',
        'api_key = "<your api key>"',
        'secret_key = "${SECRET_KEY}"',
        'password = "changeme123456"',
        "postgresql://billing@db.internal:5432/billing",
        "postgres://user:${DB_PASSWORD}@host/db",
        "https://example.org:8443/path@v2",
        "AKIAIOSFODNN7EXAMPLEKEY",  # longer than a key id: an identifier
        "class='sk-a-very-long-kebab-case-css-class-name-here'",
        'tokenStorageKey: "dashboard.session"',
        "sha256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'",
    ],
)
def test_what_is_not_a_credential(text: str) -> None:
    assert secret_rules_in(text) == [] and redact_secrets(text) == text


@pytest.mark.parametrize("path", sorted(CORPUS.iterdir()), ids=lambda p: p.name)
def test_ordinary_code_is_never_taken_for_a_secret(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) > 25
    assert secret_rules_in(text) == []
    assert holds_secret(text.encode()) is None  # the file is indexed
    assert redact_secrets(text) == text


def test_the_corpus_is_a_few_hundred_lines() -> None:
    assert sum(len(p.read_text().splitlines()) for p in CORPUS.iterdir()) >= 300


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        (".env", True),
        ("id_ed25519", True),
        ("terraform.tfstate", True),
        (".git-credentials", True),
        ("server.pem", True),
        ("settings.py", False),
        ("environment.py", False),
        ("keys.py", False),
    ],
)
def test_secret_file_names(name: str, secret: bool) -> None:
    assert bool(SECRET_NAME.match(name)) == secret
