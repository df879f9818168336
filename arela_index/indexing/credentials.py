"""What counts as a credential: by a file's name, in a file's content, in text indexed whatever
it holds (commit messages, decision records).

A file named like a secret is never opened; a file whose content holds a credential is left out
whole; other text has each credential replaced by `[redacted]` (a private key block from its BEGIN
line to its END line, or to the end of the text when the END line is missing).

The rules cover the credentials that announce themselves (a fixed prefix or shape: the common
rules of gitleaks' default set, written here) and a few that only their name gives away (an AWS
secret key, a quoted password or token assigned to a name that says so, a URL carrying a
password). Word boundaries are `(?<![A-Za-z0-9])`, not `\\b`: `AWS_KEY_AKIA...` and
`my_ghp_...` must match after their `_`. Each rule names the lower-case literals one of which
every match holds: a text holding none of a rule's is never searched by it, which keeps the cost
of a scan near that of reading the files.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

# File names whose content is never opened.
SECRET_NAME = re.compile(
    r"""^(\.env(\..*)?|.*\.env|\.envrc|id_(rsa|dsa|ecdsa|ed25519)(\.pub)?|.*\.(pem|key|p12|pfx|jks|keystore|
    crt|cer|der|p8|ppk|kdbx|asc|gpg|keytab|tfstate|tfstate\.backup)|\.netrc|\.pypirc|\.npmrc|\.dockercfg|
    \.git-credentials|\.pgpass|\.my\.cnf|\.s3cfg|credentials(\.(json|ya?ml|ini|toml|xml|csv))?|
    secrets?\.(json|ya?ml|toml|ini|env)|\.htpasswd|service[-_]account.*\.json)$""",
    re.I | re.X,
)

_B = r"(?<![A-Za-z0-9])"  # a word boundary that also holds after "_"
_E = r"(?![A-Za-z0-9])"
_PRIVATE_KEY = r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"


@dataclass(frozen=True)
class Rule:
    """One kind of credential: its pattern, the literals every match holds (lower case), the
    group that is the secret itself (0: the whole match) and an optional check of a match."""

    name: str
    pattern: str
    hints: tuple[str, ...]
    group: int = 0
    check: Callable[[str], bool] | None = None
    flags: int = 0


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


# Values that stand for a secret without being one: templates, variables, elided examples.
_PLACEHOLDER = re.compile(
    r"^[*x.]+$|^\$\w+$|\$\{|\{\{|%\(|%s|<[^>]*>|^\[[^\]]*\]$|changeme|change_me|placeholder"
    r"|example|dummy|redacted|your[_-]",
    re.I,
)


def _real_password(value: str) -> bool:
    """A URL's password that is not a variable or a placeholder."""
    return not _PLACEHOLDER.search(value)


def _random_value(value: str) -> bool:
    """A quoted value assigned to a secret's name that looks generated: ten characters or more,
    letters and digits, spread out (3 bits a character: `aaaa1111bb` is not), and not a
    placeholder, a path, a URL or code."""
    if len(value) < 10 or _PLACEHOLDER.search(value) or _entropy(value) < 3.0:
        return False
    if "://" in value or re.search(r"[()\[\]{}<>$]|\.[a-z]{2,4}$|^[./~]", value):
        return False
    # Generated secrets hold digits (40 random base64 characters hold none once in a thousand);
    # names, dotted keys and sentences do not.
    return any(c.isalpha() for c in value) and any(c.isdigit() for c in value)


# A name that holds a secret's word but names something else: `token_url`, `secret_name`, ...
_NOT_SECRET_NAME = (
    r"(?![\w.-]{0,20}?(?:path|file|url|uri|endpoint|name|id|type|header|field|env|var|len|length"
    r"|size|prefix|format|kind|mode|method|class|hasher|hash|algorithm|label|version)"
    r"[\"']?\s*(?::=|=>|\?=|[:=]))"
)

