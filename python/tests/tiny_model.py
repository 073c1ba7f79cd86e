"""A tiny random-weight Llama, built here, for serving end to end without
downloading a model.

`build(directory, template)` writes, from one set of arrays:
- `model.gguf` for llama.cpp, written with the `gguf` package vendored in
  llama.cpp's source (`gguf_py`: the directory holding it);
- the same model as a Hugging Face folder (`config.json`,
  `model.safetensors`, `tokenizer.json`, `tokenizer_config.json` with the
  template as `chat_template`), which is what `vllm serve` takes.

The tokenizer is a byte-level BPE trained in milliseconds on the template's
text (every byte reachable, so any output can be spelled), with the
template's markers (the grammar export's `preserved_tokens`, its start of
turn and end of turn) as special tokens; the end of turn is the EOS, so an
engine stops there. Weights are seeded: one seed, one model. Both forms
are that model: llama.cpp and transformers give the same most likely next
tokens on one prompt (docs/serving.md).

Run as a script to write the folder for a manual try: `python
python/tests/tiny_model.py OUT_DIR TEMPLATE GGUF_PY_DIR`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer, models, pre_tokenizers, trainers, decoders

import chat_autoparser as ca

# Small enough to build and run in well under a second, large enough for
# llama.cpp's kernels (head size 16, a multiple of its block sizes).
HIDDEN, LAYERS, HEADS, FFN, CONTEXT, VOCAB = 64, 2, 4, 128, 2048, 600


def markers(template: ca.ChatTemplate) -> list[str]:
    """The template's special tokens: the markers its grammar exports keep
    whole (`preserved_tokens`) and the end of turn."""
    grammar = template.grammar([{"type": "function", "function": {"name": "f"}}], tool_choice="required")
    return list(dict.fromkeys(grammar["preserved_tokens"] + [end_of_turn(template)]))


def end_of_turn(template: ca.ChatTemplate) -> str:
    """The marker that ends the model's turn (`<|im_end|>`), without the
    text the template writes after it."""
    return template.analyze()["turn"]["stop_marker"]


def train_tokenizer(template: ca.ChatTemplate) -> Tokenizer:
    specials = markers(template)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([template.source], trainer)
    return tok


def weights(n_vocab: int, seed: int) -> dict[str, np.ndarray]:
    """Random Llama weights under their GGUF names, numpy (rows, columns)
    as torch's `nn.Linear` holds them (out, in)."""
    rng = np.random.default_rng(seed)

    def matrix(rows: int, cols: int) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) * 0.5).astype(np.float32)

    out = {"token_embd.weight": matrix(n_vocab, HIDDEN),
           "output_norm.weight": np.ones(HIDDEN, np.float32),
           "output.weight": matrix(n_vocab, HIDDEN)}
    for i in range(LAYERS):
        out.update({
            f"blk.{i}.attn_norm.weight": np.ones(HIDDEN, np.float32),
            f"blk.{i}.attn_q.weight": matrix(HIDDEN, HIDDEN),
            f"blk.{i}.attn_k.weight": matrix(HIDDEN, HIDDEN),
            f"blk.{i}.attn_v.weight": matrix(HIDDEN, HIDDEN),
            f"blk.{i}.attn_output.weight": matrix(HIDDEN, HIDDEN),
            f"blk.{i}.ffn_norm.weight": np.ones(HIDDEN, np.float32),
            f"blk.{i}.ffn_gate.weight": matrix(FFN, HIDDEN),
            f"blk.{i}.ffn_up.weight": matrix(FFN, HIDDEN),
            f"blk.{i}.ffn_down.weight": matrix(HIDDEN, FFN),
        })
    return out


# GGUF tensor names to Hugging Face Llama's. GGUF stores Q and K rows
# permuted for its rotary layout (convert_hf_to_gguf's `permute`): the HF
# copy gets them un-permuted so both folders hold the same model.
HF_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head",
            "attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
            "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
            "ffn_norm": "post_attention_layernorm", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
            "ffn_down": "mlp.down_proj"}


def hf_name(gguf_name: str) -> str:
    parts = gguf_name.removesuffix(".weight").split(".")
    if parts[0] == "blk":
        return f"model.layers.{parts[1]}.{HF_NAMES[parts[2]]}.weight"
    return f"{HF_NAMES[parts[0]]}.weight"


def unpermute(w: np.ndarray) -> np.ndarray:
    """Inverse of convert_hf_to_gguf's rotary permutation of Q/K rows."""
    head = w.shape[0] // HEADS
    return w.reshape(HEADS, head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_gguf(path: Path, tok: Tokenizer, template: ca.ChatTemplate, tensors: dict, gguf_py: Path) -> None:
    sys.path.insert(0, str(gguf_py))
    import gguf  # the copy vendored in llama.cpp's source, matching the engine

    vocab = json.loads(tok.to_str())["model"]
    by_id = sorted(vocab["vocab"].items(), key=lambda kv: kv[1])
    specials = set(markers(template))
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(HIDDEN)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(HIDDEN // HEADS)
    writer.add_vocab_size(len(by_id))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list([t for t, _ in by_id])
    writer.add_token_types([gguf.TokenType.CONTROL if t in specials else gguf.TokenType.NORMAL for t, _ in by_id])
    writer.add_token_merges([" ".join(m) if isinstance(m, list) else m for m in vocab["merges"]])
    writer.add_eos_token_id(vocab["vocab"][end_of_turn(template)])
    writer.add_add_bos_token(False)
    writer.add_chat_template(template.source)
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def write_hf(directory: Path, tok: Tokenizer, template: ca.ChatTemplate, tensors: dict) -> None:
    from safetensors.numpy import save_file

    eos = end_of_turn(template)
    n_vocab = tok.get_vocab_size()
    hf = {}
    for name, array in tensors.items():
        is_qk = name.endswith(("attn_q.weight", "attn_k.weight"))
        hf[hf_name(name)] = unpermute(array) if is_qk else array
    save_file(hf, str(directory / "model.safetensors"), metadata={"format": "pt"})
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN,
              "intermediate_size": FFN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
              "num_key_value_heads": HEADS, "max_position_embeddings": CONTEXT, "rms_norm_eps": 1e-5,
              "vocab_size": n_vocab, "eos_token_id": tok.token_to_id(eos), "bos_token_id": None,
              "tie_word_embeddings": False, "torch_dtype": "float32"}
    (directory / "config.json").write_text(json.dumps(config, indent=1))
    tok.save(str(directory / "tokenizer.json"))
    tokenizer_config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": eos, "bos_token": None,
                        "chat_template": template.source, "model_max_length": CONTEXT}
    (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=1))


def build(directory: Path, template: ca.ChatTemplate, gguf_py: Path, seed: int = 0) -> Path:
    """Writes both forms into `directory`; returns the GGUF's path."""
    directory.mkdir(parents=True, exist_ok=True)
    tok = train_tokenizer(template)
    tensors = weights(tok.get_vocab_size(), seed)
    write_hf(directory, tok, template, tensors)
    write_gguf(directory / "model.gguf", tok, template, tensors, gguf_py)
    return directory / "model.gguf"


if __name__ == "__main__":
    out, template_path, gguf_dir = map(Path, sys.argv[1:4])
    print(build(out, ca.ChatTemplate.from_file(template_path), gguf_dir))
