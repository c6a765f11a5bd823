"""Write a tiny llama-architecture GGUF model by hand: a bigram table over a byte-level vocabulary.

No download and no training. Every attention and MLP block writes zeros into the residual stream, so the
hidden state at a position is the embedding of the token there; the embeddings are one-hot, so after the
final RMS norm the output matrix reads one column of a bigram table: the logits depend only on the last
token. The table is chosen so that greedy decoding is short and ends:

- plain text: after a newline (the end of a chatml prompt) the model writes "ok." and then end-of-text;
- under a JSON grammar (a server's tool call or JSON mode) the allowed token with the highest logit is
  taken: a quote first (strings stay empty), then closing brackets, so objects and arrays close as soon as
  the grammar lets them; after "}" the end-of-text token ranks first, so a finished object stops.

With mean pooling, `/v1/embeddings` returns the normalised byte histogram of the text (plus the BOS
token): crude, but real vectors whose similarity follows shared characters.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

UNK, BOS, EOS = 0, 1, 2
N_SPECIAL = 3
N_VOCAB = N_SPECIAL + 256
N_EMBD = 272  # >= N_VOCAB: one embedding dimension per token
HEAD_DIM = 8  # tiny attention: its cost grows with context length squared
N_FF = 16


def byte_token(char: str) -> int:
    """The token id of a one-byte character."""
    code = char.encode("utf-8")
    assert len(code) == 1, char
    return N_SPECIAL + code[0]


# Preference order shared by every row of the table (first = highest logit), before per-token tweaks.
_DEFAULT_ORDER = ['"', "}", "]", "{", "[", ",", ":", "0", "1", "2", "t", "f", "n", " ", "o", "k", "."]
# Per previous token: the token that ranks first after it.
_NEXT: dict[str, str | int] = {"\n": "o", "o": "k", "k": ".", ".": EOS, "}": EOS}


def bigram_logits() -> np.ndarray:
    """logits[prev, next]: the table the model computes (rows: previous token, columns: next token)."""
    base = np.full(N_VOCAB, -10.0, dtype=np.float32)
    base[EOS] = -20.0  # the end of text only when a row prefers it (or a grammar leaves nothing else)
    for rank, char in enumerate(_DEFAULT_ORDER):
        base[byte_token(char)] = 10.0 - 0.5 * rank
    table = np.tile(base, (N_VOCAB, 1))
    for prev, nxt in _NEXT.items():
        col = nxt if isinstance(nxt, int) else byte_token(nxt)
        table[byte_token(prev), col] = 20.0
    return table


def write_tiny_gguf(
    path: Path, *, pooling: gguf.PoolingType = gguf.PoolingType.MEAN, n_ctx_train: int = 32768
) -> Path:
    """Write the model to `path`; `pooling` sets how `/v1/embeddings` pools the per-token states."""
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("mem0bench-tiny-bigram")
    writer.add_context_length(n_ctx_train)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(1)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(1)
    writer.add_head_count_kv(1)
    writer.add_key_length(HEAD_DIM)
    writer.add_value_length(HEAD_DIM)
    writer.add_rope_dimension_count(HEAD_DIM)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_pooling_type(pooling)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)

    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [
        gguf.TokenType.BYTE
    ] * 256
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * N_VOCAB)
    writer.add_token_types(types)
    writer.add_unk_token_id(UNK)
    writer.add_bos_token_id(BOS)
    writer.add_eos_token_id(EOS)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)

    f32 = np.float32
    embd = np.zeros((N_VOCAB, N_EMBD), dtype=f32)
    embd[np.arange(N_VOCAB), np.arange(N_VOCAB)] = 1.0
    # After RMS norm a one-hot row becomes sqrt(N_EMBD) at its index: scale the table back down.
    output = np.zeros((N_VOCAB, N_EMBD), dtype=f32)
    output[:, :N_VOCAB] = bigram_logits().T / np.sqrt(N_EMBD)
    qkv = HEAD_DIM
    tensors = {
        "token_embd.weight": embd,
        "output_norm.weight": np.ones(N_EMBD, dtype=f32),
        "output.weight": output,
        "blk.0.attn_norm.weight": np.ones(N_EMBD, dtype=f32),
        "blk.0.attn_q.weight": np.zeros((qkv, N_EMBD), dtype=f32),
        "blk.0.attn_k.weight": np.zeros((qkv, N_EMBD), dtype=f32),
        "blk.0.attn_v.weight": np.zeros((qkv, N_EMBD), dtype=f32),
        "blk.0.attn_output.weight": np.zeros((N_EMBD, qkv), dtype=f32),  # attention adds nothing
        "blk.0.ffn_norm.weight": np.ones(N_EMBD, dtype=f32),
        "blk.0.ffn_gate.weight": np.zeros((N_FF, N_EMBD), dtype=f32),
        "blk.0.ffn_up.weight": np.zeros((N_FF, N_EMBD), dtype=f32),
        "blk.0.ffn_down.weight": np.zeros((N_EMBD, N_FF), dtype=f32),  # nor does the MLP
    }
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
