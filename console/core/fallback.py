"""A learned fallback for output no rule reads: a naive Bayes guess at the ``failure_type``.

``classify.classify_event`` asks it only when no rule fired, where it would otherwise answer
``default`` (``agent_failed`` at 0.3). When the model's top probability reaches its threshold the
result carries rule ``model.<type>`` and a low confidence (below every rule's); otherwise the
``default`` result stands unchanged.

The model is a multinomial naive Bayes over binarised tokens (each token counted once per output):
lower-case words (no English stop words), errno names (``econnreset``), exception class names
(``modulenotfounderror``), HTTP status codes (``http_503`` and ``http_5xx``); paths, URLs, quoted
values, hex and numbers are dropped first, so the model learns wordings rather than one project's
names. Evidence is spread over at most ``evidence_cap`` tokens (a long output is not more certain
than a short one), which keeps the probability usable as a threshold; fewer than ``MIN_KNOWN``
known tokens and it does not answer.

Its parameters are integer counts in ``fallback_model.json``, written by ``python -m
bench.train_fallback`` from the corpus's ``dev`` split only (``train`` below is the whole
fitting); the threshold and the settings are chosen there by cross-validation within dev.
Standard library only, deterministic, linear in the text.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

MODEL_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fallback_model.json")
FORMAT = 1
MAX_TOKEN = 40  # a longer run of letters is an identifier or an encoding, not a word
MAX_CODES = 32  # three-digit numbers looked at as HTTP statuses, per output
# It answers only from this many distinct tokens it knows or more: like the rules, it does not
# decide on a bare "error" or two ("Error: command failed" stays the default).
MIN_KNOWN = 4
# A model result's confidence, from its probability: above the default's 0.3, below every rule's (0.5 and up).
MIN_CONFIDENCE, MAX_CONFIDENCE = 0.35, 0.45

# Quoted values: a quote not inside a word ("can't" keeps its apostrophe), closed on the same line.
_QUOTED = re.compile(r"'(?<!\w')[^'\n]{0,200}'(?!\w)|\"[^\"\n]{0,200}\"|`[^`\n]{0,200}`|‘[^‘’\n]{0,200}’|“[^“”\n]{0,200}”")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]{0,15}://[^\s'\"<>()]{0,500}")
_HEX = re.compile(r"(?:0x)?[0-9a-f]+")  # a word of hex digits with a digit in it: an id, a hash, an address
# An HTTP status: a three-digit code after "HTTP/1.1", "status", "error"… or before its reason phrase.
_CODE = re.compile(r"[1-5](?<![\w.][1-5])\d\d(?!\w|\.\d)")
_CODE_BEFORE = re.compile(r"\b(?:https?(?:/[\d.]{1,4})?|status(?: code)?|code|error|response|returned|responded|"
                          r"received|server|got)[ :=(\[#-]{1,3}\Z")
_CODE_AFTER = re.compile(r"[ :-]{1,3}(?:not found|forbidden|unauthori[sz]ed|bad gateway|bad request|service unavailable|"
                         r"gateway time-?out|too many requests|internal server error|conflict|unprocessable|"
                         r"precondition failed|payment required|method not allowed|request timeout|not acceptable|gone\b)")
# English function words: they say nothing about a failure's class (dropping them helps on dev, and the evidence reads better)
STOPWORDS = frozenset("""
a an the and or but if then else of to in on at by for with from as is are was were be been being it its this that these
those there here we you your i me my he she they them their our us do does did done so such than too very can could would
should will shall may might must has have had having not no nor all any both each few more most other some own same only
just also into over under again further once about above below between through during before after up down out off what
which who whom why how when where while
""".split())
_CHUNK = re.compile(r"\w+")
_WORD = re.compile(r"[^\W\d_]+(?:_[^\W\d_]+)*")  # letters, with inner underscores (module_not_found)


def tokens(text: str) -> list[str]:
    """The normalised tokens of an output, in order (repeats kept): lower-case words (no stop
    words), errno and exception class names, ``http_NNN`` / ``http_Nxx``; no paths, URLs, quoted
    values, hex or numbers."""
    text = text.lower()
    out = []
    for n, m in enumerate(_CODE.finditer(text)):
        if n == MAX_CODES:
            break
        start, end = m.span()
        if _CODE_BEFORE.search(text, max(0, start - 24), start) or _CODE_AFTER.match(text, end, end + 40):
            out += [f"http_{m.group()}", f"http_{m.group()[0]}xx"]
    text = _QUOTED.sub(" ", text)
    if "://" in text:
        text = _URL.sub(" ", text)
    # a path is any run of non-space characters holding a slash or a backslash (C:\x\y, /usr/lib, a/b.js)
    text = " ".join(chunk for chunk in text.split() if "/" not in chunk and "\\" not in chunk)
    add = out.append
    for chunk in _CHUNK.findall(text):
        if chunk.isalpha():
            if 1 < len(chunk) <= MAX_TOKEN and chunk not in STOPWORDS:
                add(chunk)
        elif not _HEX.fullmatch(chunk):  # (not alphabetic: a word of hex digits holds a digit, and is dropped)
            out += [w for w in _WORD.findall(chunk) if 1 < len(w) <= MAX_TOKEN and w not in STOPWORDS]
    return out


@dataclass(frozen=True, slots=True)
class Guess:
    """The model's reading of one output."""

    failure_type: str
    probability: float
    threshold: float
    drivers: tuple[str, ...]  # the tokens that favoured this type most, strongest first

    @property
    def confident(self) -> bool:
        return self.probability >= self.threshold

    @property
    def confidence(self) -> float:
        """MIN_CONFIDENCE at the threshold, rising with the probability to MAX_CONFIDENCE at 1."""
        span = (self.probability - self.threshold) / (1.0 - self.threshold) if self.threshold < 1.0 else 0.0
        return round(MIN_CONFIDENCE + (MAX_CONFIDENCE - MIN_CONFIDENCE) * min(1.0, max(0.0, span)), 2)

    @property
    def matched(self) -> str:
        return f"p={self.probability:.2f}"

    def evidence(self) -> str:
        said = ", ".join(f"'{t}'" for t in self.drivers) if self.drivers else "none stands out"
        return (f"model: tokens {said} (p {self.probability:.2f} >= threshold {self.threshold:.2f}; "
                f"no rule matched, a guess at low confidence)")


