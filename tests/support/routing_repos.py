"""The two small repositories the routing question set talks about, built as real git repos.

`taskq` is a Python job queue (scheduler, workers, storage backends, config, a JS dashboard);
`shop` is a TypeScript/Go web shop. Authors, dates and messages are fixed so history
questions ("what did Alice change?", "what changed in March?") have real answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from support.gitrepo import GitRepo

from arela_index.config import ArelaConfig
from arela_index.ingest.scanner import scan_repository
from arela_index.nodes import fresh, make_node
from arela_index.parsing.dispatch import extract_symbols
from arela_index.text.entities import Vocabulary
from arela_index.text.tokens import tokenize

TASKQ_V1 = {
    "README.md": "# taskq\n\nA small job queue: schedule jobs, run them on workers, store them.\n",
    "src/taskq/__init__.py": "from taskq.scheduler import Scheduler\n"
    "from taskq.worker import Worker\n",
    "src/taskq/config.py": '''"""Configuration: defaults, a config file, then environment."""
import os

DEFAULTS = {"workers": 4, "backend": "sqlite", "retry_attempts": 3}


def resolve_envvar(name):
    """The value of TASKQ_<NAME>, or None."""
    return os.environ.get("TASKQ_" + name.upper())


def parse_config(text):
    """Parse `key = value` lines into a dict, on top of DEFAULTS."""
    config = dict(DEFAULTS)
    for line in text.splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            config[key.strip()] = value.strip()
    return config


def load_config(path):
    with open(path) as handle:
        config = parse_config(handle.read())
    for key in config:
        config[key] = resolve_envvar(key) or config[key]
    return config
''',
    "src/taskq/queue.py": '''"""In-memory queues of jobs."""
import heapq


class JobQueue:
    """First in, first out."""

    def __init__(self):
        self._items = []

    def push(self, job):
        self._items.append(job)

    def pop(self):
        return self._items.pop(0)

    def __len__(self):
        return len(self._items)


class PriorityQueue(JobQueue):
    """Lowest priority number first."""

    def push(self, job):
        heapq.heappush(self._items, (job.priority, job))

    def pop(self):
        return heapq.heappop(self._items)[1]
''',
    "src/taskq/scheduler.py": '''"""Due jobs wait in a queue: workers never poll the clock."""
import time

from taskq.queue import PriorityQueue


def parse_cron(expr):
    """Split a five-field cron expression into its fields."""
    fields = expr.split()
    if len(fields) != 5:
        raise ValueError("a cron expression has five fields")
    return fields


class Scheduler:
    def __init__(self, backend):
        self.backend = backend
        self.queue = PriorityQueue()

    def schedule(self, job, cron):
        job.fields = parse_cron(cron)
        self.queue.push(job)
        self.backend.save(job)

    def _next_due(self):
        return self.queue.pop()

    def run_pending(self, worker):
        while len(self.queue):
            worker.handle(self._next_due())
            time.sleep(0)
''',
    "src/taskq/worker.py": '''"""Workers run jobs and retry failures with exponential backoff."""
import time


def retry_with_backoff(fn, attempts=3, base=0.5):
    for attempt in range(attempts):
        try:
            return fn()
        except Exception:
            time.sleep(base * 2 ** attempt)
    raise RuntimeError("job failed after retries")


class Worker:
    def __init__(self, config):
        self.config = config

    def handle(self, job):
        return retry_with_backoff(job.run, self.config["retry_attempts"])

    def run(self, scheduler):
        scheduler.run_pending(self)
''',
    "src/taskq/storage/__init__.py": "",
    "src/taskq/storage/base.py": '''class StorageBackend:
    """Where jobs live between runs. Subclass it and implement save and load."""

    def save(self, job):
        raise NotImplementedError

    def load(self, job_id):
        raise NotImplementedError
''',
    "src/taskq/storage/sqlite_backend.py": """import sqlite3

from taskq.storage.base import StorageBackend


class SqliteBackend(StorageBackend):
    def __init__(self, path):
        self.db = sqlite3.connect(path)

    def save(self, job):
        self.db.execute("insert into jobs values (?, ?)", (job.id, job.payload))

    def load(self, job_id):
        return self.db.execute("select payload from jobs where id = ?", (job_id,)).fetchone()