RULES: tuple[Rule, ...] = (
    Rule("private-key", _PRIVATE_KEY, ("private key",)),
    Rule(
        "aws-access-key-id",
        _B + r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}" + _E,
        ("a3t", "akia", "asia", "abia", "acca"),
    ),
    # Written under its name in any case or quoting (env, shell, YAML, INI, JSON, a JS object);
    # exactly 40 base64 characters, so `${AWS_SECRET_ACCESS_KEY}` or `<your key>` do not count.
    Rule(
        "aws-secret-access-key",
        r"(?i:(?:aws_?)?secret_?access_?key)[\"']?\s*[=:]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        ("secret",),
        group=1,
    ),
    Rule("github-token", _B + r"gh[pousr]_[A-Za-z0-9]{36}" + _E, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    Rule("github-fine-grained-token", _B + r"github_pat_[A-Za-z0-9_]{60,}", ("github_pat_",)),
    Rule(
        "gitlab-token",
        _B + r"gl(?:pat|dt|rt|ptt|soat|cbt)-[A-Za-z0-9_\-]{20,}",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glsoat-", "glcbt-"),
    ),
    Rule("slack-token", _B + r"xox[abposre]-[A-Za-z0-9-]{10,}", ("xox",)),
    Rule("slack-app-token", _B + r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+", ("xapp-",)),
    Rule(
        "slack-webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_+/-]{20,}",
        ("hooks.slack.com",),
    ),
    Rule(
        "discord-webhook",
        r"discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{60,}",
        ("/api/webhooks/",),
    ),
    Rule(
        "stripe-key",
        _B + r"(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,99}" + _E,
        ("sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"),
    ),
    Rule("google-api-key", _B + r"AIza[0-9A-Za-z_\-]{35}(?![A-Za-z0-9_\-])", ("aiza",)),
    Rule(
        "openai-anthropic-key",
        _B + r"sk-(?:[A-Za-z0-9]{32,}|(?:proj|ant|svcacct|admin)-[A-Za-z0-9_\-]{32,})",
        ("sk-",),
    ),
    Rule("npm-token", _B + r"npm_[A-Za-z0-9]{36}" + _E, ("npm_",)),
    Rule("pypi-token", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}", ("pypi-ageichlwas5vcmc",)),
    Rule(
        "jwt",
        _B + r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*",
        ("eyj",),
    ),
    Rule("sendgrid-key", _B + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])", ("sg.",)),
    Rule("mailchimp-key", _B + r"[0-9a-f]{32}-us[0-9]{1,2}" + _E, ("-us",)),
    Rule(
        "shopify-token",
        _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _E,
        ("shpat_", "shpca_", "shppa_", "shpss_"),
    ),
    Rule("huggingface-token", _B + r"(?:hf|api_org)_[A-Za-z]{34}" + _E, ("hf_", "api_org_")),
    Rule(
        "digitalocean-token",
        _B + r"do[opr]_v1_[a-f0-9]{64}" + _E,
        ("doo_v1_", "dop_v1_", "dor_v1_"),
    ),
    Rule("databricks-token", _B + r"dapi[a-f0-9]{32}(?:-\d)?" + _E, ("dapi",)),
    Rule("terraform-cloud-token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}", ("atlasv1",)),
    Rule("heroku-key", _B + r"HRKU-AA[0-9A-Za-z_-]{58}", ("hrku-aa",)),
    Rule("age-secret-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", ("age-secret-key-1",)),
    Rule("azure-storage-key", r"AccountKey=[A-Za-z0-9+/]{40,}", ("accountkey=",)),
    # scheme://user:password@host, as database, queue and mail URLs are written.
    Rule(
        "password-in-url",
        _B + r"[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@'\"`<>]{1,64}:([^\s:/@'\"`<>]{1,128})@[A-Za-z0-9.\-\[]",
        ("://",),
        group=1,
        check=_real_password,
    ),
    # A quoted value assigned to a name that says it is secret: Terraform's `secret_key = "..."`,
    # `"client_secret": "..."`, `password => '...'`.
    Rule(
        "secret-assignment",
        r"(?:secret|passw(?:or)?d|pwd|token|api[_-]?key|access[_-]?key|private[_-]?key"
        r"|auth[_-]?key|credentials?)s?"
        + _NOT_SECRET_NAME
        + r"[\w.-]{0,20}?[\"']?\s*(?::=|=>|\?=|[:=])\s*([\"'`])([^\s\"'`]{10,200})\1",
        ("secret", "passw", "pwd", "token", "apikey", "api_key", "api-key", "accesskey",
         "access_key", "access-key", "privatekey", "private_key", "private-key", "authkey",
         "auth_key", "auth-key", "credential"),
        group=2,
        check=_random_value,
        flags=re.I,
    ),
)  # fmt: skip

