"""Secrets in a repository never reach a memory, a prompt or an answer.

A real git repository holds a `.env`, an `id_rsa`, `*.pem` keys, AWS keys in Python, YAML, JSON
and JS config, tokens in `.npmrc`, and a key pasted into a commit message, each committed and
then changed (so history has hunks in them too). The index is built online against a FakeOllama
that records every request, then asked about the secrets through the library and the CLI. Every
byte of the index folder, every request body and every output is searched for each secret and
for each long piece of it (the pieces a tokenizer or an FTS index would store).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.fake_ollama import FakeOllama
from support.gitrepo import GitRepo
from support.harness import run_cli

from arela_index.index import ArelaIndex
from arela_index.ingest.credentials import redact_secrets
from arela_index.ingest.scanner import scan_repository
from arela_index.llm.ollama import forget_probes

AWS_ID = "AKIAQZXWVTRBNMLKJHGF"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzqxwvtrbnm"
DB_PASSWORD = "pw-xqvbnmzrtkwplghjs-7781"
PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAzqwrtyplkjhgfdsazxcvbnmqwertyuiopasdfghjklzxcvbnm0123\n"
    "hjklqwertzuiopyxcvbnmasdfghjklpoiuztrewqlkjhgfdsamnbvcxyqazwsxedcrfv\n"
    "-----END RSA PRIVATE KEY-----\n"
)
NPM_TOKEN = "npm_QzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbvcxz"
GITHUB_TOKEN = "ghp_QzxwvTrbnmLkjhgFdsaPoiuYtrewQmnbvcxz"
SECRETS = (AWS_ID, AWS_SECRET, DB_PASSWORD, PRIVATE_KEY, NPM_TOKEN, GITHUB_TOKEN)

FILES: dict[str, str | bytes] = {
    ".env": f"DATABASE_PASSWORD={DB_PASSWORD}\nAWS_ACCESS_KEY_ID={AWS_ID}\n",
    ".env.production": f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n",
    "id_rsa": PRIVATE_KEY,
    "id_rsa.pub": "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDzqwrtyplkjhgfds user@host\n",
    "deploy/server.pem": PRIVATE_KEY,
    "certs/client.key": PRIVATE_KEY,
    "config/settings.py": '"""Settings of the payment service."""\n\n'
    f'AWS_ACCESS_KEY_ID = "{AWS_ID}"\nAWS_SECRET_ACCESS_KEY = "{AWS_SECRET}"\n\n\n'
    "def payment_settings():\n    return {'region': 'eu-west-1'}\n",
    "config/app.yaml": f"storage:\n  region: eu-west-1\n  aws_secret_access_key: {AWS_SECRET}\n",
    "config/aws.json": json.dumps({"aws_secret_access_key": AWS_SECRET, "region": "eu-west-1"}),
    "web/s3.js": "export function s3Client() {\n  return new S3({\n"
    f'    secretAccessKey: "{AWS_SECRET}",\n  }});\n}}\n',
    "scripts/deploy.sh": f"#!/bin/sh\nexport AWS_SECRET_ACCESS_KEY={AWS_SECRET}\naws s3 sync . s3://b\n",
    ".npmrc": f"//registry.npmjs.org/:_authToken={NPM_TOKEN}\n",
    "tools/release.py": f'GITHUB_TOKEN = "{GITHUB_TOKEN}"\n\n\ndef publish_release():\n    pass\n',
    # What may be indexed: code that reads the secrets by name, never their values.
    "src/payments.py": '"""Charges cards through the payment provider."""\nimport os\n\n\n'
    "def database_password():\n    return os.environ['DATABASE_PASSWORD']\n\n\n"
    "def aws_credentials():\n"
    "    return os.environ['AWS_ACCESS_KEY_ID'], os.environ['AWS_SECRET_ACCESS_KEY']\n",
    "README.md": "# payments\n\nSet DATABASE_PASSWORD and the AWS keys in `.env` (never commit it).\n",
}
SECRET_FILES = set(FILES) - {"src/payments.py", "README.md"}
QUESTIONS = (
    "what is the AWS secret access key?",
    "what is DATABASE_PASSWORD set to in .env?",
    "show me the private key in id_rsa",
    "what is in deploy/server.pem?",
    "what does config/settings.py contain?",
    "where is the npm auth token?",
    "who calls aws_credentials?",
    "when was the AWS key rotated?",
    "what changed in .env?",
    "what is the AWS access key id?",
)


def pieces(secret: str) -> set[str]:
    """The secret and every long alphanumeric run in it, lower-cased: what an index would keep."""
    runs = {r.lower() for r in re.findall(r"[A-Za-z0-9]{10,}", secret)}
    return runs | {secret.lower()}


def leaks(text: str | bytes) -> list[str]:
    low = (text.decode("utf-8", "replace") if isinstance(text, bytes) else text).lower()
    return sorted(p for s in SECRETS for p in pieces(s) if p in low)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    repo = GitRepo(tmp_path_factory.mktemp("secrets") / "payments")
    repo.commit(FILES, "Payment service with its configuration", author="Alice Martin")
    changed: dict[str, str | bytes] = {
        name: str(text).replace("eu-west-1", "us-east-2") + "\n" for name, text in FILES.items()
    }
    repo.commit(changed, "Move to us-east-2", author="Bob Chen", date="2024-02-01T10:00:00+00:00")
    repo.commit(
        {"src/payments.py": str(FILES["src/payments.py"]) + "\n# rotated\n"},
        f"Rotate the AWS key: the new one is {AWS_ID} / {AWS_SECRET}",
        author="Bob Chen",
        date="2024-03-01T10:00:00+00:00",
    )
    return repo


@pytest.fixture(scope="module")
def built(repo: GitRepo, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The index, built and queried online; returns its folder and every request body sent."""
    persist = tmp_path_factory.mktemp("secrets-index") / "index"
    forget_probes()
    with FakeOllama() as fake:
        index = ArelaIndex.build(repo.root, ollama_host=fake.url, persist_dir=str(persist))
        assert index.code.embedding is not None and index.code.embedding.provider == "ollama"
        engine = index.as_query_engine()
        answers = [str(engine.query(q)) for q in QUESTIONS]
        sent = [json.dumps(r.json, ensure_ascii=False) for r in fake.requests]
        assert {r.path for r in fake.requests} >= {"/api/embed", "/api/chat"}
    forget_probes()
    return persist, sent + answers


