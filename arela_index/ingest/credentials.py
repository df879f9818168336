"""What counts as a credential: by a file's name, in a file's content, in text indexed whatever
it holds (commit messages, decision records).

A file named like a secret is never opened; a file whose content holds a credential is left out
whole, but for a password in a URL, redacted in place (`REDACTED_IN_FILES`); other text has each
credential replaced by `[redacted]` (a private key block from its BEGIN line to its END line, or
to the end of the text when the END line is missing).

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
from typing import Any

# File names whose content is never opened.
SECRET_NAME = re.compile(
    r"""^(\.env(\..*)?|.*\.env|\.envrc|id_(rsa|dsa|ecdsa|ed25519)(\.pub)?|.*\.(pem|key|p12|pfx|jks|keystore|
    crt|cer|der|p8|ppk|kdbx|asc|gpg|keytab|tfstate|tfstate\.backup)|\.netrc|\.pypirc|\.npmrc|\.dockercfg|
    \.git-credentials|\.pgpass|\.my\.cnf|\.s3cfg|credentials(\.(json|ya?ml|ini|toml|xml|csv))?|
    secrets?\.(json|ya?ml|toml|ini|env)|\.htpasswd|service[-_]account.*\.json)$""",
    re.I | re.X,
)

_PRIVATE_KEY = r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"


@dataclass(frozen=True)
class Rule:
    """One kind of credential: its pattern, the group that is the secret itself (0: the whole
    match), whether it must start a word (`bounded`: no letter or digit before it, `_` allowed)
    and an optional check of the secret.

    `gates` are patterns searched in the lower-cased text first, each starting with literal
    characters; the rule runs only where one is found. A rule without gates starts with literal
    characters itself and is its own gate: Python's `re` skips to a literal start byte by byte
    (3 GB/s), while a pattern starting with a class or a lookbehind tries every position.
    A file's bytes are searched by a rule of `re.I` (written in lower case) in their lower-cased
    copy without it: the same matches, at a sixth of the cost. `holds`: characters every match
    holds, rare in code; a text lacking one is not searched (a character is found at memchr
    speed, five times `re`'s)."""

    name: str
    pattern: str
    gates: tuple[str, ...] = ()
    group: int = 0
    check: Callable[[str], bool] | None = None
    bounded: bool = False
    flags: int = 0
    holds: str = ""


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


def _assigned(name: str) -> str:
    """A gate: `name`, up to 20 more name characters, an assignment and an opening quote."""
    return name + r"[\w.-]{0,20}?[\"']?\s*(?::=|=>|\?=|[:=])\s*[\"'`]"


def _family(prefix: str, members: dict[str, str]) -> str:
    """One pattern for the credentials that share a literal first character or more: one scan
    of a file finds them all. Each member is a named group; a match is reported under its name."""
    groups = "|".join(f"(?P<{name.replace('-', '_')}>{rest})" for name, rest in members.items())
    return f"{re.escape(prefix)}(?:{groups})"


_NO_MORE = r"(?![A-Za-z0-9])"
RULES: tuple[Rule, ...] = (
    Rule("private-key", _PRIVATE_KEY, holds="KVY"),
    Rule(
        "A",
        _family(
            "A",
            {
                "aws-access-key-id": r"(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}" + _NO_MORE,
                "google-api-key": r"Iza[0-9A-Za-z_\-]{35}(?![A-Za-z0-9_\-])",
                "azure-storage-key": r"ccountKey=[A-Za-z0-9+/]{40,}",
                "age-secret-key": r"GE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
            },
        ),
        bounded=True,
    ),
    # Written under its name in any case or quoting (env, shell, YAML, INI, JSON, a JS object);
    # exactly 40 base64 characters, so `${AWS_SECRET_ACCESS_KEY}` or `<your key>` do not count.
    Rule(
        "aws-secret-access-key",
        r"(?i:(?:aws_?)?secret_?access_?key)[\"']?\s*[=:]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        gates=("secret",),
        group=1,
    ),
    Rule(
        "g",
        _family(
            "g",
            {
                "github-token": r"h[pousr]_[A-Za-z0-9]{36}" + _NO_MORE,
                "github-fine-grained-token": r"ithub_pat_[A-Za-z0-9_]{60,}",
                "gitlab-token": r"l(?:pat|dt|rt|ptt|soat|cbt)-[A-Za-z0-9_\-]{20,}",
            },
        ),
        bounded=True,
    ),
    Rule(
        "x",
        _family(
            "x",
            {
                "slack-token": r"ox[abposre]-[A-Za-z0-9-]{10,}",
                "slack-app-token": r"app-\d-[A-Z0-9]+-\d+-[a-z0-9]+",
            },
        ),
        bounded=True,
    ),
    Rule(
        "h",
        _family(
            "h",
            {
                "slack-webhook": r"ooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_+/-]{20,}",
                "huggingface-token": r"f_[A-Za-z]{34}" + _NO_MORE,
            },
        ),
        bounded=True,
    ),
    Rule(
        "s",
        _family(
            "s",
            {
                "stripe-secret-key": r"k_(?:live|test|prod)_[A-Za-z0-9]{10,99}" + _NO_MORE,
                "openai-anthropic-key": r"k-(?:[A-Za-z0-9]{32,}|(?:proj|ant|svcacct|admin)-[A-Za-z0-9_\-]{32,})",
                "shopify-token": r"hp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _NO_MORE,
            },
        ),
        bounded=True,
    ),
    Rule(
        "d",
        _family(
            "d",
            {
                "discord-webhook": r"iscord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{60,}",
                "databricks-token": r"api[a-f0-9]{32}(?:-\d)?" + _NO_MORE,
                "digitalocean-token": r"o[opr]_v1_[a-f0-9]{64}" + _NO_MORE,
            },
        ),
        bounded=True,
    ),
    Rule("npm-token", r"npm_[A-Za-z0-9]{36}" + _NO_MORE, bounded=True),
    Rule("pypi-token", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}", holds="EIH"),
    Rule(
        "jwt",
        r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*",
        bounded=True,
        holds="J",
    ),
    Rule(
        "sendgrid-key",
        r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])",
        bounded=True,
        holds="SG",
    ),
    # scheme://user:password@host, as database, queue and mail URLs are written.
    Rule(
        "password-in-url",
        r"://[^\s:/@'\"`<>]{1,64}:([^\s:/@'\"`<>]{1,128})@[A-Za-z0-9.\-\[]",
        group=1,
        check=_real_password,
    ),
    # A quoted value assigned to a name that says it is secret: Terraform's `secret_key = "..."`,
    # `"client_secret": "..."`, `password => '...'`.
    Rule(
        "secret-assignment",
        r"(?:secret|passw(?:or)?d|token|api[_-]?key|access[_-]?key|private[_-]?key|auth[_-]?key)s?"
        + _NOT_SECRET_NAME
        + r"[\w.-]{0,20}?[\"']?\s*(?::=|=>|\?=|[:=])\s*([\"'`])([^\s\"'`]{10,200})\1",
        gates=tuple(_assigned(name) for name in ("secret", "passw", "token", "key")),
        group=2,
        check=_random_value,
        flags=re.I,
    ),
)  # fmt: skip
# What `secret_rules_in` reports: each rule's name, or its members' for a family.
RULE_NAMES = tuple(
    name.replace("_", "-")
    for rule in RULES
    for name in (re.findall(r"\(\?P<(\w+)>", rule.pattern) or [rule.name])
)