""",
    "src/taskq/cli.py": """import sys

from taskq.config import load_config
from taskq.scheduler import Scheduler
from taskq.storage.sqlite_backend import SqliteBackend
from taskq.worker import Worker


def main(argv=None):
    config = load_config((argv or sys.argv)[1])
    scheduler = Scheduler(SqliteBackend(config["db"]))
    Worker(config).run(scheduler)
""",
    "docs/adr/0001-use-sqlite.md": "# 1. Use SQLite for job storage\n\nStatus: accepted\n\n"
    "We store jobs in SQLite: no server to run, transactions for free.\n",
    "docs/configuration.md": "# Configuration\n\nSet `workers`, `backend` and `retry_attempts` in "
    "taskq.conf; TASKQ_* environment variables override the file.\n",
    "web/dashboard.js": """export async function fetchStatus(url) {
  const response = await fetch(url);
  return response.json();
}

export function renderJobs(jobs) {
  return jobs.map((job) => `<li>${job.id}</li>`).join("");
}
""",
    "tests/test_scheduler.py": """from taskq.scheduler import parse_cron


def test_parse_cron():
    assert len(parse_cron("* * * * *")) == 5
""",
    "CHANGELOG.md": "# Changelog\n\n## 0.2.0 - 2024-03-20\n\n- Redis backend.\n\n"
    "## 0.1.0 - 2024-02-01\n\n- First release.\n",
}

TASKQ_REDIS = {
    "src/taskq/storage/redis_backend.py": '''import json

from taskq.storage.base import StorageBackend


class RedisBackend(StorageBackend):
    """Jobs as JSON strings under job:<id> keys."""

    def __init__(self, client):
        self.client = client

    def save(self, job):
        self.client.set("job:" + job.id, json.dumps(job.payload))

    def load(self, job_id):
        return json.loads(self.client.get("job:" + job_id))
''',
}

SHOP = {
    "README.md": "# shop\n\nA web shop: cart, checkout, orders, payments.\n",
    "src/cart.ts": """import { Product } from "./catalog";

export class Cart {
  items: Product[] = [];

  addItem(product: Product): void {
    this.items.push(product);
  }

  calculateTotal(): number {
    return applyDiscount(this.items.reduce((sum, p) => sum + p.price, 0));
  }
}

export function applyDiscount(total: number): number {
  return total > 100 ? total * 0.9 : total;
}
""",
    "src/catalog.ts": """export interface Product {
  sku: string;
  price: number;
}

export function findProduct(products: Product[], sku: string): Product | undefined {
  return products.find((p) => p.sku === sku);
}
""",
    "src/checkout.ts": """import { Cart } from "./cart";
import { PaymentGateway, StripeGateway } from "./payments";

export class OrderService {
  constructor(private gateway: PaymentGateway = new StripeGateway()) {}

  checkout(cart: Cart): string {
    const total = cart.calculateTotal();
    return this.gateway.charge(total);
  }
}
""",
    "src/payments.ts": """export abstract class PaymentGateway {
  abstract charge(amount: number): string;
}

export class StripeGateway extends PaymentGateway {
  charge(amount: number): string {
    return `stripe:${amount}`;
  }
}

export class PaypalGateway extends PaymentGateway {
  charge(amount: number): string {
    return `paypal:${amount}`;
  }
}
""",
    "server/main.go": """package main

import "net/http"

func healthHandler(w http.ResponseWriter, r *http.Request) {
	w.Write([]byte("ok"))
}