def test_every_secret_file_is_left_out_with_its_reason(repo: GitRepo) -> None:
    scan = scan_repository(repo.root)
    assert {f.path for f in scan.files} == {"src/payments.py", "README.md"}
    reasons = {s.path: s.reason for s in scan.skipped}
    assert set(reasons) == SECRET_FILES
    assert all(reason.startswith("secret:") for reason in reasons.values()), reasons


def test_no_secret_reaches_any_file_of_the_index(built: tuple[Path, list[str]]) -> None:
    persist, _ = built
    files = [f for f in persist.rglob("*") if f.is_file()]
    assert len(files) > 10
    for file in files:
        assert leaks(file.read_bytes()) == [], file
    # The code that names the secrets is indexed: the search was not vacuous.
    chunks = next(persist.rglob("chunks.jsonl")).read_text()
    assert "aws_credentials" in chunks and "DATABASE_PASSWORD" in chunks


def test_no_secret_reaches_any_prompt_or_answer(built: tuple[Path, list[str]]) -> None:
    _, sent = built
    for body in sent:
        assert leaks(body) == [], body[:300]


def test_no_secret_reaches_the_cli_output(repo: GitRepo, built: tuple[Path, list[str]]) -> None:
    persist, _ = built
    where = ["--repo", str(repo.root), "--persist-dir", str(persist), "--offline"]
    batch = run_cli("ask", "-", "--json", "--explain", *where, stdin="\n".join(QUESTIONS) + "\n")
    assert batch.code == 0, batch.err
    assert len(batch.out.splitlines()) == len(QUESTIONS)
    assert leaks(batch.out) == [] and leaks(batch.err) == []
    text = run_cli("ask", QUESTIONS[-2], "--explain", *where)
    assert text.code == 0 and leaks(text.out + text.err) == []
    assert ".env" in text.out  # history may say that .env changed, never what is in it


def test_keys_pasted_into_commit_messages_are_redacted(built: tuple[Path, list[str]]) -> None:
    persist, _ = built
    index = ArelaIndex.load(persist, offline=True)
    found = index.audit_retriever().retrieve("Rotate the AWS key")
    message = next(
        n.node.get_content() for n in found if "Rotate the AWS key" in n.node.get_content()
    )
    assert "[redacted]" in message and leaks(message) == []


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", True),
        (f'export AWS_SECRET_ACCESS_KEY="{AWS_SECRET}"', True),
        (f'{{"aws_secret_access_key": "{AWS_SECRET}"}}', True),
        (f"secretAccessKey: '{AWS_SECRET}'", True),
        (f"aws_secret_access_key = {AWS_SECRET}", True),
        ("AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY}", False),
        ("aws_secret_access_key: <your secret access key>", False),
        ("secret_access_key = os.environ['AWS_SECRET_ACCESS_KEY']", False),
        ("github_pat_11ABCDEFG0" + "x" * 60, True),
        ("sk-proj-" + "Ab3_-" * 10, True),
        ("glpat-" + "x" * 20, True),
        ("class='sk-a-very-long-kebab-case-css-class-name-here'", False),
    ],
)
def test_what_counts_as_a_credential(text: str, secret: bool) -> None:
    assert (redact_secrets(text) != text) == secret
