"""Start llama-cpp-python's OpenAI-compatible server on 127.0.0.1 with the tiny hand-written models."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import gguf

from tests.tiny_gguf import write_tiny_gguf


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaCppServer:
    """`python -m llama_cpp.server --config_file ...` serving three aliases of the tiny bigram model:

    - `tiny`: mean pooling, a 32k context, chat and embeddings (the normal case);
    - `tiny-nopool`: no pooling, so `/v1/embeddings` returns one vector per token;
    - `tiny-short`: a 1,024-token context, so a long prompt is refused.

    The server keeps one model loaded and swaps on demand, so runs should stick to one alias.
    """

    def __init__(self, folder: Path, log_path: Path | None = None) -> None:
        self.folder = folder
        self.port = _free_port()
        self.log_path = log_path or folder / "llama-server.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _config(self) -> dict[str, Any]:
        mean = write_tiny_gguf(self.folder / "tiny-mean.gguf")
        nopool = write_tiny_gguf(self.folder / "tiny-nopool.gguf", pooling=gguf.PoolingType.NONE)
        common = {
            "chat_format": "chatml",
            "embedding": True,
            "n_threads": 1,
            "n_batch": 512,
            "verbose": False,
        }
        return {
            "host": "127.0.0.1",
            "port": self.port,
            "models": [
                {"model": str(mean), "model_alias": "tiny", "n_ctx": 32768, **common},
                {"model": str(nopool), "model_alias": "tiny-nopool", "n_ctx": 2048, **common},
                {"model": str(mean), "model_alias": "tiny-short", "n_ctx": 1024, **common},
            ],
        }

    def start(self, timeout: float = 120.0) -> LlamaCppServer:
        config = self.folder / "llama-server.json"
        config.write_text(json.dumps(self._config(), indent=1))
        log = self.log_path.open("wb")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--config_file", str(config)],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: {self.log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=5) as reply:
                    if reply.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {timeout:g} s")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