class Model:
    """A trained model: ``Model(params)`` with the mapping ``train`` returns (or the JSON file holds)."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        if params.get("format") != FORMAT:
            raise ValueError(f"fallback model format {params.get('format')!r}, expected {FORMAT}")
        self.params = params
        self.classes: tuple[str, ...] = tuple(params["classes"])
        self.threshold = float(params["threshold"])
        self.cap = int(params["evidence_cap"])
        self.min_known = int(params["min_known"])
        alpha = float(params["alpha"])
        vocab = params["tokens"]
        size = len(vocab)
        totals = params["class_tokens"]
        docs = params["class_docs"]
        n_docs = sum(docs)
        k = len(self.classes)
        self.log_prior = [math.log((docs[i] + 1) / (n_docs + k)) for i in range(k)]
        denominators = [math.log(totals[i] + alpha * size) for i in range(k)]
        self.unseen = [math.log(alpha) - denominators[i] for i in range(k)]
        self.loglik: dict[str, list[float]] = {}
        for token, counts in vocab.items():
            row = list(self.unseen)
            for index, count in counts.items():
                i = int(index)
                row[i] = math.log(count + alpha) - denominators[i]
            self.loglik[token] = row
        self.row_sum = {token: sum(row) for token, row in self.loglik.items()}

    def scores(self, toks: Iterable[str]) -> tuple[list[float], list[str]]:
        """Per class, the posterior probability; and the known tokens it read (each once, in order)."""
        known = list(dict.fromkeys(t for t in toks if t in self.loglik))
        total = [sum(column) for column in zip(*(self.loglik[t] for t in known))] or [0.0] * len(self.classes)
        k = len(self.classes)
        scale = min(1.0, self.cap / len(known)) if known else 1.0
        logits = [self.log_prior[i] + scale * total[i] for i in range(k)]
        top = max(logits)
        exps = [math.exp(x - top) for x in logits]
        norm = sum(exps)
        return [e / norm for e in exps], known

    def guess(self, text: str | None = None, *, toks: Sequence[str] | None = None) -> Guess | None:
        """The most probable type, its probability and the three tokens that drove it most;
        ``None`` when the output holds fewer than ``min_known`` tokens the model knows."""
        probs, known = self.scores(tokens(text or "") if toks is None else toks)
        if not known or len(known) < self.min_known:
            return None
        best = max(range(len(self.classes)), key=lambda i: (probs[i], -i))
        k, loglik, row_sum = len(self.classes), self.loglik, self.row_sum
        # a token's lift: how much more it says `best` than the other types on average (times k - 1)
        ranked = sorted(((row_sum[t] - k * loglik[t][best], t) for t in known))
        drivers = tuple(t for score, t in ranked[:3] if score < 0)
        return Guess(self.classes[best], round(probs[best], 4), self.threshold, drivers)


@lru_cache(maxsize=1)
def model(path: str = MODEL_PATH) -> Model | None:
    """The shipped model, read once; ``None`` if the file is missing or not a model."""
    try:
        with open(path, encoding="utf-8") as fh:
            return Model(json.load(fh))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def consult(text: str) -> Guess | None:
    """The shipped model's guess for an output no rule matched, when it reaches the threshold."""
    m = model()
    guess = m.guess(text) if m is not None else None
    return guess if guess is not None and guess.confident else None


