"""Small repositories with known call graphs, imports and class hierarchies, per language."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from support.gitrepo import GitRepo

from arela_index.indexing.persist import current_build
from arela_index.ingest.scanner import scan_repository
from arela_index.stores.graph import GraphStore

PYTHON = {
    "src/shop/__init__.py": '''"""Shop package."""
from .cart import Cart
from .util import log
''',
    "src/shop/util.py": '''"""Helpers."""


def log(message):
    """Write a message.

    Second line.
    """
    print(message)


def fmt(value):
    return f"{value:.2f}"
''',
    "src/shop/base.py": '''class Model:
    """Base of stored things."""

    def save(self):
        self.validate()
        return persist(self)

    def validate(self):
        return True


def persist(obj):
    from shop.util import log

    log("saved")
    return obj
''',
    "src/shop/cart.py": '''from shop.base import Model
from shop import util
from shop.util import fmt as money


class Item(Model):
    def __init__(self, price):
        self.price = price

    def validate(self):
        return self.price >= 0


class Cart(Model):
    """A basket of items."""

    def __init__(self):
        self.items = []

    def add(self, price):
        item = Item(price)
        item.save()
        self.items.append(item)
        util.log("added")
        return self

    @property
    def total(self):
        return money(sum(i.price for i in self.items))


class Gift(Item):
    def save(self):
        return super().save()
''',
    "src/shop/cli.py": """import shop
from shop.cart import Cart


def main():
    cart = Cart()
    cart.add(3)
    shop.log("done")
    return cart.total


if __name__ == "__main__":
    main()
""",
}

JAVASCRIPT = {
    "lib/util.js": """export function log(msg) {
  console.log(msg);
}

export function fmt(v) {
  return v.toFixed(2);
}
""",
    "lib/model.js": """import { log } from './util';

/** Base of stored things. */
export class Model {
  save() {
    this.validate();
    return persist(this);
  }

  validate() {
    return true;
  }
}

export function persist(obj) {
  log("saved");
  return obj;
}
""",
    "lib/cart.js": """import { Model } from './model';
import * as util from './util';

export class Item extends Model {
  validate() {
    return this.price >= 0;
  }
}

export class Cart extends Model {
  add(price) {
    const item = new Item(price);
    item.save();
    util.log("added");
    return this;
  }
}

export const main = () => {
  const cart = new Cart();
  cart.add(3);
};
""",
}

TYPESCRIPT = {
    "web/shapes.ts": """export interface Shape {
  area(): number;
}

export abstract class Base implements Shape {
  abstract area(): number;

  describe(): string {
    return `area ${this.area()}`;
  }
}

export class Square extends Base {
  constructor(private side: number) {
    super();
  }

  area(): number {
    return square(this.side);
  }
}

export function square(x: number): number {
  return x * x;
}
""",
    "web/main.ts": """import { Square } from "./shapes";

export function run(): string {
  return new Square(2).describe();
}
""",
}

GO = {
    "go.mod": "module example.com/shop\n\ngo 1.21\n",
    "store/store.go": """package store

// Base holds shared behaviour.
type Base struct{}

// Store keeps items.
type Store struct {
	Base
	items []string
}

// Close releases the store.
func (b *Base) Close() error { return nil }

// Save stores an item.
func (s *Store) Save(item string) error {
	s.items = append(s.items, item)
	return s.flush()
}
""",
    "store/flush.go": """package store

func (s *Store) flush() error {
	return Log("flushed")
}

// Log records a message.
func Log(msg string) error {
	return nil
}
""",
    "cmd/main.go": """package main

import (
	"fmt"

	"example.com/shop/store"
)

func main() {
	s := &store.Store{}
	if err := s.Save("x"); err != nil {
		fmt.Println(err)
	}
}
""",
}

JAVA = {
    "src/main/java/com/shop/Saveable.java": """package com.shop;

public interface Saveable {
    void save();
}
""",
    "src/main/java/com/shop/Model.java": """package com.shop;

/** Base of stored things. */
public abstract class Model implements Saveable {
    public void save() {
        validate();
        Store.persist(this);
    }

    protected abstract boolean validate();
}
""",
    "src/main/java/com/shop/Store.java": """package com.shop;

import com.shop.util.Log;

public class Store {
    public static void persist(Model m) {
        Log.info("saved");
    }
}
""",
    "src/main/java/com/shop/util/Log.java": """package com.shop.util;

public class Log {
    public static void info(String msg) {
        System.out.println(msg);
    }
}
""",
    "src/main/java/com/shop/Item.java": """package com.shop;

import com.shop.util.Log;

public class Item extends Model {
    @Override
    protected boolean validate() {
        Log.info("validating");
        return true;
    }
}
""",
}

RUST = {
    "src/lib.rs": """pub mod shapes;

pub fn run() -> f64 {
    let s = shapes::Square::new(2.0);
    s.area()
}
""",
    "src/shapes.rs": """pub trait Shape {
    fn area(&self) -> f64;
}

/// A square.
#[derive(Debug)]
pub struct Square {
    side: f64,
}

impl Square {
    pub fn new(side: f64) -> Self {
        Square { side }
    }
}

impl Shape for Square {
    fn area(&self) -> f64 {
        square(self.side)
    }
}

fn square(x: f64) -> f64 {
    x * x
}
""",
}

C = {
    "src/util.h": "struct point { int x; };\nint helper(int x);\n",
    "src/util.c": '#include "util.h"\n\nint helper(int x) {\n    return x * 2;\n}\n',
    "src/main.c": """#include <stdio.h>
#include "util.h"

static int twice(int v) {
    return helper(v);
}

int main(void) {
    printf("%d", twice(2));
    return 0;
}
""",
}


def line_of(files: dict[str, str], path: str, snippet: str) -> int:
    """1-based line of the first line of `files[path]` containing `snippet`."""
    for number, line in enumerate(files[path].splitlines(), start=1):
        if snippet in line:
            return number
    raise AssertionError(f"{snippet!r} not in {path}")


def build_graph(repo: GitRepo, files: dict[str, str], folder: Path) -> GraphStore:
    repo.commit(dict(files), "fixture")
    return GraphStore.build(scan_repository(repo.root), folder)


def graph_files(persist: Path) -> tuple[list[str], bytes]:
    """The graph table's rows in order (a patched table's pages differ, not its rows) and the
    symbols file of the index in `persist`: what tells two builds' graphs apart."""
    folder = current_build(persist)
    assert folder is not None
    conn = sqlite3.connect(folder / "graph/graph.sqlite")
    try:
        rows = list(conn.iterdump())
    finally:
        conn.close()
    return rows, (folder / "graph/symbols.json").read_bytes()