REDACTED = "[redacted]"
# In text that is indexed anyway, a private key goes from its BEGIN line to its END line, base64
# body and headers included, or to the end of the text when its END line is missing.
_KEY_BLOCK = re.compile(
    _PRIVATE_KEY + r".*?(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S
)
_AWS_KEY_ID = re.compile(r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}")
_BASE64_40 = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


class _Compiled:
    """A rule's patterns for text and for bytes."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.text = re.compile(rule.pattern, rule.flags)
        # Bytes fold ASCII alone, as `bytes.lower` does: a lower-case pattern finds in the
        # lower-cased bytes what it finds with `re.I` in the bytes, at the same places.
        self.folded = bool(rule.flags & re.I)
        if self.folded and rule.pattern != rule.pattern.lower():
            raise ValueError(f"rule {rule.name}: a pattern of re.I is written in lower case")
        self.bytes = re.compile(rule.pattern.encode("ascii"), rule.flags & ~re.I)
        self.gates = tuple(re.compile(g) for g in rule.gates)
        self.byte_gates = tuple(re.compile(g.encode("ascii")) for g in rule.gates)
        self.byte_holds = tuple(c.encode("ascii") for c in rule.holds)

    def found(self, match: re.Match[Any], whole: Any) -> bool:
        """Whether a match is a credential: at a word's start when it must be, and passing
        the rule's check."""
        if (
            self.rule.bounded
            and match.start()
            and whole[match.start() - 1 : match.start()].isalnum()
        ):
            return False
        if self.rule.check is None:
            return True
        value = whole[slice(*match.span(self.rule.group))]  # `whole`'s case, where folded
        return self.rule.check(
            value if isinstance(value, str) else value.decode("ascii", "replace")
        )