func main() {
	http.HandleFunc("/health", healthHandler)
	http.ListenAndServe(":8080", nil)
}
""",
}


# (files, message, author, date) commits, and tag names, in order.
TASKQ_HISTORY: list[Any] = [
    (
        TASKQ_V1,
        "Initial scheduler, workers and SQLite storage",
        "Alice Martin",
        "2024-01-15T10:00:00+00:00",
    ),
    (
        {"src/taskq/worker.py": TASKQ_V1["src/taskq/worker.py"].replace("base=0.5", "base=1.0")},
        "Slow down retry backoff: workers hammered the database",
        "Bob Chen",
        "2024-02-10T09:30:00+00:00",
    ),
    "v0.1.0",
    (TASKQ_REDIS, "Add Redis storage backend", "Carol Diaz", "2024-03-18T16:00:00+00:00"),
    (
        {"src/taskq/config.py": TASKQ_V1["src/taskq/config.py"] + "\n# TASKQ_ prefix is fixed\n"},
        "Document the TASKQ_ environment prefix in load_config",
        "Alice Martin",
        "2024-03-25T11:00:00+00:00",
    ),
]
SHOP_HISTORY: list[Any] = [
    (SHOP, "Cart, checkout and Stripe payments", "Dana Okafor", "2024-05-02T08:00:00+00:00"),
    (
        {"src/cart.ts": SHOP["src/cart.ts"].replace("0.9", "0.85")},
        "Bigger discount over 100",
        "Evan Price",
        "2024-06-11T14:00:00+00:00",
    ),
]


def build(root: Path, history: list[Any]) -> GitRepo:
    repo = GitRepo(root)
    for step in history:
        if isinstance(step, str):
            repo.tag(step)
        else:
            files, message, author, date = step
            repo.commit(files, message, author=author, date=date)
    return repo


def build_taskq(root: Path) -> GitRepo:
    """taskq with a short history by three people, the Redis backend arriving in March 2024."""
    return build(root, TASKQ_HISTORY)


def build_shop(root: Path) -> GitRepo:
    return build(root, SHOP_HISTORY)


BUILDERS = {"taskq": build_taskq, "shop": build_shop}


def vocabulary_for(repo: GitRepo, project: str = "") -> Vocabulary:
    """What the memories would know about `repo`: its parsed symbols, paths and commit authors
    (and the project's name, as an index names it by its folder)."""
    scan = scan_repository(repo.root, ArelaConfig())
    symbols = [
        d.qualname for f in scan.files for d in extract_symbols(f, f.read_text()).definitions
    ]
    authors = set(repo.git("log", "--format=%an").split("\n")) - {""}
    paths = [f.path for f in scan.files]
    return Vocabulary(symbols=symbols, paths=paths, authors=authors, project=project)


class KeywordRetriever(BaseRetriever):
    """A small real retriever for router tests: nodes ranked by shared identifier tokens.

    It remembers the queries it was asked, so a test can see the sub-queries a route made.
    """

    def __init__(self, nodes: list[TextNode], top_k: int = 5) -> None:
        super().__init__()
        self.nodes, self.top_k = nodes, top_k
        self.queries: list[str] = []
        self._tokens = [set(tokenize(n.text)) for n in nodes]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.queries.append(query_bundle.query_str)
        asked = set(tokenize(query_bundle.query_str))
        scored = [(len(asked & tokens), i) for i, tokens in enumerate(self._tokens)]
        best = sorted((s for s in scored if s[0] > 0), reverse=True)[: self.top_k]
        top = best[0][0] if best else 1
        return [fresh(self.nodes[i], s / top) for s, i in best]


def memories_for(repo: GitRepo) -> dict[str, KeywordRetriever]:
    """Code (one node per file), graph (one per symbol) and audit (one per commit) memories."""
    scan = scan_repository(repo.root, ArelaConfig())
    code, graph = [], []
    for f in scan.files:
        text = f.read_text()
        code.append(make_node(f"{f.path}\n{text}", memory="code", file_path=f.path, kind="module"))
        for d in extract_symbols(f, text).definitions:
            graph.append(
                make_node(
                    f"{d.qualname} defined in {f.path}",
                    memory="graph",
                    file_path=f.path,
                    symbol=d.qualname,
                    kind="relation",
                )
            )
    log = repo.git("log", "--format=%x1e%H%x1f%an%x1f%aI%x1f%s", "--name-only")
    audit = []
    for block in log.split("\x1e")[1:]:
        head, *files = [line for line in block.strip().split("\n") if line]
        sha, author, date, subject = head.split("\x1f")
        audit.append(
            make_node(
                f"{sha[:7]} {author} {date} {subject}\n" + "\n".join(files),
                memory="audit",
                commit=sha,
                author=author,
                date=date,
                kind="commit",
            )
        )
    return {
        "code": KeywordRetriever(code),
        "graph": KeywordRetriever(graph),
        "audit": KeywordRetriever(audit),
    }