REDACTED = "[redacted]"
# In text that is indexed anyway, a private key goes from its BEGIN line to its END line, base64
# body and headers included, or to the end of the text when its END line is missing.
_KEY_BLOCK = re.compile(
    _PRIVATE_KEY + r".*?(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S
)
_AWS_KEY_ID = re.compile(RULES[1].pattern)
_BASE64_40 = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


class _Compiled:
    """A rule's pattern for text and for bytes."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.text = re.compile(rule.pattern, rule.flags)
        self.bytes = re.compile(rule.pattern.encode("ascii"), rule.flags)
        self.hints = rule.hints
        self.byte_hints = tuple(h.encode("ascii") for h in rule.hints)

    def found(self, value: str) -> bool:
        return self.rule.check is None or self.rule.check(value)


_COMPILED = tuple(_Compiled(rule) for rule in RULES)


def holds_secret(data: bytes) -> str | None:
    """The name of the first rule a file's content matches, or None.

    >>> holds_secret(b'aws_key = "AKIAQZXWVTRBNMLKJHGF"')
    'aws-access-key-id'
    """
    lower = data.lower()
    for compiled in _COMPILED:
        if not any(hint in lower for hint in compiled.byte_hints):
            continue
        for match in compiled.bytes.finditer(data):
            value = match.group(compiled.rule.group).decode("ascii", "replace")
            if compiled.found(value):
                return compiled.rule.name
    return None


def secret_rules_in(text: str) -> list[str]:
    """The names of the rules `text` matches (what `redact_secrets` would blank out)."""
    lower = text.lower()
    return [
        c.rule.name
        for c in _COMPILED
        if any(h in lower for h in c.hints)
        and any(c.found(m.group(c.rule.group)) for m in c.text.finditer(text))
    ]


def redact_secrets(text: str) -> str:
    """`text` with anything that looks like a private key or a credential replaced by
    `[redacted]`, for text that is indexed whatever it holds (commit messages, decision records).
    A line that names an AWS key id also loses its 40-character base64 words: the secret key
    pasted beside it.

    >>> redact_secrets("Rotate the key to AKIAQZXWVTRBNMLKJHGF")
    'Rotate the key to [redacted]'
    >>> redact_secrets("db: postgres://app:s3cret@db.internal/app")
    'db: postgres://app:[redacted]@db.internal/app'
    """
    lower = text.lower()
    if "private key" in lower:
        text = _KEY_BLOCK.sub(REDACTED, text)
        lower = text.lower()
    if any(h in lower for h in RULES[1].hints) and _AWS_KEY_ID.search(text):
        text = "\n".join(
            _BASE64_40.sub(REDACTED, line) if _AWS_KEY_ID.search(line) else line
            for line in text.split("\n")
        )
    for compiled in _COMPILED:
        if any(hint in lower for hint in compiled.hints):
            text = compiled.text.sub(functools.partial(_blanked, compiled=compiled), text)
    return text


def _blanked(match: re.Match[str], compiled: _Compiled) -> str:
    group = compiled.rule.group
    if not compiled.found(match.group(group)):
        return match.group(0)
    start, end = match.span(group)
    whole = match.group(0)
    offset = match.start()
    return whole[: start - offset] + REDACTED + whole[end - offset :]