# Credentials a file's text loses to `[redacted]` (`redact_in_file`) instead of the file being
# left out: a password in a URL is the one rule docs and docstrings match by example
# (`postgresql://scott:tiger@localhost/test`, `user:pass@host`), and a library's core modules
# that show how to connect would otherwise be missing from its index.
REDACTED_IN_FILES = frozenset({"password-in-url"})


_COMPILED = tuple(_Compiled(rule) for rule in RULES)
_IN_FILES = tuple(c for c in _COMPILED if c.rule.name in REDACTED_IN_FILES)


def holds_secret(data: bytes, ignore: frozenset[str] = frozenset()) -> str | None:
    """The name of the first rule a file's content matches, or None; rules named in `ignore`
    are not searched.

    >>> holds_secret(b'aws_key = "AKIAQZXWVTRBNMLKJHGF"')
    'aws-access-key-id'
    >>> holds_secret(b'url = "postgres://scott:tiger@db/test"', ignore=REDACTED_IN_FILES) is None
    True
    """
    lower: bytes | None = None
    passed: dict[re.Pattern[bytes], bool] = {}  # gates shared by rules are searched once
    for compiled in _COMPILED:
        if compiled.rule.name in ignore:
            continue
        if compiled.byte_holds and not all(c in data for c in compiled.byte_holds):
            continue
        searched = data
        if compiled.byte_gates or compiled.folded:
            lower = data.lower() if lower is None else lower
            if compiled.byte_gates and not any(
                _passes(gate, lower, passed) for gate in compiled.byte_gates
            ):
                continue
            searched = lower if compiled.folded else data
        for match in compiled.bytes.finditer(searched):
            if compiled.found(match, data):
                return _name(match, compiled)
    return None


def _passes(gate: re.Pattern[bytes], lower: bytes, passed: dict[re.Pattern[bytes], bool]) -> bool:
    if gate not in passed:
        passed[gate] = gate.search(lower) is not None
    return passed[gate]


def _name(match: re.Match[Any], compiled: _Compiled) -> str:
    member = match.lastgroup
    return member.replace("_", "-") if member else compiled.rule.name


def _searched(text: str) -> list[_Compiled]:
    """The rules whose gates `text` passes."""
    lower = text.lower()
    return [
        c
        for c in _COMPILED
        if all(h in text for h in c.rule.holds)
        and (not c.gates or any(g.search(lower) for g in c.gates))
    ]


def secret_rules_in(text: str) -> list[str]:
    """The names of the rules `text` matches (what `redact_secrets` would blank out)."""
    return list(
        dict.fromkeys(
            _name(m, c) for c in _searched(text) for m in c.text.finditer(text) if c.found(m, text)
        )
    )


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
    if "PRIVATE KEY" in text:
        text = _KEY_BLOCK.sub(REDACTED, text)
    if _AWS_KEY_ID.search(text):
        text = "\n".join(
            _BASE64_40.sub(REDACTED, line) if _AWS_KEY_ID.search(line) else line
            for line in text.split("\n")
        )
    for compiled in _searched(text):
        text = compiled.text.sub(functools.partial(_blanked, compiled=compiled, whole=text), text)
    return text


def redact_in_file(text: str) -> str:
    """A file's text with the credentials of `REDACTED_IN_FILES` replaced by `[redacted]` (a
    file holding any other credential is left out whole); its lines stay where they were.

    >>> redact_in_file('engine = create_engine("postgresql://scott:tiger@localhost/test")')
    'engine = create_engine("postgresql://scott:[redacted]@localhost/test")'
    """
    for compiled in _IN_FILES:
        if not compiled.gates or any(g.search(text.lower()) for g in compiled.gates):
            text = compiled.text.sub(
                functools.partial(_blanked, compiled=compiled, whole=text), text
            )
    return text


def _blanked(match: re.Match[str], compiled: _Compiled, whole: str) -> str:
    if not compiled.found(match, whole):
        return match.group(0)
    start, end = match.span(compiled.rule.group)
    offset = match.start()
    return match.group(0)[: start - offset] + REDACTED + match.group(0)[end - offset :]