# --- fitting (python -m bench.train_fallback) ----------------------------------------------

def train(docs: Sequence[tuple[Sequence[str], str]], classes: Sequence[str], *, alpha: float = 0.5,
          vocab_size: int = 3000, min_docs: int = 2, evidence_cap: int = 20, min_known: int = MIN_KNOWN,
          threshold: float = 0.5) -> dict[str, Any]:
    """Fit on (tokens, failure_type) pairs: binarised token counts per class, pruned to the
    ``vocab_size`` tokens with the highest information gain among those in ``min_docs`` outputs or more."""
    classes = list(classes)
    index = {c: i for i, c in enumerate(classes)}
    df: dict[str, Counter] = {}
    class_docs = [0] * len(classes)
    for toks, label in docs:
        i = index[label]
        class_docs[i] += 1
        for t in set(toks):
            df.setdefault(t, Counter())[i] += 1
    n = len(docs)
    prior_entropy = _entropy(class_docs, n)
    gains = []
    for t, counts in df.items():
        present = sum(counts.values())
        if present < min_docs:
            continue
        absent = [class_docs[i] - counts[i] for i in range(len(classes))]
        with_t = [counts[i] for i in range(len(classes))]
        gain = prior_entropy - (present / n) * _entropy(with_t, present) - ((n - present) / n) * _entropy(absent, n - present)
        gains.append((-round(gain, 12), t))
    gains.sort()
    kept = sorted(t for _g, t in gains[:vocab_size])
    vocab = {t: {str(i): c for i, c in sorted(df[t].items())} for t in kept}
    class_tokens = [0] * len(classes)
    for t in kept:
        for i, c in df[t].items():
            class_tokens[i] += c
    return {"format": FORMAT, "classes": classes, "alpha": alpha, "evidence_cap": evidence_cap,
            "min_known": min_known, "threshold": threshold, "class_docs": class_docs, "class_tokens": class_tokens, "tokens": vocab}


def _entropy(counts: Sequence[int], n: int) -> float:
    return -sum(c / n * math.log(c / n) for c in counts if c) if n else 0.0
